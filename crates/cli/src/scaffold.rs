//! `streamgauge scaffold`: application description → instrumentation code
//! (an oml2-scaffold replacement that needs no Ruby), and `convert`
//! between the Ruby-dialect and TOML forms of a description.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use scaffold::gen::Output;
use scaffold::run::Generate;
use scaffold::{Error, IntAlias};

pub const LONG_ABOUT: &str = include_str!("../help/scaffold.txt");

/// Arguments of `streamgauge scaffold`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ScaffoldArgs {
    /// `convert`, or nothing to generate code.
    #[command(subcommand)]
    pub command: Option<ScaffoldCommand>,
    /// Code generation flags.
    #[command(flatten)]
    pub generate: GenerateArgs,
}

/// Subcommands of `streamgauge scaffold`.
#[derive(Debug, Subcommand)]
pub enum ScaffoldCommand {
    /// Rewrite a description in the other form (APP.rb → APP.toml, APP.toml → APP.rb).
    Convert(ConvertArgs),
}

/// Arguments of `streamgauge scaffold convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Description to read (.rb, or .toml).
    #[arg(value_name = "FILE")]
    pub input: PathBuf,
    /// File to write; its extension chooses the form (default: FILE with the other extension).
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Replace OUT if it exists.
    #[arg(short, long)]
    pub force: bool,
}

/// Flags of code generation (those of oml2-scaffold, plus --python, --rust, --from-db).
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Application description (APP.rb, or APP.toml).
    #[arg(value_name = "APP_FILE", conflicts_with_all = ["app", "from_db"])]
    pub app_file: Option<PathBuf>,
    /// Write APP_oml.h: measurement point declarations and typed injection helpers.
    #[arg(long)]
    pub oml: bool,
    /// Write APP_popt.h: the application's options (properties) for popt.
    #[arg(long)]
    pub opts: bool,
    /// Write APP.c (an example main) and config.h; kept unless --force.
    #[arg(long)]
    pub main: bool,
    /// Write a Makefile for the application; kept unless --force.
    #[arg(long)]
    pub make: bool,
    /// Write APP_oml.py: a class per measurement point and argparse options, over the streamgauge Python package.
    #[arg(long)]
    pub python: bool,
    /// Write APP_oml.rs: a struct per measurement point with a typed inject, and clap options (needs the client, omsp and clap crates).
    #[arg(long)]
    pub rust: bool,
    /// Write NAME.rb, a skeleton description to edit (uri $USER:app:NAME); kept unless --force.
    #[arg(short = 'a', long = "app", value_name = "NAME")]
    pub app: Option<String>,
    /// Write APP.rb describing the measurement tables of an OML SQLite database (plus any other output requested).
    #[arg(long, value_name = "FILE.sq3", conflicts_with = "app")]
    pub from_db: Option<PathBuf>,
    /// Replace the main, config.h, Makefile and descriptions if they exist.
    #[arg(short, long)]
    pub force: bool,
    /// Make :int and :integer the deprecated C long (OML_LONG_VALUE).
    #[arg(short, long, conflicts_with = "int32")]
    pub long: bool,
    /// Make :int and :integer int32 (the default).
    #[arg(short, long)]
    pub int32: bool,
    /// Folder to write into.
    #[arg(short = 'C', long, value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
}

impl From<&GenerateArgs> for Generate {
    fn from(g: &GenerateArgs) -> Self {
        let outputs = [
            (g.oml, Output::OmlHeader),
            (g.opts, Output::PoptHeader),
            (g.main, Output::Main),
            (g.make, Output::Makefile),
            (g.python, Output::Python),
            (g.rust, Output::Rust),
        ];
        Generate {
            app_file: g.app_file.clone(),
            outputs: outputs
                .into_iter()
                .filter_map(|(on, o)| on.then_some(o))
                .collect(),
            app: g.app.clone(),
            from_db: g.from_db.clone(),
            force: g.force,
            int_alias: if g.long {
                IntAlias::Long
            } else {
                IntAlias::Int32
            },
            dir: g.dir.clone(),
            user: std::env::var("USER").unwrap_or_else(|_| "user".into()),
        }
    }
}

/// Runs the subcommand: Ok(false) for a description or overwrite refusal.
pub fn run(args: &ScaffoldArgs) -> Result<bool> {
    let warn = |w| eprintln!("{w}");
    let outcome = match &args.command {
        Some(ScaffoldCommand::Convert(c)) => {
            scaffold::run::convert(&c.input, c.output.clone(), c.force, warn)
        }
        None => {
            let g = Generate::from(&args.generate);
            if let Err(usage) = g.check() {
                bail!("{usage}");
            }
            scaffold::run::generate(&g, warn)
        }
    };
    match outcome {
        Ok(written) => {
            for p in written {
                eprintln!("streamgauge scaffold: wrote {}", p.display());
            }
            Ok(true)
        }
        Err(e @ (Error::Description(_) | Error::Exists { .. })) => {
            eprintln!("{e}");
            eprintln!("streamgauge scaffold: nothing written");
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}
