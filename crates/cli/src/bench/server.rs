//! `streamgauge bench server`: collection-server ingest rate into SQLite,
//! against the raw insert rate of the same rows measured in the same run.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ::server::{Server, ServerConfig};
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use omsp::{Content, Schema};

use super::replay::Replay;
use super::report::{self, Outcome};
use super::verify::Watcher;
use super::{raw, workload};

pub const LONG_ABOUT: &str = "\
Measure how fast the collection server stores tuples into SQLite, and
compare with the physical limit measured in the same run.

Each scenario pre-encodes the tuples (--tuples in all, shared among the
clients) with the OMSP encoder, starts a server in this process on
127.0.0.1 with a temporary data directory (or uses --addr), sends over
--clients parallel TCP connections, and times from the first byte sent to
the moment a separate read connection sees every row committed. Then it
checks zero loss: the exact row count, every client's complete sequence
numbers, and the values of every --check-every-th tuple.

Right before and right after each scenario, the same rows are inserted
with a prepared statement straight into a fresh file with the store's
table layout and pragmas (WAL, synchronous = NORMAL), one transaction per
--raw-batch rows. The faster of the two runs is the raw limit, and the
ratio server / raw is reported (target: 0.8 or more)";

/// Content types to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ContentArg {
    /// Binary packets.
    Binary,
    /// Tab-separated text lines.
    Text,
}

impl ContentArg {
    fn content(self) -> Content {
        match self {
            ContentArg::Binary => Content::Binary,
            ContentArg::Text => Content::Text,
        }
    }
}

/// Arguments of `streamgauge bench server`.
#[derive(Debug, Args)]
pub struct ServerBenchArgs {
    /// Tuples per scenario, shared among its clients.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 1_000_000)]
    pub tuples: u64,
    /// Parallel client connections; one scenario per value.
    #[arg(short = 'c', long, value_name = "N,...", value_delimiter = ',', default_values_t = [1usize, 4])]
    pub clients: Vec<usize>,
    /// Content types; one scenario per value.
    #[arg(long, value_name = "TYPE,...", value_delimiter = ',', default_values_t = [ContentArg::Binary, ContentArg::Text])]
    pub content: Vec<ContentArg>,
    /// Tuple schema.
    #[arg(long, value_name = "PRESET", default_value_t = workload::Preset::Issue)]
    pub schema: workload::Preset,
    /// Use the server at this address instead of starting one in-process.
    #[arg(long, value_name = "HOST:PORT")]
    pub addr: Option<SocketAddr>,
    /// Data directory of the --addr server, to count and check its rows
    /// (without it only the send time is measured).
    #[arg(long, value_name = "DIR", requires = "addr")]
    pub db: Option<PathBuf>,
    /// Rows per transaction of the raw insert limit.
    #[arg(long, value_name = "N", default_value_t = 50_000)]
    pub raw_batch: usize,
    /// Skip the raw insert limit.
    #[arg(long)]
    pub no_raw: bool,
    /// Compare the stored values of every N-th tuple with what was sent.
    #[arg(long, value_name = "N", default_value_t = 997)]
    pub check_every: u64,
    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
}

impl std::fmt::Display for ContentArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.content().name())
    }
}

/// Runs every scenario and prints the results.
pub fn run(args: &ServerBenchArgs) -> Result<bool> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let schema = args.schema.schema();
    let mut outcomes = Vec::new();
    for &content in &args.content {
        for &clients in &args.clients {
            let outcome = scenario(&runtime, args, &schema, content, clients.max(1))
                .with_context(|| format!("scenario {content} x{clients}"))?;
            outcomes.push(outcome);
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report::json(args.schema.name(), &outcomes))?
        );
    } else {
        print!("{}", report::table(args.schema.name(), &outcomes));
    }
    Ok(true)
}

fn scenario(
    runtime: &tokio::runtime::Runtime,
    args: &ServerBenchArgs,
    schema: &Schema,
    content: ContentArg,
    clients: usize,
) -> Result<Outcome> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?;
    let domain = format!(
        "bench_{content}_{clients}_{}_{}",
        std::process::id(),
        now.subsec_nanos()
    );
    let sessions = (0..clients)
        .map(|c| {
            let n = workload::share(args.tuples, clients, c);
            workload::encode_session(
                schema,
                content.content(),
                &domain,
                c,
                n,
                now.as_secs() as i64,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let tmp = tempfile::tempdir().context("creating a temporary directory")?;
    let raw_before = if args.no_raw {
        None
    } else {
        Some(raw_limit(tmp.path(), schema, args, clients)?)
    };
    let (server, addr, data_dir) = match args.addr {
        Some(addr) => (None, addr, args.db.clone()),
        None => {
            let mut config = ServerConfig::new(tmp.path());
            config.listen = vec![SocketAddr::from(([127, 0, 0, 1], 0))];
            config.idle_timeout = None;
            let server = runtime.block_on(Server::start(config))?;
            let addr = server.local_addrs()[0];
            (Some(server), addr, Some(tmp.path().to_owned()))
        }
    };
    let bar = progress(args.tuples, &format!("{content} x{clients}"));
    let replay = Replay::connect(addr, sessions)?;
    let t0 = replay.start();
    let (t1, checked) = match &data_dir {
        Some(dir) => {
            let path = dir.join(format!("{domain}.sq3"));
            let watcher = Watcher::open(&path, schema, Duration::from_secs(30))?;
            let t1 = watcher.wait_for(args.tuples, Duration::from_secs(60), &bar)?;
            replay.join()?;
            let checked = watcher.check(schema, clients, args.tuples, args.check_every)?;
            (t1, Some(checked))
        }
        None => {
            replay.join()?;
            (std::time::Instant::now(), None)
        }
    };
    bar.finish_and_clear();
    let mut commits = None;
    if let Some(server) = server {
        let counters = server.metrics().domain(&domain);
        commits = Some(counters.commits.load(std::sync::atomic::Ordering::Relaxed));
        runtime.block_on(server.shutdown());
    }
    // The limit is measured right before and right after the scenario and
    // the faster run is kept: a neighbour's load cannot flatter the ratio.
    let raw_seconds = match raw_before {
        Some(before) => Some(before.min(raw_limit(tmp.path(), schema, args, clients)?)),
        None => None,
    };
    Ok(Outcome {
        content: content.content().name(),
        clients,
        rows: args.tuples,
        seconds: t1.duration_since(t0).as_secs_f64(),
        raw_seconds,
        verified: checked.is_some(),
        checked_rows: checked.unwrap_or(0),
        commits,
    })
}

fn raw_limit(dir: &Path, schema: &Schema, args: &ServerBenchArgs, clients: usize) -> Result<f64> {
    let took = raw::measure(dir, schema, args.tuples, clients, args.raw_batch)
        .context("raw insert limit")?;
    Ok(took.as_secs_f64())
}

fn progress(len: u64, name: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{prefix:>12} {bar:40} {pos}/{len} rows") {
        bar.set_style(style);
    }
    bar.set_prefix(name.to_owned());
    bar
}
