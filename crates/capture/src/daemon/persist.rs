//! Sessions survive the daemon: each session's record (experiment,
//! configuration, archive targets, state, reason, counters at its last
//! state change) is kept as `data_dir/.sessions/<id>.json`, rewritten
//! atomically (temporary file, fsync, rename) on every state change and
//! removed when the session is deleted. The directory's leading dot keeps
//! it apart from session directories (session names cannot start with a
//! dot) and out of file listings.

use super::registry::{Record, State};
use crate::config::SessionConfig;
use crate::counters::Counters;
use crate::linktype::LinkType;
use serde::{Deserialize, Serialize};
use std::fs::DirBuilder;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One session as stored on disk.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Saved {
    /// The session's experiment.
    pub experiment: String,
    /// The accepted configuration.
    pub config: SessionConfig,
    /// State at the last change (`running` or `paused` after a crash: the
    /// daemon ended while it captured).
    pub state: State,
    /// Reason of the last transition.
    pub reason: Option<String>,
    /// Creation time (seconds since the epoch).
    pub created_unix_s: u64,
    /// Archive targets of its files.
    #[serde(default)]
    pub archive: Vec<String>,
    /// Counters at the last state change (final ones for stopped sessions).
    #[serde(default)]
    pub counters: Counters,
    /// LINKTYPE_* number of its source, once it started (absent in files
    /// of daemons that did not keep it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_type: Option<u32>,
}

impl Saved {
    /// The stored form of a record.
    pub fn of(r: &Record) -> Saved {
        Saved {
            experiment: r.experiment.clone(),
            config: r.config.clone(),
            state: r.state,
            reason: r.reason.clone(),
            created_unix_s: r
                .created
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            archive: r.archive.clone(),
            counters: r.counters,
            link_type: r.link.map(LinkType::number),
        }
    }

    /// A record in the state that was stored (log restarts empty).
    pub fn record(&self) -> Record {
        let mut r = Record::new(self.experiment.clone(), self.config.clone());
        r.state = self.state;
        r.reason = self.reason.clone();
        r.counters = self.counters;
        r.link = self.link_type.and_then(|n| LinkType::from_number(n).ok());
        r.archive = self.archive.clone();
        r.created = UNIX_EPOCH + Duration::from_secs(self.created_unix_s);
        r
    }
}

/// The directory of saved sessions.
#[derive(Debug)]
pub struct Store {
    /// `data_dir/.sessions`.
    dir: PathBuf,
}

impl Store {
    /// Creates `data_dir/.sessions` (0700) if needed.
    pub fn open(data_dir: &Path) -> std::io::Result<Store> {
        let dir = data_dir.join(".sessions");
        DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
        Ok(Store { dir })
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// The flow checkpoint of `id` ([`crate::checkpoint`]).
    pub fn flows_path(&self, id: &str) -> PathBuf {
        flows_path(self.dir.parent().unwrap_or(&self.dir), id)
    }

    /// Writes the record of `id` atomically.
    pub fn save(&self, id: &str, r: &Record) -> std::io::Result<()> {
        let body = serde_json::to_vec_pretty(&Saved::of(r)).map_err(std::io::Error::other)?;
        crate::atomic::write(&self.path(id), &body)
    }

    /// Forgets `id` (its record and its flow checkpoint).
    pub fn remove(&self, id: &str) -> std::io::Result<()> {
        crate::checkpoint::remove(&self.flows_path(id)).map_err(std::io::Error::other)?;
        match std::fs::remove_file(self.path(id)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Every saved session, by id. A file that cannot be read is reported
    /// (and left in place for the operator), never dropped silently.
    pub fn load(&self) -> (Vec<(String, Saved)>, Vec<String>) {
        let (mut ok, mut bad) = (Vec::new(), Vec::new());
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return (ok, bad);
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".json") else {
                continue;
            };
            if id.starts_with('.') {
                // A temporary file of a write the daemon did not finish.
                let _ = std::fs::remove_file(e.path());
                continue;
            }
            let parsed = std::fs::read(e.path())
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice::<Saved>(&b).map_err(|e| e.to_string()));
            match parsed {
                Ok(s) if s.config.name == id => ok.push((id.to_string(), s)),
                Ok(_) => bad.push(format!(
                    "{}: name does not match the file",
                    e.path().display()
                )),
                Err(why) => bad.push(format!("{}: {why}", e.path().display())),
            }
        }
        ok.sort_by(|a, b| a.0.cmp(&b.0));
        (ok, bad)
    }
}

/// Where the session `id` keeps its flow checkpoint:
/// `data_dir/.sessions/<id>.flows`.
pub fn flows_path(data_dir: &Path, id: &str) -> PathBuf {
    data_dir.join(".sessions").join(format!("{id}.flows"))
}

/// Seconds since the epoch, for log lines.
pub fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_load_remove() {
        let t = tempfile::tempdir().unwrap();
        let st = Store::open(t.path()).unwrap();
        let cfg = SessionConfig::from_json(r#"{"name":"a1","filter":"udp"}"#).unwrap();
        let mut r = Record::new("lab".into(), cfg);
        r.state = State::Running;
        r.archive = vec!["t".into()];
        r.link = Some(LinkType::LinuxSll2);
        st.save("a1", &r).unwrap();
        std::fs::write(t.path().join(".sessions/broken.json"), b"{").unwrap();
        let (ok, bad) = st.load();
        assert_eq!(ok.len(), 1);
        assert_eq!(bad.len(), 1, "{bad:?}");
        let back = ok[0].1.record();
        assert_eq!(
            (back.state, back.experiment.as_str(), back.archive.len()),
            (State::Running, "lab", 1)
        );
        assert_eq!(back.link, Some(LinkType::LinuxSll2));
        st.remove("a1").unwrap();
        assert!(st.load().0.is_empty());
    }
}
