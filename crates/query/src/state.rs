//! What the API reads from and how: the backend, the time budget of each
//! query, and the commit feed that wakes live tails.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use omsp::names::is_valid_domain;
use store::PgOptions;
use tokio::sync::watch;

use crate::export::{ExportError, Pg, Source};
use crate::tiles::TileCache;

/// Tells tails that a domain has new rows. The server bumps the value
/// after each commit of that domain.
pub trait CommitFeed: Send + Sync + 'static {
    /// A receiver whose value changes after each commit of `domain`.
    fn subscribe(&self, domain: &str) -> watch::Receiver<u64>;

    /// The highest `oml_tuple_id` of `table` that the writer's latest
    /// commit left (every row up to it is committed), if the writer
    /// published it recently; `None` if unknown. On PostgreSQL, live
    /// readers stop their scans there: beyond it lie the rows of the
    /// writer's open transaction, each checked and found invisible.
    fn committed_end(&self, _domain: &str, _table: &str) -> Option<i64> {
        None
    }

    /// Rows of `table` a recent commit stored, if the writer handed them
    /// over (see [`store::postgres::committed`]): the batch holding the
    /// row right after id `after`, or else the earliest batch beyond it
    /// (the rows in between were committed before it and are read from
    /// the table). Live readers use them instead of reading rows back.
    fn committed_rows(
        &self,
        _domain: &str,
        _table: &str,
        _after: i64,
    ) -> Option<Arc<store::postgres::CommittedRows>> {
        None
    }
}

/// Live tails a server keeps open at once unless configured otherwise:
/// each holds one or two database connections (a SQLite file's
/// descriptors, or a PostgreSQL backend) and a reader's memory, so a
/// bound in the hundreds keeps tails from starving ingestion of
/// descriptors and memory while leaving room for many viewers.
pub const DEFAULT_MAX_TAILS: usize = 256;

/// Where the experiment databases are.
#[derive(Debug, Clone)]
pub enum Backend {
    /// `<dir>/<domain>.sq3` files, as `streamgauge server` writes them.
    Sqlite {
        /// The server's data directory.
        dir: PathBuf,
    },
    /// One PostgreSQL database per domain.
    Postgres(PgOptions),
}

/// Shared state of the query API.
#[derive(Clone)]
pub struct QueryState {
    /// The databases.
    pub backend: Backend,
    /// Longest a query may run before it is cancelled (503); `None` = no
    /// limit. Streamed exports count their whole transfer.
    pub budget: Option<Duration>,
    /// Budget of full exports (csv, jsonl, arrow, parquet without `limit`):
    /// they legitimately take longer than interactive queries.
    pub export_budget: Option<Duration>,
    /// Wakes live tails on commits; `None`: tails poll every [`QueryState::poll`].
    pub feed: Option<Arc<dyn CommitFeed>>,
    /// Poll period of tails without a feed (and safety net with one).
    pub poll: Duration,
    /// A tail whose client is more rows behind than this is closed with a
    /// final `lagged` event (so a slow client never holds rows in memory).
    pub max_lag: u64,
    /// Pre-aggregated M4 tiles for `points=` (`None`: always computed
    /// from the rows).
    pub tiles: Option<Arc<TileCache>>,
    /// Live tails open at once; one more is answered 503 with
    /// `Retry-After` (each holds a database connection and a task).
    pub max_tails: usize,
    /// Shared readers of live tails (one per followed request).
    pub(crate) tails: Arc<crate::tail::Hub>,
    /// Tails open now, counted against `max_tails`.
    pub(crate) tail_slots: Arc<crate::tail::Slots>,
}

impl QueryState {
    /// Defaults: 10 s budget, 10 min for exports, 250 ms tail poll, 100 000
    /// rows of lag, tiles on (256 MiB), [`DEFAULT_MAX_TAILS`] tails.
    pub fn new(backend: Backend) -> QueryState {
        QueryState {
            budget: Some(Duration::from_secs(10)),
            export_budget: Some(Duration::from_secs(600)),
            feed: None,
            poll: Duration::from_millis(250),
            max_lag: 100_000,
            tiles: Some(Arc::new(TileCache::new(Some(backend.clone())))),
            max_tails: DEFAULT_MAX_TAILS,
            tails: Arc::default(),
            tail_slots: Arc::default(),
            backend,
        }
    }

    /// With a commit feed.
    pub fn with_feed(mut self, feed: Arc<dyn CommitFeed>) -> QueryState {
        self.feed = Some(feed);
        self
    }
}

impl Backend {
    /// Domains that exist, sorted. Blocking.
    pub fn domains(&self) -> Result<Vec<String>, ExportError> {
        let mut out: Vec<String> = match self {
            Backend::Sqlite { dir } => std::fs::read_dir(dir)?
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().into_string().ok()?;
                    let d = name.strip_suffix(".sq3")?;
                    is_valid_domain(d).then(|| d.to_owned())
                })
                .collect(),
            Backend::Postgres(opts) => {
                let mut c = opts.connect("postgres")?;
                c.query(
                    "SELECT datname::text FROM pg_database WHERE NOT datistemplate \
                     AND datname <> 'postgres' AND has_database_privilege(datname, 'CONNECT')",
                    &[],
                )?
                .iter()
                .map(|r| r.get::<_, String>(0))
                .filter(|d| is_valid_domain(d))
                .collect()
            }
        };
        out.sort();
        Ok(out)
    }

    /// Opens `domain` (which must be valid); `Ok(None)` if it does not exist.
    /// Blocking.
    pub fn open(&self, domain: &str) -> Result<Option<Source>, ExportError> {
        if !is_valid_domain(domain) {
            return Ok(None);
        }
        match self {
            Backend::Sqlite { dir } => {
                let path = dir.join(format!("{domain}.sq3"));
                if !path.is_file() {
                    return Ok(None);
                }
                Source::sqlite(&path).map(Some)
            }
            Backend::Postgres(opts) => match Pg::connect(&opts.config(domain)?) {
                Ok(mut c) => {
                    crate::priority::follow_thread(&mut c, opts.config(domain)?.get_hosts());
                    Ok(Some(Source::Postgres(Box::new(c))))
                }
                Err(e) if e.code() == Some(&postgres::error::SqlState::INVALID_CATALOG_NAME) => {
                    Ok(None)
                }
                Err(e) => Err(e.into()),
            },
        }
    }
}
