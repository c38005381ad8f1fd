//! `streamgauge capture ctl`: the control API from the command line.

use std::path::PathBuf;

use ::capture::daemon::ctl::{self, CtlOptions, Request};
use anyhow::Result;
use clap::{Args, Subcommand};

pub const LONG_ABOUT: &str = include_str!("../../help/capture-ctl.txt");

/// Arguments of `streamgauge capture ctl`.
#[derive(Debug, Args)]
pub struct CtlArgs {
    /// The daemon's control API (its `listen`), URL or HOST:PORT.
    #[arg(
        long,
        value_name = "URL",
        default_value = "https://127.0.0.1:7300",
        env = "STREAMGAUGE_CAPTURE_URL"
    )]
    pub url: String,
    /// Bearer token from the daemon's token file.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "STREAMGAUGE_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// Read the token from this token file (its first line with a plain token).
    #[arg(
        long,
        value_name = "FILE",
        env = "STREAMGAUGE_TOKEN_FILE",
        conflicts_with = "token"
    )]
    pub token_file: Option<PathBuf>,
    /// SHA-256 fingerprint of the daemon's certificate (AB:CD:… or hex), as it printed it.
    #[arg(long, value_name = "SHA256", env = "STREAMGAUGE_CAPTURE_FINGERPRINT")]
    pub fingerprint: Option<String>,
    /// The daemon's certificate (PEM): pin the certificate in this file.
    #[arg(long, value_name = "FILE", conflicts_with = "fingerprint")]
    pub cert: Option<PathBuf>,
    /// Verify the daemon's certificate against the CA certificates in this PEM file.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["fingerprint", "cert"])]
    pub ca_file: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// Control actions.
#[derive(Debug, Clone, Subcommand)]
pub enum Action {
    /// Interfaces (with link speed), features, limits and policy of the node.
    Capabilities,
    /// Create a session from a JSON session configuration file (state: created).
    Create {
        /// The session configuration (JSON, see docs/capture.md).
        file: PathBuf,
        /// Experiment (domain) the session belongs to [default: the session name].
        #[arg(long, value_name = "NAME")]
        experiment: Option<String>,
        /// Upload closed files to these archive targets of the daemon (comma-separated).
        #[arg(long, value_name = "T1,T2")]
        archive: Option<String>,
    },
    /// List the sessions this token may see.
    List,
    /// A session's configuration, state and counters.
    Show {
        /// Session id.
        id: String,
    },
    /// A session's state and counters.
    Status {
        /// Session id.
        id: String,
    },
    /// A session's recent log lines.
    Log {
        /// Session id.
        id: String,
    },
    /// Start capturing.
    Start {
        /// Session id.
        id: String,
    },
    /// Stop handing packets to the session (files stay open).
    Pause {
        /// Session id.
        id: String,
    },
    /// Hand packets to a paused session again.
    Resume {
        /// Session id.
        id: String,
    },
    /// Stop: files closed with their metadata, final counters kept.
    Stop {
        /// Session id.
        id: String,
    },
    /// Stop if needed and forget the session (its files stay on the node).
    Delete {
        /// Session id.
        id: String,
    },
    /// The files a session produced.
    Files {
        /// Session id.
        id: String,
    },
    /// Download one file of a session.
    Download {
        /// Session id.
        id: String,
        /// File name (see `files`).
        name: String,
        /// Where to write it [default: the file name, in the current directory].
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// Sends the request and prints the answer.
pub fn run(args: &CtlArgs) -> Result<bool> {
    let options = CtlOptions {
        url: args.url.clone(),
        token: args.token.clone(),
        token_file: args.token_file.clone(),
        fingerprint: args.fingerprint.clone(),
        cert: args.cert.clone(),
        ca_file: args.ca_file.clone(),
    };
    let request = match args.action.clone() {
        Action::Capabilities => Request::Capabilities,
        Action::Create {
            file,
            experiment,
            archive,
        } => Request::Create(file, experiment, archive),
        Action::List => Request::List,
        Action::Show { id } => Request::Get(id, ""),
        Action::Status { id } => Request::Get(id, "/status"),
        Action::Log { id } => Request::Get(id, "/log"),
        Action::Files { id } => Request::Get(id, "/files"),
        Action::Start { id } => Request::Post(id, "/start"),
        Action::Pause { id } => Request::Post(id, "/pause"),
        Action::Resume { id } => Request::Post(id, "/resume"),
        Action::Stop { id } => Request::Post(id, "/stop"),
        Action::Delete { id } => Request::Delete(id),
        Action::Download { id, name, output } => Request::Download(id, name, output),
    };
    let body = ctl::send(&options.client()?, &request)?;
    print!("{body}");
    if !body.ends_with('\n') {
        println!();
    }
    Ok(true)
}
