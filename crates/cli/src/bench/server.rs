//! `streamgauge bench server`: collection-server ingest rate into SQLite,
//! against the raw insert rate of the same rows measured in the same run.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ::server::{Server, ServerConfig};
use anyhow::{ensure, Context, Result};
use clap::{Args, ValueEnum};
use indicatif::ProgressBar;
use omsp::{Content, Schema};

use super::pg::PgTarget;
use super::pg_verify::PgWatcher;
use super::replay::Replay;
use super::report::{self, Outcome};
use super::verify::Watcher;
use super::{pg_raw, raw, reference_server, workload};
use crate::server::Backend;

pub const LONG_ABOUT: &str = "\
Measure how fast the collection server stores tuples into SQLite or
PostgreSQL (--backend), and compare with the physical limit measured in
the same run.

Each scenario pre-encodes the tuples (--tuples in all, shared among the
clients) with the OMSP encoder, starts a server in this process on
127.0.0.1 (or uses --addr), sends over --clients parallel TCP connections,
and times from the first byte sent to the moment a separate connection
sees every row committed. Then it checks zero loss: the exact row count,
every client's complete sequence numbers, and the values of every
--check-every-th tuple.

SQLite: the server writes into a temporary data directory. Right before
and right after each scenario, the same rows are inserted with a prepared
statement straight into a fresh file with the store's table layout and
pragmas (WAL, synchronous = NORMAL), one transaction per --raw-batch rows.

PostgreSQL: the server writes into the server given by the --pg-* flags,
or into a throwaway cluster started for the run (--pg-temp). Visibility is
polled with max(oml_tuple_id) and confirmed with COUNT(*). Right before and
right after each scenario, the same rows, encoded beforehand, are sent by
binary COPY into a fresh table with the store's layout, one COPY and one
transaction per --raw-batch rows. For reference, the reference server's
method (one synchronous prepared INSERT per row) is timed on
--insert-sample rows and reported as rows/s, extrapolated.

The faster of the two raw runs is the limit, and the ratio server / raw
is reported (target: 0.8 or more).

The reference oml2-server (--reference PREFIX, built by
shared/reference/build-oml.sh) is then measured on the same workload in
every scenario, as a child process on the same back end, and streamgauge's
rate is reported as a ratio to it (only its row count is checked: it
stores some values differently by design). Skipped with --no-reference,
and beside a server given by --addr";

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
    /// Storage back end.
    #[arg(short = 'b', long, value_name = "NAME", default_value = "sqlite")]
    pub backend: Backend,
    /// PostgreSQL: start a throwaway cluster for the run (as root, it runs
    /// as user postgres).
    #[arg(long, conflicts_with_all = ["pg_host", "pg_port", "pg_user", "pg_pass"])]
    pub pg_temp: bool,
    /// PostgreSQL host [default: localhost].
    #[arg(long, value_name = "HOST")]
    pub pg_host: Option<String>,
    /// PostgreSQL port [default: 5432].
    #[arg(long, value_name = "PORT")]
    pub pg_port: Option<u16>,
    /// PostgreSQL user, with CREATEDB [default: oml].
    #[arg(long, value_name = "USER")]
    pub pg_user: Option<String>,
    /// PostgreSQL password.
    #[arg(long, value_name = "PASS")]
    pub pg_pass: Option<String>,
    /// PostgreSQL: rows of the one-INSERT-per-row reference; 0 skips it.
    #[arg(long, value_name = "N", default_value_t = 5_000)]
    pub insert_sample: u64,
    /// Use the server at this address instead of starting one in-process.
    #[arg(long, value_name = "HOST:PORT")]
    pub addr: Option<SocketAddr>,
    /// Data directory of the --addr SQLite server, to count and check its
    /// rows (without it only the send time is measured; with PostgreSQL
    /// the rows are checked through the --pg-* server).
    #[arg(long, value_name = "DIR", requires = "addr")]
    pub db: Option<PathBuf>,
    /// Rows per transaction of the raw limit (inserts or COPY).
    #[arg(long, value_name = "N", default_value_t = 50_000)]
    pub raw_batch: usize,
    /// Skip the raw limit.
    #[arg(long)]
    pub no_raw: bool,
    /// Compare the stored values of every N-th tuple with what was sent.
    #[arg(long, value_name = "N", default_value_t = 997)]
    pub check_every: u64,
    /// Installation prefix of the reference OML suite, whose
    /// bin/oml2-server is measured after ours in every scenario (same
    /// rows, same replay; the count is checked) [default:
    /// ~/.cache/oml-reference]. Not with --addr.
    #[arg(long, value_name = "PREFIX")]
    pub reference: Option<PathBuf>,
    /// Do not measure the reference oml2-server.
    #[arg(long)]
    pub no_reference: bool,
    /// Tuples sent to the reference server per scenario [default: --tuples
    /// on SQLite; 20000 on PostgreSQL, where it stores one synchronous
    /// INSERT per row].
    #[arg(long, value_name = "N")]
    pub reference_tuples: Option<u64>,
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
    let target = match args.backend {
        Backend::Sqlite => {
            let pg_flags = args.pg_temp
                || args.pg_host.is_some()
                || args.pg_port.is_some()
                || args.pg_user.is_some()
                || args.pg_pass.is_some();
            ensure!(!pg_flags, "the --pg-* flags need --backend postgresql");
            None
        }
        Backend::Postgresql => {
            ensure!(args.db.is_none(), "--db is for --backend sqlite");
            Some(PgTarget::open(args)?)
        }
    };
    // The reference is measured beside our in-process server, not beside
    // a server given by --addr (the scale-out benchmark's deployments).
    let reference = if args.no_reference || args.addr.is_some() {
        None
    } else {
        Some(reference_server::locate(args.reference.as_deref())?)
    };
    let mut outcomes = Vec::new();
    for &content in &args.content {
        for &clients in &args.clients {
            let outcome = scenario(
                &runtime,
                args,
                target.as_ref(),
                reference.as_deref(),
                &schema,
                content,
                clients.max(1),
            )
            .with_context(|| format!("scenario {content} x{clients}"))?;
            outcomes.push(outcome);
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report::json(
                args.backend_name(),
                args.schema.name(),
                &outcomes
            ))?
        );
    } else {
        print!(
            "{}",
            report::table(args.backend_name(), args.schema.name(), &outcomes)
        );
    }
    Ok(true)
}

impl ServerBenchArgs {
    fn backend_name(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite => "sqlite",
            Backend::Postgresql => "postgresql",
        }
    }
}

/// A separate connection to the scenario's database.
pub(super) enum Watch {
    /// `<data-dir>/<domain>.sq3`, read-only.
    Sqlite(Watcher),
    /// The domain's PostgreSQL database.
    Postgres(PgWatcher),
}

impl Watch {
    /// Opens `domain`'s database: PostgreSQL's, or `<dir>/<domain>.sq3`.
    pub(super) fn open(
        pg: Option<&PgTarget>,
        dir: &Path,
        domain: &str,
        schema: &Schema,
    ) -> Result<Watch> {
        Ok(match pg {
            Some(pg) => Watch::Postgres(PgWatcher::open(
                &pg.opts,
                domain,
                schema,
                Duration::from_secs(30),
            )?),
            None => Watch::Sqlite(Watcher::open(
                &dir.join(format!("{domain}.sq3")),
                schema,
                Duration::from_secs(30),
            )?),
        })
    }

    pub(super) fn wait_for(
        &mut self,
        expected: u64,
        stall: Duration,
        bar: &ProgressBar,
    ) -> Result<Instant> {
        match self {
            Watch::Sqlite(w) => w.wait_for(expected, stall, bar),
            Watch::Postgres(w) => w.wait_for(expected, stall, bar),
        }
    }

    fn check(&mut self, schema: &Schema, clients: usize, tuples: u64, stride: u64) -> Result<u64> {
        match self {
            Watch::Sqlite(w) => w.check(schema, clients, tuples, stride),
            Watch::Postgres(w) => w.check(schema, clients, tuples, stride),
        }
    }
}

fn scenario(
    runtime: &tokio::runtime::Runtime,
    args: &ServerBenchArgs,
    pg: Option<&PgTarget>,
    reference: Option<&Path>,
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
        Some(raw_limit(tmp.path(), pg, schema, args, clients)?)
    };
    let (server, addr) = match args.addr {
        Some(addr) => (None, addr),
        None => {
            let mut config = ServerConfig::new(tmp.path());
            config.listen = vec![SocketAddr::from(([127, 0, 0, 1], 0))];
            config.idle_timeout = None;
            if let Some(pg) = pg {
                config.backend = ::server::Backend::Postgres(pg.opts.clone());
            }
            let server = runtime.block_on(Server::start(config))?;
            let addr = server.local_addrs()[0];
            (Some(server), addr)
        }
    };
    let data_dir = match (&server, &args.db) {
        (Some(_), _) => Some(tmp.path().to_owned()),
        (None, db) => db.clone(),
    };
    let bar = progress(args.tuples, &format!("{content} x{clients}"));
    let replay = Replay::connect(addr, sessions)?;
    let t0 = replay.start();
    let watch = match (pg, &data_dir) {
        (Some(_), _) => Some(Watch::open(pg, tmp.path(), &domain, schema)?),
        (None, Some(dir)) => Some(Watch::open(None, dir, &domain, schema)?),
        (None, None) => None,
    };
    let (t1, checked) = match watch {
        Some(mut watch) => {
            let t1 = watch.wait_for(args.tuples, Duration::from_secs(60), &bar)?;
            replay.join()?;
            let checked = watch.check(schema, clients, args.tuples, args.check_every)?;
            (t1, Some(checked))
        }
        None => {
            replay.join()?;
            (Instant::now(), None)
        }
    };
    bar.finish_and_clear();
    let mut commits = None;
    if let Some(server) = server {
        let counters = server.metrics().domain(&domain);
        commits = Some(counters.commits.load(std::sync::atomic::Ordering::Relaxed));
        runtime.block_on(server.shutdown());
        // An external server still holds its database; ours is done.
        if let Some(pg) = pg {
            pg.drop_database(&domain);
        }
    }
    // The limit is measured right before and right after the scenario and
    // the faster run is kept: a neighbour's load cannot flatter the ratio.
    let (raw_seconds, raw_multi_seconds) = match raw_before {
        Some(before) => {
            let after = raw_limit(tmp.path(), pg, schema, args, clients)?;
            let multi = match (before.1, after.1) {
                (Some(b), Some(a)) => Some(b.min(a)),
                _ => None,
            };
            (Some(before.0.min(after.0)), multi)
        }
        None => (None, None),
    };
    let row_insert = match pg {
        Some(pg) if args.insert_sample > 0 => Some(
            pg_raw::row_inserts(pg, schema, args.insert_sample)
                .context("one INSERT per row (reference method)")?,
        ),
        _ => None,
    };
    let reference = match reference {
        Some(bin) => {
            let tuples = args.reference_tuples.unwrap_or(match pg {
                Some(_) => reference_server::PG_DEFAULT_TUPLES.min(args.tuples),
                None => args.tuples,
            });
            Some(
                reference_server::measure(
                    bin,
                    pg,
                    schema,
                    content.content(),
                    clients,
                    tuples,
                    |domain, dir| Watch::open(pg, dir, domain, schema),
                )
                .context("the reference oml2-server")?,
            )
        }
        None => None,
    };
    Ok(Outcome {
        content: content.content().name(),
        clients,
        rows: args.tuples,
        seconds: t1.duration_since(t0).as_secs_f64(),
        raw_seconds,
        raw_multi_seconds,
        verified: checked.is_some(),
        checked_rows: checked.unwrap_or(0),
        commits,
        row_insert: row_insert.map(|rate| (args.insert_sample, rate)),
        reference,
    })
}

/// Seconds the raw limit took for the scenario's rows: prepared inserts
/// into SQLite (one row per execution, then multi-row as the store does),
/// or binary COPY into PostgreSQL (no second method).
fn raw_limit(
    dir: &Path,
    pg: Option<&PgTarget>,
    schema: &Schema,
    args: &ServerBenchArgs,
    clients: usize,
) -> Result<(f64, Option<f64>)> {
    Ok(match pg {
        None => {
            let single = raw::measure(dir, schema, args.tuples, clients, args.raw_batch, 1)
                .context("raw insert limit")?;
            let multi = raw::measure(
                dir,
                schema,
                args.tuples,
                clients,
                args.raw_batch,
                store::MULTI_ROWS,
            )
            .context("raw multi-row insert limit")?;
            (single.as_secs_f64(), Some(multi.as_secs_f64()))
        }
        Some(pg) => (
            pg_raw::copy(pg, schema, args.tuples, clients, args.raw_batch)
                .context("raw COPY limit")?
                .as_secs_f64(),
            None,
        ),
    })
}

fn progress(len: u64, name: &str) -> ProgressBar {
    crate::progress::bar(len, "{prefix:>12} {bar:40} {pos}/{len} rows", name)
}
