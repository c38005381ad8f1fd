//! `streamgauge inline ctl`: read or change a running program's maps.

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use inline::Role;

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
    let role = match args.role {
        RoleArg::Source => Role::Source,
        RoleArg::Sink => Role::Sink,
    };
    let set = match &args.action {
        Action::Set { pairs } => Some(pairs.as_slice()),
        Action::Show => None,
    };
    for line in inline::run::ctl(&args.dev, role, args.netns.as_deref(), set)? {
        println!("{line}");
    }
    Ok(true)
}
