//! Restart after a crash (SIGKILL, power loss): the daemon reloads every
//! saved session ([`super::persist`]), closes what the dead daemon left
//! open, and brings sessions back.
//!
//! The rule (spec/capture-api.md, *Restart*):
//! - every saved session is listed again, with its experiment, archive
//!   targets and last state; nothing is dropped silently (an unreadable
//!   saved file is logged and left in place);
//! - in each session directory, a packet or IPFIX file without its `.json`
//!   metadata was open when the daemon died: it is truncated to its last
//!   complete record or message, and its metadata is written with
//!   `"recovered": true`;
//! - every complete file of a session with archive targets is enqueued
//!   again; the archive queue ignores what it has already, so a file is
//!   uploaded once (a file closed just before the crash is not forgotten);
//! - an IPFIX file left open is first cut back to its length at the
//!   session's last flow checkpoint; the checkpoint's active flows go
//!   back into the restarted session's flow tables (so the packets up to
//!   the checkpoint are counted once: see [`crate::checkpoint`]); a
//!   session that does not run again drops its checkpoint (logged);
//! - sessions that were `running` or `paused` start again (paused ones are
//!   paused again) into new files numbered after the old ones, with
//!   counters from zero; one that can no longer run (its interface, key or
//!   a policy limit is gone) is marked `failed` with the reason.

use super::registry::State;
use super::views::state_name;
use super::Shared;
use crate::config::SessionConfig;
use crate::counters::Counters;
use crate::metadata::FileMetadata;
use crate::output::format::header_linktype;
use crate::output::{repair, sequence_of, ClosedFile};
use std::io::Read;
use std::path::{Path, PathBuf};

/// True for the metadata documents written beside a file.
fn is_metadata(name: &str) -> bool {
    name.ends_with(".json") || name.ends_with(".xml")
}

/// The `.json`/`.xml` documents of `file` that exist.
fn metadata_of(file: &Path) -> Vec<PathBuf> {
    ["json", "xml"]
        .iter()
        .map(|ext| {
            let mut p = file.as_os_str().to_owned();
            p.push(".");
            p.push(ext);
            PathBuf::from(p)
        })
        .filter(|p| p.exists())
        .collect()
}

/// Closes one file left open: repaired, metadata written. Returns a log line.
fn close_left_open(path: &Path, cfg: &SessionConfig, source: &str) -> Result<String, String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut head = Vec::with_capacity(4);
    std::fs::File::open(path)
        .and_then(|f| std::io::Read::take(f, 4).read_to_end(&mut head))
        .map_err(|e| format!("{name}: {e}"))?;
    let ipfix = crate::ipfix::repair::looks_like_ipfix(&head) || name.ends_with(".ipfix");
    let (file, what) = if ipfix {
        let r = crate::ipfix::repair(path).map_err(|e| e.to_string())?;
        let f = ClosedFile {
            path: path.to_path_buf(),
            seq: 0,
            bytes: r.new_len,
            packets: 0,
            first_ns: 0,
            last_ns: 0,
        };
        let cut = r.old_len - r.new_len;
        (
            f,
            format!("{} IPFIX messages kept, {cut} bytes cut", r.messages),
        )
    } else {
        let r = repair(path).map_err(|e| e.to_string())?;
        let f = ClosedFile {
            path: path.to_path_buf(),
            seq: sequence_of(&cfg.name, &name).unwrap_or(0),
            bytes: r.new_len,
            packets: r.records,
            first_ns: r.first_ns,
            last_ns: r.last_ns,
        };
        let cut = r.old_len - r.new_len;
        (f, format!("{} records kept, {cut} bytes cut", r.records))
    };
    let filter = cfg.filter_expression().unwrap_or_default();
    let mut md = FileMetadata::new(cfg, &filter, source, &file, &Counters::default());
    md.recovered = true;
    if ipfix {
        md.format = "ipfix".into();
    } else {
        // The header names the link type the session wrote.
        let mut head = Vec::with_capacity(256);
        let read = std::fs::File::open(path).and_then(|f| f.take(256).read_to_end(&mut head));
        md.linktype = read.ok().and_then(|_| header_linktype(&head));
    }
    md.write_beside(path)
        .map_err(|e| format!("{name}: metadata: {e}"))?;
    Ok(format!(
        "recovered {name} left open by the previous daemon: {what}"
    ))
}

/// Closes the files a killed daemon left open in `dir` and lists every
/// complete file with its metadata (for the archive). Log lines go to `log`.
pub fn recover_dir(
    dir: &Path,
    cfg: &SessionConfig,
    source: &str,
    log: &mut Vec<String>,
) -> Vec<PathBuf> {
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => return Vec::new(),
    };
    // A metadata document the dead daemon had not renamed into place yet.
    for n in names
        .iter()
        .filter(|n| n.starts_with('.') && n.ends_with(".tmp"))
    {
        let _ = std::fs::remove_file(dir.join(n));
    }
    names.retain(|n| !n.starts_with('.') && !is_metadata(n));
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let path = dir.join(&name);
        if metadata_of(&path).is_empty() {
            match close_left_open(&path, cfg, source) {
                Ok(line) => {
                    tracing::info!(session = %cfg.name, "{line}");
                    log.push(line);
                }
                Err(e) => {
                    let line = format!("could not recover {name}: {e}; left as it is");
                    tracing::warn!(session = %cfg.name, "{line}");
                    log.push(line);
                    continue;
                }
            }
        }
        out.push(path.clone());
        out.extend(metadata_of(&path));
    }
    out
}

impl Shared {
    /// Why a saved session cannot run again on this node, if it cannot.
    fn restorable(&self, cfg: &SessionConfig) -> Result<(), String> {
        let iface = cfg.interface.clone().unwrap_or_default();
        if !self.config.interfaces.contains(&iface) {
            return Err(format!("interface {iface:?} is no longer tapped"));
        }
        self.policy.check(cfg).map_err(|e| e.to_string())?;
        if let Some(a) = &cfg.anonymization {
            if !self.keys.contains_key(&a.key) {
                return Err(format!("anonymisation key {:?} is gone", a.key));
            }
        }
        Ok(())
    }

    /// Loads the saved sessions into the registry (files repaired, archive
    /// routes and queue restored) and returns those to start again, with
    /// whether they were paused.
    pub(super) fn restore(&self) -> Vec<(String, bool)> {
        let (saved, bad) = match &self.lock().store {
            Some(store) => store.load(),
            None => return Vec::new(),
        };
        for b in bad {
            tracing::error!(file = %b, "saved session not restored (fix or remove the file)");
        }
        let mut restart = Vec::new();
        for (id, s) in saved {
            let mut rec = s.record();
            rec.log(format!(
                "daemon restarted; session was {}",
                state_name(s.state)
            ));
            let source = s.config.interface.clone().unwrap_or_default();
            let mut lines = Vec::new();
            let flows_path = super::persist::flows_path(&self.config.data_dir, &id);
            let checkpoint = match crate::checkpoint::Checkpoint::read(&flows_path) {
                Ok(c) => c,
                Err(e) => {
                    lines.push(format!("{e}; its flows are not restored"));
                    None
                }
            };
            if let Some(c) = &checkpoint {
                match c.cut_open_files() {
                    Ok(cut) => lines.extend(cut),
                    Err(e) => lines.push(e.to_string()),
                }
            }
            let found = recover_dir(
                &self.config.data_dir.join(&id),
                &s.config,
                &source,
                &mut lines,
            );
            for l in lines {
                rec.log(l);
            }
            if let (Some(link), false) = (&self.archive, s.archive.is_empty()) {
                let known: Vec<String> = self
                    .config
                    .archive
                    .as_ref()
                    .map(|a| a.targets.keys().cloned().collect())
                    .unwrap_or_default();
                let targets: Vec<String> = s
                    .archive
                    .iter()
                    .filter(|t| known.contains(t))
                    .cloned()
                    .collect();
                if targets.len() < s.archive.len() {
                    rec.log(format!(
                        "archive targets no longer configured are left out: {:?}",
                        s.archive
                    ));
                }
                if !targets.is_empty() {
                    link.routes
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(
                            id.clone(),
                            super::archive::Route {
                                experiment: s.experiment.clone(),
                                targets,
                                enqueued: 0,
                            },
                        );
                    link.enqueue_found(&id, &found);
                }
            }
            let mut again = false;
            if matches!(s.state, State::Running | State::Paused) {
                match self.restorable(&s.config) {
                    Ok(()) => {
                        // Saved as it was until it runs: a second crash meanwhile restarts it too.
                        again = true;
                        rec.state = State::Created;
                        rec.log("capture starts again into new files (counters from zero)");
                        restart.push((id.clone(), s.state == State::Paused));
                    }
                    Err(why) => rec.set_state(
                        State::Failed,
                        Some(format!("not restarted after the daemon restart: {why}")),
                    ),
                }
            }
            if let (Some(c), false) = (&checkpoint, again) {
                let _ = crate::checkpoint::remove(&flows_path);
                rec.log(format!(
                    "{} active flows of the flow checkpoint dropped: the session does not run again",
                    c.flows()
                ));
            }
            let mut reg = self.lock();
            reg.sessions.insert(id.clone(), rec);
            if !again {
                reg.save(&id);
            }
        }
        restart
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipfix::{Encoder, TimeResolution};
    use crate::output::format::LINKTYPE_ETHERNET;
    use crate::output::FileFormat;

    #[test]
    fn files_left_open_are_repaired_and_described() {
        let t = tempfile::tempdir().unwrap();
        let cfg = SessionConfig::from_json(r#"{"name":"s","filter":"udp"}"#).unwrap();
        let ts = 1_700_000_000_000_000_000u64;
        let mut pcap = FileFormat::Pcap.header(65535, "", LINKTYPE_ETHERNET);
        for i in 0..3 {
            FileFormat::Pcap.record(ts + i, &[7u8; 60], 60, &mut pcap);
        }
        let whole = pcap.len() as u64;
        pcap.extend_from_slice(&[1, 2, 3]);
        std::fs::write(t.path().join("s_000001_20231114T221320Z.pcap"), &pcap).unwrap();
        std::fs::write(t.path().join("s_000000_20231114T221300Z.pcap"), b"done").unwrap();
        std::fs::write(t.path().join("s_000000_20231114T221300Z.pcap.json"), b"{}").unwrap();
        let enc = Encoder::new(1, 65535, TimeResolution::Milliseconds);
        let mut ipfix = enc.templates(1);
        ipfix.extend_from_slice(&enc.templates(2)[..10]);
        std::fs::write(t.path().join("flows.ipfix"), &ipfix).unwrap();
        std::fs::write(t.path().join(".flows.ipfix.json.tmp"), b"{").unwrap();

        let mut log = Vec::new();
        let found = recover_dir(t.path(), &cfg, "eth0", &mut log);
        assert_eq!(found.len(), 8, "{found:?}");
        assert_eq!(log.len(), 2, "{log:?}");
        let p = t.path().join("s_000001_20231114T221320Z.pcap");
        assert_eq!(std::fs::metadata(&p).unwrap().len(), whole);
        let md: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p.with_extension("pcap.json")).unwrap()).unwrap();
        assert_eq!(
            (md["packets"].as_u64(), md["sequence"].as_u64()),
            (Some(3), Some(1))
        );
        assert_eq!(md["recovered"], true);
        assert_eq!(md["linktype"], 1, "read from the file header");
        assert!(t.path().join("flows.ipfix.xml").exists());
        assert!(!t.path().join(".flows.ipfix.json.tmp").exists());
        let f = t.path().join("flows.ipfix");
        assert_eq!(
            std::fs::metadata(&f).unwrap().len(),
            enc.templates(1).len() as u64
        );
        // A second pass finds everything complete and changes nothing.
        let mut again = Vec::new();
        assert_eq!(recover_dir(t.path(), &cfg, "eth0", &mut again).len(), 8);
        assert!(again.is_empty(), "{again:?}");
    }
}
