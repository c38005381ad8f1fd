//! The glue to the Rust client library: the only module that names
//! `client::` items. Everything C-specific (pointers, argv, return codes)
//! stays outside; everything here is safe Rust.

use std::time::SystemTime;

use client::config::args::{self, Outcome};
use client::spec::{ClientSpec, Window};
use client::ClientError;
use omsp::{OmlType, ValueRef};

/// What `omlc_init` should do after reading the options.
pub(crate) enum Init {
    /// Measure with this specification.
    Run(ClientSpec),
    /// `--oml-noop`: a client that accepts everything and sends nothing.
    Noop(ClientSpec),
    /// `--oml-help`: print this and exit.
    Help(String),
    /// `--oml-list-filters`: print this and exit.
    ListFilters(String),
}

/// Reads the `--oml-*` options out of `argv` (removing them) and the
/// `OML_*` environment variables. Returns the outcome and warnings to log.
pub(crate) fn parse_options(
    app: &str,
    argv: &mut Vec<String>,
) -> Result<(Init, Vec<String>), String> {
    let env = |name: &str| std::env::var(name).ok();
    let stamp = client::config::utc_timestamp(SystemTime::now());
    let parsed = args::parse(app, argv, &env, &stamp).map_err(|e| e.to_string())?;
    let init = match parsed.outcome {
        Outcome::Run(spec) => Init::Run(spec),
        Outcome::Noop => Init::Noop(ClientSpec {
            app: args::app_name(app).map_err(|e| e.to_string())?,
            noop: true,
            ..ClientSpec::default()
        }),
        Outcome::Help(text) => Init::Help(text),
        Outcome::ListFilters => Init::ListFilters(filter_list()),
    };
    Ok((init, parsed.warnings))
}

/// The `--oml-list-filters` text: one filter per line with its outputs.
fn filter_list() -> String {
    let mut out = String::from("OML filters available:\n");
    for f in filters::catalogue() {
        out.push_str(&format!("\t{:<10} {}\n", f.name, f.outputs));
    }
    out
}

/// How `omlc_start` failed.
pub(crate) struct StartError {
    /// The liboml2 return code: −1 configuration, −3 destination/thread.
    pub(crate) code: i32,
    /// What to log.
    pub(crate) message: String,
}

/// Why an inject failed.
pub(crate) enum InjectError {
    /// Before start or after close (expected misuse; logged quietly).
    NotRunning(&'static str),
    /// Anything else.
    Other(String),
}

/// A running (or configured) client.
pub(crate) struct Runtime {
    client: client::Client,
    /// The default window, for the informational `OmlMStream` fields.
    window: Window,
}

impl Runtime {
    /// A client for `spec` (no I/O yet).
    pub(crate) fn new(spec: ClientSpec) -> Result<Runtime, String> {
        let window = spec.default_window;
        let client = client::Client::new(spec).map_err(|e| e.to_string())?;
        Ok(Runtime { client, window })
    }

    /// `(samples, interval seconds)` of a default stream.
    pub(crate) fn window(&self) -> (i64, f64) {
        match self.window {
            Window::PerSample => (1, 0.0),
            Window::Samples(n) => (n, 0.0),
            Window::Interval(d) => (0, d.as_secs_f64()),
        }
    }

    /// Defines a measurement point.
    pub(crate) fn add_mp(
        &self,
        name: &str,
        fields: &[(&str, OmlType)],
    ) -> Result<MpHandle, String> {
        self.client
            .add_mp(name, fields)
            .map(MpHandle)
            .map_err(|e| e.to_string())
    }

    /// Starts streaming.
    pub(crate) fn start(&self) -> Result<(), StartError> {
        self.client.start().map_err(|e| StartError {
            code: match e {
                ClientError::Destination { .. } | ClientError::Spawn { .. } => -3,
                _ => -1,
            },
            message: e.to_string(),
        })
    }

    /// Experiment-level metadata (subject `.`).
    pub(crate) fn inject_metadata(&self, key: &str, value: &str) -> Result<(), String> {
        self.client
            .inject_metadata(key, value)
            .map_err(|e| e.to_string())
    }

    /// Flushes and stops; returns a one-line summary of losses, if any.
    pub(crate) fn close(&self) -> Option<String> {
        if let Err(e) = self.client.close() {
            return Some(e.to_string());
        }
        let stats = self.client.stats();
        let lost: u64 =
            stats.dropped_at_inject + stats.destinations.iter().map(|d| d.dropped).sum::<u64>();
        (lost > 0).then(|| format!("{lost} samples were dropped (see _client_instrumentation)"))
    }

    /// `domain d, sender s`, for the start message.
    pub(crate) fn describe(&self) -> String {
        format!(
            "domain {}, sender {}",
            self.client.domain(),
            self.client.sender_id()
        )
    }
}

/// One measurement point.
pub(crate) struct MpHandle(client::Mp);

impl MpHandle {
    /// Injects one sample (values already in the MP's field types).
    #[inline]
    pub(crate) fn inject(&self, values: &[ValueRef<'_>]) -> Result<(), InjectError> {
        self.0.inject(values).map_err(|e| match e {
            ClientError::NotStarted => InjectError::NotRunning("before omlc_start"),
            ClientError::Closed => InjectError::NotRunning("after omlc_close"),
            other => InjectError::Other(other.to_string()),
        })
    }

    /// Metadata about this MP's stream or one of its fields.
    pub(crate) fn inject_metadata(
        &self,
        key: &str,
        value: &str,
        field: Option<&str>,
    ) -> Result<(), String> {
        self.0
            .inject_metadata(key, value, field)
            .map_err(|e| e.to_string())
    }
}
