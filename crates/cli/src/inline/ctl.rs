//! `streamgauge inline ctl`: read or change a running program's maps.

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use inline::{ProgramMaps, Role, Settings};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum RoleArg {
    Source,
    Sink,
}

/// Arguments of `streamgauge inline ctl`.
#[derive(Debug, Args)]
#[command(after_help = super::keys_help())]
pub struct CtlArgs {
    /// Interface the program is attached to.
    #[arg(long, value_name = "IFACE")]
    dev: String,
    /// Which program.
    #[arg(long, value_enum, default_value = "source")]
    role: RoleArg,
    /// Network namespace of the interface.
    #[arg(long, value_name = "NAME")]
    netns: Option<String>,
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// Print the settings (as KEY=VALUE) and counters.
    Show,
    /// Change settings; they apply from the next packet.
    Set {
        /// KEY=VALUE pairs.
        #[arg(required = true)]
        pairs: Vec<String>,
    },
}

pub fn run(args: &CtlArgs) -> Result<bool> {
    if let Some(ns) = &args.netns {
        inline::netns::enter(ns)?;
    }
    let role = match args.role {
        RoleArg::Source => Role::Source,
        RoleArg::Sink => Role::Sink,
    };
    let maps = ProgramMaps::find(&args.dev, role)?;
    let mut settings = Settings::from_config(&maps.config()?);
    if let Action::Set { pairs } = &args.action {
        settings.set_all(pairs.iter().map(String::as_str))?;
        maps.set_config(&settings.to_config())?;
    }
    for (k, v) in settings.to_pairs() {
        println!("{k}={v}");
    }
    for (k, v) in maps.counters()?.named(role) {
        println!("counter.{k}={v}");
    }
    Ok(true)
}
