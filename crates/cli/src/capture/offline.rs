//! `streamgauge capture --read FILE --session S.json …`: sessions over a
//! capture file, with a summary.

use std::path::{Path, PathBuf};

use ::capture::config::SessionConfig;
use ::capture::session::SessionEnv;
use anyhow::{bail, Context, Result};

/// Reads a session file: TOML by its extension, JSON otherwise.
fn load(path: &Path) -> Result<SessionConfig> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let cfg = if path.extension().is_some_and(|e| e == "toml") {
        SessionConfig::from_toml(&text)
    } else {
        SessionConfig::from_json(&text)
    };
    cfg.with_context(|| path.display().to_string())
}

/// Runs the sessions over `input` and prints one line per session.
pub fn run(
    input: &Path,
    sessions: &[PathBuf],
    out: Option<&Path>,
    keys: &[String],
) -> Result<bool> {
    let configs = sessions
        .iter()
        .map(|p| load(p))
        .collect::<Result<Vec<_>>>()?;
    let mut key = None;
    let mut named = Vec::new();
    for k in keys {
        let Some((name, file)) = k.split_once('=') else {
            bail!("--key {k:?}: want NAME=FILE");
        };
        let loaded = ::capture::Key::from_file(Path::new(file))
            .with_context(|| format!("key {name} ({file})"))?;
        named.push((name.to_string(), loaded));
    }
    // A run has one key: every anonymising session must name the same one.
    for c in &configs {
        if let Some(a) = &c.anonymization {
            match named.iter().find(|(n, _)| *n == a.key) {
                Some((_, k)) => key = Some(k.clone()),
                None => bail!(
                    "session {} names anonymisation key {:?}: give it with --key {}=FILE",
                    c.name,
                    a.key,
                    a.key
                ),
            }
        }
    }
    let names: std::collections::BTreeSet<_> = configs
        .iter()
        .filter_map(|c| c.anonymization.as_ref().map(|a| a.key.clone()))
        .collect();
    if names.len() > 1 {
        bail!("sessions name different keys {names:?}: run them separately");
    }
    let env = SessionEnv {
        data_dir: out
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from(".")),
        source: input.display().to_string(),
        key,
        closed: None,
        flows: None,
    };
    let sum = ::capture::run_file(input, configs, &env)?;
    println!(
        "{}: {} packets, {} bytes, {:.3} s",
        input.display(),
        sum.packets,
        sum.bytes,
        sum.last_ns.saturating_sub(sum.first_ns) as f64 / 1e9
    );
    for (name, c) in &sum.sessions {
        println!(
            "session {name}: matched {} sampled_out {} stored {} bytes {} written {} dropped_by_us {} flows_exported {}",
            c.matched, c.sampled_out, c.stored, c.bytes, c.written, c.dropped_by_us, c.flows_exported
        );
    }
    Ok(true)
}
