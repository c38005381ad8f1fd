//! Executes a plan: runs in the seeded random order, one row per run
//! appended to runs.csv as it finishes (so an interrupted plan resumes by
//! skipping the runs already there), failures recorded, never dropped.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};
use client::{Client, Mp};
use omsp::{OmlType, ValueRef};

use super::plan::{Plan, RunSpec};
use super::udp::{self, Outcome, Sample};

pub fn header(plan: &Plan) -> String {
    let mut cols: Vec<String> = ["run", "order", "replication", "status", "error"]
        .map(String::from)
        .to_vec();
    cols.extend(plan.factors.iter().map(|f| format!("factor:{}", f.name)));
    cols.extend(plan.responses.iter().map(|r| format!("response:{r}")));
    cols.join(",")
}

/// Run ids already in runs.csv (which must have been written for this plan).
fn done(path: &Path, plan: &Plan, runs: &[RunSpec]) -> Result<BTreeSet<usize>> {
    let mut ids = BTreeSet::new();
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(ids);
    };
    let mut lines = text.lines();
    let want = header(plan);
    match lines.next() {
        None => return Ok(ids),
        Some(h) if h == want => {}
        Some(h) => bail!(
            "{} was written for another plan (columns {h:?}, this plan's {want:?}); give another --out",
            path.display()
        ),
    }
    let k = plan.factors.len();
    for (n, line) in lines.enumerate() {
        let f: Vec<&str> = line.split(',').collect();
        let id: Option<usize> = f.first().and_then(|s| s.parse().ok());
        let ok = id.is_some_and(|id| {
            runs.get(id).is_some_and(|r| {
                f.len() >= 5 + k && r.levels.iter().zip(&f[5..5 + k]).all(|(a, b)| a == b)
            })
        });
        if !ok {
            bail!(
                "{} line {}: not a run of this plan ({line:?}); give another --out",
                path.display(),
                n + 2
            );
        }
        ids.insert(id.unwrap_or_default());
    }
    Ok(ids)
}

/// Runs every run not yet in `dir`/runs.csv. Returns how many failed.
pub fn execute(plan: &Plan, dir: &Path, progress: bool) -> Result<usize> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let runs = plan.runs();
    let runs_path = dir.join("runs.csv");
    let skip = done(&runs_path, plan, &runs)?;
    let mut out = append(&runs_path, &header(plan))?;
    let mut samples_out = append(&dir.join("samples.csv"), "run,t,received,sent")?;
    let tmp = tempfile::tempdir().context("creating a temporary directory")?;
    let store = plan
        .collect
        .as_deref()
        .map(SampleStream::start)
        .transpose()?;
    if !skip.is_empty() {
        eprintln!(
            "observe: resuming: {} of {} runs already in {}",
            skip.len(),
            runs.len(),
            runs_path.display()
        );
    }
    let mut failed = 0;
    for (pos, &id) in plan.order().iter().enumerate() {
        if skip.contains(&id) {
            continue;
        }
        let spec = &runs[id];
        let settings = plan.settings(spec);
        // The instrumented sender reports to a file of its own (deleted
        // with the directory): the plan's collect server gets the samples.
        let report = format!(
            "file:{}",
            tmp.path().join(format!("run-{id}.omsp")).display()
        );
        let result = udp::run(&settings, plan.seconds, plan.interval, &report);
        let _ = std::fs::remove_file(tmp.path().join(format!("run-{id}.omsp")));
        let (status, error, values) = match result.and_then(|o| responses(plan, &o).map(|v| (o, v)))
        {
            Ok((o, v)) => {
                for s in &o.samples {
                    writeln!(samples_out, "{id},{:.6},{},{}", s.t, s.received, s.sent)?;
                    if let Some(st) = &store {
                        st.inject(id, s)?;
                    }
                }
                ("ok", String::new(), v)
            }
            Err(e) => {
                failed += 1;
                (
                    "failed",
                    format!("{e:#}").replace([',', '\n', '"'], " "),
                    vec![String::new(); plan.responses.len()],
                )
            }
        };
        let mut row = vec![
            id.to_string(),
            pos.to_string(),
            spec.replication.to_string(),
            status.into(),
            error.clone(),
        ];
        row.extend(spec.levels.iter().cloned());
        row.extend(values.iter().cloned());
        writeln!(out, "{}", row.join(","))?;
        out.flush()?;
        samples_out.flush()?;
        if progress {
            let what = if status == "ok" {
                values.join(" ")
            } else {
                format!("FAILED: {error}")
            };
            eprintln!(
                "observe: run {id} ({}/{}) {}: {what}",
                pos + 1,
                runs.len(),
                spec.levels.join(" ")
            );
        }
    }
    if let Some(st) = store {
        st.client
            .close()
            .context("closing the sample stream's client")?;
    }
    Ok(failed)
}

fn append(path: &Path, header: &str) -> Result<File> {
    let fresh = std::fs::metadata(path)
        .map(|m| m.len() == 0)
        .unwrap_or(true);
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    if fresh {
        writeln!(f, "{header}")?;
    }
    Ok(f)
}

fn responses(plan: &Plan, o: &Outcome) -> Result<Vec<String>> {
    let to = plan.seconds - plan.cooldown;
    let rate = |pick: fn(&Sample) -> u64, what: &str| {
        udp::trimmed_rate(&o.samples, plan.warmup, to, pick)
            .with_context(|| format!("{what}: no two samples inside the trimmed window"))
    };
    plan.responses
        .iter()
        .map(|r| {
            Ok(match r.as_str() {
                "recv_pps" => format!("{:.3}", rate(|s| s.received, r)?),
                "sent_pps" => format!("{:.3}", rate(|s| s.sent, r)?),
                "loss" => {
                    if o.sent == 0 {
                        bail!("the sender sent nothing");
                    }
                    format!("{:.6}", 1.0 - o.received.min(o.sent) as f64 / o.sent as f64)
                }
                other => bail!("unknown response {other}"),
            })
        })
        .collect()
}

/// Every sample as a row of the measurement stream `observe_sample`.
struct SampleStream {
    client: Client,
    mp: Mp,
}

impl SampleStream {
    fn start(collect: &str) -> Result<SampleStream> {
        let client = udp::new_client(collect, "runner", &[])?;
        let mp = client.add_mp(
            "sample",
            &[
                ("run", OmlType::UInt32),
                ("t", OmlType::Double),
                ("received", OmlType::UInt64),
                ("sent", OmlType::UInt64),
            ],
        )?;
        client
            .start()
            .with_context(|| format!("connecting to {collect}"))?;
        Ok(SampleStream { client, mp })
    }

    fn inject(&self, run: usize, s: &Sample) -> Result<()> {
        self.mp.inject(&[
            ValueRef::UInt32(run as u32),
            ValueRef::Double(s.t),
            ValueRef::UInt64(s.received),
            ValueRef::UInt64(s.sent),
        ])?;
        Ok(())
    }
}
