//! Collection-server ingest rate into SQLite or PostgreSQL, against the
//! raw limit of the same rows measured in the same run (`streamgauge bench
//! server`): prepared inserts into SQLite, binary COPY into PostgreSQL, and
//! the reference oml2-server on the same workload.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ::server::{Server, ServerConfig};
use anyhow::{ensure, Context, Result};
use indicatif::ProgressBar;
use omsp::{Content, Schema};

use crate::pg::PgTarget;
use crate::pg_verify::PgWatcher;
use crate::replay::Replay;
use crate::report::{Outcome, Report};
use crate::verify::Watcher;
use crate::{pg_raw, raw, reference_server, workload};

/// The database the server stores into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// One SQLite file per domain in a data directory.
    Sqlite,
    /// One PostgreSQL database per domain.
    Postgresql,
}

impl Backend {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgresql => "postgresql",
        }
    }
}

/// The PostgreSQL server of a `Backend::Postgresql` run: every field
/// `None` (and `temp` false) means the defaults of `store::PgOptions`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PgServer {
    /// PostgreSQL: start a throwaway cluster for the run (as root, it runs
    /// as user postgres).
    #[arg(id = "pg_temp", long = "pg-temp",
          conflicts_with_all = ["pg_host", "pg_port", "pg_user", "pg_pass"])]
    pub temp: bool,
    /// PostgreSQL host [default: localhost].
    #[arg(id = "pg_host", long = "pg-host", value_name = "HOST")]
    pub host: Option<String>,
    /// PostgreSQL port [default: 5432].
    #[arg(id = "pg_port", long = "pg-port", value_name = "PORT")]
    pub port: Option<u16>,
    /// PostgreSQL user, with CREATEDB [default: oml].
    #[arg(id = "pg_user", long = "pg-user", value_name = "USER")]
    pub user: Option<String>,
    /// PostgreSQL password.
    #[arg(id = "pg_pass", long = "pg-pass", value_name = "PASS")]
    pub pass: Option<String>,
}

impl PgServer {
    /// Whether anything was set (they only make sense with PostgreSQL).
    fn is_set(&self) -> bool {
        self.temp
            || self.host.is_some()
            || self.port.is_some()
            || self.user.is_some()
            || self.pass.is_some()
    }
}

/// What to measure: the flags of `streamgauge bench server`.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Tuples per scenario, shared among its clients.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 1_000_000)]
    pub tuples: u64,
    /// Parallel client connections; one scenario per value.
    #[arg(short = 'c', long, value_name = "N,...", value_delimiter = ',', default_values_t = [1usize, 4])]
    pub clients: Vec<usize>,
    /// Content types; one scenario per value.
    #[arg(long, value_name = "TYPE,...", value_delimiter = ',', default_values = ["binary", "text"],
          value_parser = parse_content)]
    pub content: Vec<Content>,
    /// Tuple schema.
    #[arg(long, value_enum, value_name = "PRESET", default_value_t = workload::Preset::Basic)]
    pub schema: workload::Preset,
    /// Storage back end.
    #[arg(short = 'b', long, value_enum, value_name = "NAME", default_value_t = Backend::Sqlite)]
    pub backend: Backend,
    /// The PostgreSQL server (`Backend::Postgresql` only).
    #[command(flatten)]
    pub pg: PgServer,
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
}

/// `--content`: a content type by its protocol name.
fn parse_content(s: &str) -> std::result::Result<Content, String> {
    [Content::Binary, Content::Text]
        .into_iter()
        .find(|c| c.name() == s)
        .ok_or_else(|| format!("{s:?}: give binary or text"))
}

/// Runs every scenario; the report prints as a table or as JSON.
pub fn run(args: &Options) -> Result<Report> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let schema = args.schema.schema();
    let target = match args.backend {
        Backend::Sqlite => {
            ensure!(
                !args.pg.is_set(),
                "the --pg-* flags need --backend postgresql"
            );
            None
        }
        Backend::Postgresql => {
            ensure!(args.db.is_none(), "--db is for --backend sqlite");
            Some(PgTarget::open(&args.pg)?)
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
            .with_context(|| format!("scenario {} x{clients}", content.name()))?;
            outcomes.push(outcome);
        }
    }
    Ok(Report {
        backend: args.backend.name(),
        schema: args.schema.name(),
        outcomes,
    })
}

/// A separate connection to the scenario's database.
pub(crate) enum Watch {
    /// `<data-dir>/<domain>.sq3`, read-only.
    Sqlite(Watcher),
    /// The domain's PostgreSQL database.
    Postgres(PgWatcher),
}

impl Watch {
    /// Opens `domain`'s database: PostgreSQL's, or `<dir>/<domain>.sq3`.
    pub(crate) fn open(
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

    pub(crate) fn wait_for(
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
    args: &Options,
    pg: Option<&PgTarget>,
    reference: Option<&Path>,
    schema: &Schema,
    content: Content,
    clients: usize,
) -> Result<Outcome> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?;
    let domain = format!(
        "bench_{}_{clients}_{}_{}",
        content.name(),
        std::process::id(),
        now.subsec_nanos()
    );
    let sessions = (0..clients)
        .map(|c| {
            let n = workload::share(args.tuples, clients, c);
            workload::encode_session(schema, content, &domain, c, n, now.as_secs() as i64)
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
    let bar = progress(args.tuples, &format!("{} x{clients}", content.name()));
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
                    content,
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
        content: content.name(),
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
    args: &Options,
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
