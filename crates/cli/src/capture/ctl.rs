//! `streamgauge capture ctl`: the control API from the command line.

use std::path::PathBuf;

use ::capture::daemon::ctl::CtlClient;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};

pub const LONG_ABOUT: &str = "\
Talk to a running capture daemon over its HTTP/JSON control API and print
its JSON answers. Every request needs a token: --token (or
STREAMGAUGE_TOKEN), or --token-file with the daemon's token file (the one
it created on its first start, DATA_DIR/.control/tokens, or yours). A
token sees and controls only the sessions of the experiments its line
grants 'read' on. A session belongs to the experiment given at creation
(--experiment, default the session name).

The daemon speaks HTTPS unless started with plain_http: give the SHA-256
fingerprint it printed at its first start (--fingerprint), its
certificate file (--cert), or the CA that issued its certificate
(--ca-file).

Examples:
    streamgauge capture ctl --cert /var/lib/streamgauge/capture/.control/tls/cert.pem \\
        --token-file /var/lib/streamgauge/capture/.control/tokens capabilities
    streamgauge capture ctl capabilities
    streamgauge capture ctl create exp42.json --experiment lab1
    streamgauge capture ctl start exp42
    streamgauge capture ctl status exp42
    streamgauge capture ctl files exp42
    streamgauge capture ctl download exp42 exp42_000001_20260101T000000Z.pcap -o x.pcap
    streamgauge capture ctl stop exp42";

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
#[derive(Debug, Subcommand)]
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

/// The bearer token: `--token`, or the one in `--token-file`.
fn token(args: &CtlArgs) -> Result<Option<String>> {
    match &args.token_file {
        None => Ok(args.token.clone()),
        Some(path) => {
            let t = httpkit::token_init::own_token(path).context("--token-file")?;
            t.map(Some).with_context(|| {
                format!(
                    "--token-file {}: no line with a plain token",
                    path.display()
                )
            })
        }
    }
}

/// How the daemon's certificate is verified.
fn tls(args: &CtlArgs) -> Result<Option<httpkit::tls::ClientTls>> {
    use httpkit::tls::{ClientTls, Fingerprint};
    if let Some(fp) = &args.fingerprint {
        let pin = Fingerprint::parse(fp).with_context(|| {
            format!("--fingerprint {fp:?}: want 64 hex digits, with or without ':'")
        })?;
        return Ok(Some(ClientTls::pinned(pin)));
    }
    if let Some(cert) = &args.cert {
        let pin = httpkit::tls::fingerprint_of_file(cert).context("--cert")?;
        return Ok(Some(ClientTls::pinned(pin)));
    }
    if let Some(ca) = &args.ca_file {
        return Ok(Some(ClientTls::ca_file(ca).context("--ca-file")?));
    }
    if args.url.starts_with("https://") {
        anyhow::bail!(
            "{} is HTTPS: give the daemon's certificate fingerprint (--fingerprint, printed at its \
             first start), its certificate (--cert DATA_DIR/.control/tls/cert.pem) or --ca-file",
            args.url
        );
    }
    Ok(None)
}

/// Sends the request and prints the answer.
pub fn run(args: &CtlArgs) -> Result<bool> {
    let c = CtlClient::new(&args.url, token(args)?).with_tls(tls(args)?);
    let s = |id: &str, what: &str| format!("/api/v1/sessions/{id}{what}");
    let body = match &args.action {
        Action::Capabilities => c.get("/api/v1/capabilities")?,
        Action::Create {
            file,
            experiment,
            archive,
        } => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("reading {}", file.display()))?;
            let mut params = Vec::new();
            if let Some(e) = experiment {
                params.push(format!("experiment={e}"));
            }
            if let Some(a) = archive {
                params.push(format!("archive={a}"));
            }
            let q = if params.is_empty() {
                String::new()
            } else {
                format!("?{}", params.join("&"))
            };
            c.post(&format!("/api/v1/sessions{q}"), &text)?
        }
        Action::List => c.get("/api/v1/sessions")?,
        Action::Show { id } => c.get(&s(id, ""))?,
        Action::Status { id } => c.get(&s(id, "/status"))?,
        Action::Log { id } => c.get(&s(id, "/log"))?,
        Action::Start { id } => c.post(&s(id, "/start"), "{}")?,
        Action::Pause { id } => c.post(&s(id, "/pause"), "{}")?,
        Action::Resume { id } => c.post(&s(id, "/resume"), "{}")?,
        Action::Stop { id } => c.post(&s(id, "/stop"), "{}")?,
        Action::Delete { id } => c.delete(&s(id, ""))?,
        Action::Files { id } => c.get(&s(id, "/files"))?,
        Action::Download { id, name, output } => {
            let bytes = c.get_bytes(&s(id, &format!("/files/{name}")))?;
            let path = output.clone().unwrap_or_else(|| PathBuf::from(name));
            std::fs::write(&path, &bytes).with_context(|| format!("writing {}", path.display()))?;
            format!("{} bytes written to {}", bytes.len(), path.display())
        }
    };
    print!("{body}");
    if !body.ends_with('\n') {
        println!();
    }
    Ok(true)
}
