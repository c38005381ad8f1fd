//! Executes a plan: runs in the seeded random order, one row per run
//! appended to runs.csv as it finishes (so an interrupted plan resumes by
//! skipping the runs already there), failures recorded, never dropped.
//! Beside it: samples.csv (every sample of every run) and tools.csv (what
//! the components on the path counted in each run, showing they worked).

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use client::{Client, Mp};
use omsp::{OmlType, ValueRef};

use crate::c_sender::Programs;
use crate::components;
use crate::interrupt;
use crate::liboml2::{self, ServerProc};
use crate::plan::{Network, Plan, RunSpec, Sender};
use crate::udp::{self, Env, Outcome, Sample};
use crate::veth::Pair;

/// Where the programs the C and iperf3 flavours need are.
#[derive(Debug, Clone)]
pub struct Tools {
    /// The `streamgauge` executable: its `server` is the collection server
    /// of the C and wrapped flavours, its `wrap iperf3` the wrapper.
    pub streamgauge: PathBuf,
    /// The directory holding our liboml2.so (crates/client-ffi's build).
    pub lib_dir: PathBuf,
    /// The reference OML suite's installation prefix.
    pub reference: PathBuf,
}

impl Tools {
    /// `STREAMGAUGE_BIN` or the running executable; our liboml2.so beside
    /// it (cargo builds both into one directory), or in
    /// `STREAMGAUGE_LIBOML2_DIR`; the reference suite in
    /// `STREAMGAUGE_OML_REFERENCE` or `~/.cache/oml-reference`.
    pub fn from_env() -> Result<Tools> {
        let streamgauge = match std::env::var_os("STREAMGAUGE_BIN") {
            Some(p) => PathBuf::from(p),
            None => std::env::current_exe().context("locating the running executable")?,
        };
        let lib_dir = match std::env::var_os("STREAMGAUGE_LIBOML2_DIR") {
            Some(p) => PathBuf::from(p),
            None => streamgauge
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
        };
        let reference = std::env::var_os("STREAMGAUGE_OML_REFERENCE")
            .map_or_else(liboml2::default_reference, PathBuf::from);
        Ok(Tools {
            streamgauge,
            lib_dir,
            reference,
        })
    }
}

/// What a plan's flavours need, set up once before its first run.
struct Setup {
    programs: Programs,
    /// The collection server of the C and wrapped flavours.
    collector: Option<(ServerProc, PathBuf)>,
}

impl Drop for Setup {
    /// Stops the collection server at once, also when the plan fails or is
    /// interrupted: its rows were counted after each run, and it inherited
    /// the runner's blocked SIGTERM (see `interrupt`).
    fn drop(&mut self) {
        if let Some((server, _)) = self.collector.take() {
            server.kill();
        }
    }
}

impl Setup {
    fn new(plan: &Plan, tools: &Tools, tmp: &Path, pair: Option<&Pair>) -> Result<Setup> {
        let senders = plan.senders();
        let c: Vec<_> = senders
            .iter()
            .filter_map(|s| match s {
                Sender::C(f) => Some(*f),
                _ => None,
            })
            .collect();
        let programs = if c.is_empty() {
            Programs::default()
        } else {
            let dir = tmp.join("c");
            std::fs::create_dir_all(&dir)?;
            let reference = c.iter().any(|f| f.reference).then_some(&*tools.reference);
            Programs::build(&tools.lib_dir, reference, &dir)
                .context("building the C sender (the c-* flavours)")?
        };
        let needs_collector = senders.iter().any(|s| match s {
            Sender::C(f) => f.instrumented,
            Sender::Iperf3 { wrapped } => *wrapped,
            Sender::Rust => false,
        });
        let collector = if needs_collector {
            let data = tmp.join("collector");
            std::fs::create_dir_all(&data)?;
            // In the sender's namespace: the reports stay on its loopback
            // and never cross the measured veth link.
            let server = ServerProc::start(&tools.streamgauge, &data, |cmd| match pair {
                Some(p) => p.tx.spawn(cmd),
                None => cmd.spawn(),
            })
            .context("starting the collection server of the instrumented flavours (set STREAMGAUGE_BIN to a streamgauge executable)")?;
            Some((server, data))
        } else {
            None
        };
        Ok(Setup {
            programs,
            collector,
        })
    }
}

/// The columns of runs.csv for `plan`.
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
/// A signal (Ctrl-C, SIGTERM, SIGHUP) stops the plan with an error after
/// cleaning up; the run it interrupted is not recorded.
pub fn execute(plan: &Plan, dir: &Path, progress: bool) -> Result<usize> {
    execute_with(plan, dir, progress, &Tools::from_env()?)
}

/// [`execute`] with the programs the C and iperf3 flavours use given.
pub fn execute_with(plan: &Plan, dir: &Path, progress: bool, tools: &Tools) -> Result<usize> {
    // Before any thread starts: they inherit the blocked signals.
    let _signals = interrupt::catch()?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let runs = plan.runs();
    let runs_path = dir.join("runs.csv");
    let skip = done(&runs_path, plan, &runs)?;
    let mut out = append(&runs_path, &header(plan))?;
    let mut samples_out = append(&dir.join("samples.csv"), "run,t,received,sent,if_rx")?;
    let mut tools_out = append(&dir.join("tools.csv"), "run,component,metric,value")?;
    let tmp = tempfile::tempdir().context("creating a temporary directory")?;
    let store = plan
        .collect
        .as_deref()
        .map(SampleStream::start)
        .transpose()?;
    let pair = match plan.network {
        Network::Loopback => None,
        Network::Veth => Some(Pair::new().context("creating the veth network")?),
    };
    let setup = Setup::new(plan, tools, tmp.path(), pair.as_ref())?;
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
        let result = one_run(plan, spec, id, tmp.path(), pair.as_ref(), &setup, tools);
        if interrupt::interrupted() {
            bail!(
                "interrupted before run {id} ended ({} of {} runs recorded in {}); run the plan again to resume",
                pos,
                runs.len(),
                runs_path.display()
            );
        }
        let (status, error, values) = match result.and_then(|(o, t)| {
            let v = responses(plan, &o)?;
            Ok((o, t, v))
        }) {
            Ok((o, tools, v)) => {
                for s in &o.samples {
                    writeln!(
                        samples_out,
                        "{id},{:.6},{},{},{}",
                        s.t, s.received, s.sent, s.if_rx
                    )?;
                    if let Some(st) = &store {
                        st.inject(id, s)?;
                    }
                }
                for (component, metric, value) in tools {
                    writeln!(tools_out, "{id},{component},{metric},{value}")?;
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
        tools_out.flush()?;
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
    drop(setup);
    Ok(failed)
}

/// One run: the components attached, the workload, the components
/// stopped (also when the workload failed), the run's files removed.
fn one_run(
    plan: &Plan,
    spec: &RunSpec,
    id: usize,
    tmp: &Path,
    pair: Option<&Pair>,
    setup: &Setup,
    tools: &Tools,
) -> Result<(Outcome, Vec<components::ToolCount>)> {
    let settings = plan.settings(spec);
    let work = tmp.join(format!("run-{id}"));
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    // The instrumented sender and the in-line sink report to files of
    // their own (deleted with the run): the plan's collect server gets
    // the samples.
    let file = |name: &str| format!("file:{}", work.join(name).display());
    let result = components::attach(&settings, pair, &file("inline.omsp"), &work.join("capture"))
        .and_then(|attached| {
            let env = Env {
                file: file("sender.omsp"),
                collector: setup.collector.as_ref().map(|(s, _)| s.uri()),
                domain: format!("observe_run{id}"),
                programs: &setup.programs,
                streamgauge: &tools.streamgauge,
                work: &work,
            };
            let outcome = udp::run(&settings, plan.seconds, plan.interval, &env, pair);
            let counted = attached.stop();
            let outcome = outcome?;
            let mut counted = counted?;
            counted.extend(stored(
                &settings,
                &outcome,
                setup,
                &env.domain,
                plan.seconds,
            ));
            Ok((outcome, counted))
        });
    let _ = std::fs::remove_dir_all(&work);
    result
}

/// What the instrumented C and wrapped iperf3 runs reported and what the
/// collection server stored of it (tools.csv), once the server committed
/// it (or stopped growing for 2 s).
fn stored(
    settings: &crate::plan::Settings,
    o: &Outcome,
    setup: &Setup,
    domain: &str,
    seconds: f64,
) -> Vec<components::ToolCount> {
    let Some((_, data)) = &setup.collector else {
        return Vec::new();
    };
    let db = data.join(format!("{domain}.sq3"));
    let stall = Duration::from_secs(2);
    let mut out = Vec::new();
    match settings.sender() {
        Sender::C(f) if f.instrumented => {
            let reported = o.reported.unwrap_or(0);
            let want = if f.filtered { reported / 100 } else { reported };
            let rows = liboml2::wait_rows(&db, "udp_sender_udp_tx", want, stall);
            out.push(("c-sender", "reported", reported as f64));
            out.push(("collector", "rows_stored", rows as f64));
        }
        Sender::Iperf3 { wrapped: true } => {
            // One interval row a second (iperf3's default -i 1), and the
            // summary rows of its end section.
            let intervals = liboml2::wait_rows(&db, "iperf3_interval", seconds as u64, stall);
            let summaries = liboml2::wait_rows(&db, "iperf3_summary", 3, stall);
            out.push(("collector", "iperf3_interval_rows", intervals as f64));
            out.push(("collector", "iperf3_summary_rows", summaries as f64));
        }
        _ => {}
    }
    if let Some(f) = &o.iperf3 {
        out.push(("iperf3", "bits_per_second", f.bps));
    }
    out
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
                "if_rx_pps" => format!("{:.3}", rate(|s| s.if_rx, r)?),
                "iperf3_bps" | "iperf3_loss" => {
                    let f = o.iperf3.context("iperf3 reported no figures")?;
                    if r == "iperf3_bps" {
                        format!("{:.1}", f.bps)
                    } else {
                        format!("{:.6}", f.loss)
                    }
                }
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
                ("if_rx", OmlType::UInt64),
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
            ValueRef::UInt64(s.if_rx),
        ])?;
        Ok(())
    }
}
