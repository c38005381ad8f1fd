//! `streamgauge capture --read FILE --session S.json --key NAME=FILE`:
//! session files and named keys, run over a capture file with
//! [`run_file`], and the summary printed afterwards.

use std::path::{Path, PathBuf};

use crate::config::{ConfigError, SessionConfig};
use crate::cryptopan::{Key, KeyError};
use crate::offline::{run_file, OfflineError, RunSummary};
use crate::session::SessionEnv;

/// Why an offline run over files could not be done.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// A session file could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
    /// A session file is not a valid session configuration.
    #[error("{}", path.display())]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: ConfigError,
    },
    /// A `--key NAME=FILE` could not be read.
    #[error("key {name} ({file})")]
    Key {
        /// The key's name.
        name: String,
        /// Its file.
        file: String,
        /// What is wrong.
        #[source]
        source: KeyError,
    },
    /// The keys and sessions given do not fit together; says what to give.
    #[error("{0}")]
    Invalid(String),
    /// The run itself failed.
    #[error(transparent)]
    Run(#[from] OfflineError),
}

/// Reads a session file: TOML by its extension, JSON otherwise.
pub fn load_session(path: &Path) -> Result<SessionConfig, FilesError> {
    let text = std::fs::read_to_string(path).map_err(|source| FilesError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let cfg = if path.extension().is_some_and(|e| e == "toml") {
        SessionConfig::from_toml(&text)
    } else {
        SessionConfig::from_json(&text)
    };
    cfg.map_err(|source| FilesError::Config {
        path: path.to_path_buf(),
        source,
    })
}

/// Runs the sessions of `session_files` over `input`, writing under `out`
/// (default: the current directory); `keys` are `NAME=FILE`, and every
/// anonymising session must name the same one.
pub fn run_files(
    input: &Path,
    session_files: &[PathBuf],
    out: Option<&Path>,
    keys: &[String],
) -> Result<RunSummary, FilesError> {
    let configs = session_files
        .iter()
        .map(|p| load_session(p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut named = Vec::new();
    for k in keys {
        let Some((name, file)) = k.split_once('=') else {
            return Err(FilesError::Invalid(format!("--key {k:?}: want NAME=FILE")));
        };
        let loaded = Key::from_file(Path::new(file)).map_err(|source| FilesError::Key {
            name: name.to_owned(),
            file: file.to_owned(),
            source,
        })?;
        named.push((name.to_string(), loaded));
    }
    // A run has one key: every anonymising session must name the same one.
    let mut key = None;
    for c in &configs {
        if let Some(a) = &c.anonymization {
            match named.iter().find(|(n, _)| *n == a.key) {
                Some((_, k)) => key = Some(k.clone()),
                None => {
                    return Err(FilesError::Invalid(format!(
                        "session {} names anonymisation key {:?}: give it with --key {}=FILE",
                        c.name, a.key, a.key
                    )))
                }
            }
        }
    }
    let names: std::collections::BTreeSet<_> = configs
        .iter()
        .filter_map(|c| c.anonymization.as_ref().map(|a| a.key.clone()))
        .collect();
    if names.len() > 1 {
        return Err(FilesError::Invalid(format!(
            "sessions name different keys {names:?}: run them separately"
        )));
    }
    let env = SessionEnv {
        data_dir: out.map_or_else(|| PathBuf::from("."), Path::to_path_buf),
        source: input.display().to_string(),
        key,
        closed: None,
        flows: None,
    };
    Ok(run_file(input, configs, &env)?)
}

impl RunSummary {
    /// The summary lines: the file's packets, bytes and duration, then
    /// one line of counters per session.
    pub fn report(&self, input: &Path) -> String {
        let mut s = format!(
            "{}: link type {}, {} packets, {} bytes, {:.3} s\n",
            input.display(),
            self.link,
            self.packets,
            self.bytes,
            self.last_ns.saturating_sub(self.first_ns) as f64 / 1e9
        );
        for (name, c) in &self.sessions {
            s.push_str(&format!(
                "session {name}: matched {} sampled_out {} stored {} bytes {} written {} dropped_by_us {} flows_exported {}\n",
                c.matched, c.sampled_out, c.stored, c.bytes, c.written, c.dropped_by_us, c.flows_exported
            ));
        }
        s
    }
}
