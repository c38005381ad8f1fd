//! `streamgauge bench query`: on a large generated stream in SQLite and
//! PostgreSQL, measures in one run the latency of a downsampled query
//! (`points=2000`, target ≤ 200 ms) and of the same with counter rates
//! (`derive=rate`) or gaps (`gaps=3`), the throughput of full Arrow and
//! JSON exports (target ≥ 1 M rows/s for Arrow), and the same rows
//! written by the database's own CSV dump (`sqlite3 -csv`, `psql -c "COPY … TO
//! STDOUT"`) as the reference, reported as a ratio.

use std::fmt;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use omsp::Schema;
use store::{PgOptions, PgStore, Sink, SqliteOptions, SqliteStore};

use crate::exec::write_rows;
use crate::export::{columns, ExportError, Pg, Source};
use crate::request::RowsRequest;
use crate::tiles::{TileCache, TileScope};

/// The generated stream.
pub const STREAM: &str = "bench_wave";
/// Its schema: a double, an int64 counter and a uint64.
pub const SCHEMA: &str = "1 bench_wave v:double n:int64 u:uint64";

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Rows of the stream (10 million for the reference figures).
    pub rows: u64,
    /// Directory for the SQLite file (removed afterwards by the caller).
    pub dir: PathBuf,
    /// PostgreSQL to measure too (a throwaway cluster in the CLI).
    pub pg: Option<PgOptions>,
    /// `points=` of the downsampled query.
    pub points: u32,
    /// Repetitions of the downsampled query (the median is reported).
    pub repeat: usize,
    /// Also time the exact M4 query (`tiles=false`; about 10 scans).
    pub exact: bool,
    /// Rows appended after the tiles are built, to time their catch-up.
    pub append: u64,
}

impl BenchOptions {
    /// 10 M rows, points=2000, 3 repetitions, SQLite in `dir`.
    pub fn new(dir: PathBuf) -> BenchOptions {
        BenchOptions {
            rows: 10_000_000,
            dir,
            pg: None,
            points: 2000,
            repeat: 3,
            exact: false,
            append: 100_000,
        }
    }
}

/// Figures of one backend.
#[derive(Debug, Clone)]
pub struct BackendReport {
    /// `sqlite` or `postgresql`.
    pub backend: &'static str,
    /// Rows in the stream.
    pub rows: u64,
    /// Time to generate them.
    pub generate: Duration,
    /// The first downsampled query: builds the tiles (one scan) and answers.
    pub cold: Duration,
    /// Median latency of the downsampled query once the tiles exist.
    pub downsample: Duration,
    /// The exact M4 query (`tiles=false`), when asked for.
    pub exact: Option<Duration>,
    /// Memory of the tiles of the field, in bytes.
    pub tile_bytes: usize,
    /// Rows appended, and the time of the next downsampled query (which
    /// folds them into the tiles first).
    pub catch_up: (u64, Duration),
    /// `points=` with `derive=rate` (rates from every row, then M4 in
    /// memory), and the same plain query with `gaps=3` (the tiles; the
    /// gaps come from the kept rows).
    pub derived: (Duration, Duration),
    /// The physical floor of any exact answer: one scan computing
    /// `count(*), min(v), max(v)` over the stream.
    pub scan: Duration,
    /// Points it returned.
    pub points: u64,
    /// Full Arrow export: time, bytes.
    pub arrow: (Duration, u64),
    /// Full JSON export (one document, `format=json` without limit).
    pub json: (Duration, u64),
    /// Full CSV export through our writer.
    pub csv: (Duration, u64),
    /// The database's own CSV dump of the same rows (`None`: tool missing).
    pub reference: Option<(Duration, u64)>,
}

/// The whole run.
#[derive(Debug, Clone)]
pub struct BenchReport {
    /// One entry per backend measured.
    pub backends: Vec<BackendReport>,
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Creating or filling the databases failed.
    #[error("setting up the {backend} stream: {message}")]
    Setup {
        /// Which backend.
        backend: &'static str,
        /// What failed.
        message: String,
    },
    /// A measured query failed.
    #[error("{0}")]
    Query(#[from] crate::QueryError),
    /// Reading failed.
    #[error("{0}")]
    Export(#[from] ExportError),
}

fn setup(backend: &'static str) -> impl Fn(String) -> BenchError {
    move |message| BenchError::Setup { backend, message }
}

/// Runs the benchmark, printing each figure as it is measured.
pub fn run(opts: &BenchOptions) -> Result<BenchReport, BenchError> {
    let mut backends = Vec::new();
    let t = Instant::now();
    let path = sqlite_stream(opts).map_err(setup("SQLite"))?;
    let generate = t.elapsed();
    eprintln!("sqlite: {} rows generated in {generate:.1?}", opts.rows);
    let mut src = Source::sqlite(&path)?;
    let reference = sqlite3_csv(&path);
    let append = |from: u64, n: u64| -> Result<(), String> {
        let c = rusqlite::Connection::open(&path).map_err(|e| e.to_string())?;
        c.execute_batch(&format!(
            "WITH RECURSIVE n(i) AS (SELECT {from} UNION ALL SELECT i + 1 FROM n WHERE i < {last}) \
             INSERT INTO {STREAM} (oml_sender_id, oml_seq, oml_ts_client, oml_ts_server, v, n, u) \
             SELECT 1, i, i * 0.001, i * 0.001 + 0.0001, {WAVE}, i, i * 3 FROM n",
            last = from + n - 1
        ))
        .map_err(|e| e.to_string())
    };
    backends.push(measure(
        "sqlite", &mut src, opts, generate, reference, &append,
    )?);
    eprintln!("{}", backends[0]);
    if let Some(pg) = &opts.pg {
        let t = Instant::now();
        pg_stream(pg, opts.rows).map_err(setup("PostgreSQL"))?;
        let generate = t.elapsed();
        eprintln!("postgresql: {} rows generated in {generate:.1?}", opts.rows);
        let reference = psql_csv(pg);
        let client = pg
            .config(DOMAIN)
            .map_err(|e| e.to_string())
            .and_then(|c| Pg::connect(&c).map_err(|e| e.to_string()))
            .map_err(setup("PostgreSQL"))?;
        let mut src = Source::Postgres(Box::new(client));
        let append = |from: u64, n: u64| -> Result<(), String> {
            let mut c = pg.connect(DOMAIN).map_err(|e| e.to_string())?;
            c.batch_execute(&format!(
                "INSERT INTO {STREAM} (oml_sender_id, oml_seq, oml_ts_client, oml_ts_server, v, n, u) \
                 SELECT 1, i, i * 0.001, i * 0.001 + 0.0001, {WAVE}, i, i * 3 \
                 FROM generate_series({from}::int8, {last}::int8) i",
                last = from + n - 1
            ))
            .map_err(|e| e.to_string())
        };
        backends.push(measure(
            "postgresql",
            &mut src,
            opts,
            generate,
            reference,
            &append,
        )?);
        eprintln!("{}", backends[1]);
    }
    Ok(BenchReport { backends })
}

/// Domain of the generated stream.
const DOMAIN: &str = "bench_query";
/// Values of row `i`: SQLite has no sin() without its math extension, so a
/// triangle wave plus a faster sawtooth.
const WAVE: &str = "(abs((i % 20000) - 10000) / 10000.0) + (i % 7919) / 7919.0";

fn sqlite_stream(opts: &BenchOptions) -> Result<PathBuf, String> {
    let e = |e: &dyn fmt::Display| e.to_string();
    let path = opts.dir.join(format!("{DOMAIN}.sq3"));
    let _ = std::fs::remove_file(&path);
    let mut db =
        SqliteStore::open(&opts.dir, DOMAIN, SqliteOptions::default()).map_err(|x| e(&x))?;
    db.ensure_start_time(1_700_000_000).map_err(|x| e(&x))?;
    db.sender_id("bench").map_err(|x| e(&x))?;
    db.register_schema(&Schema::parse(SCHEMA).map_err(|x| e(&x))?)
        .map_err(|x| e(&x))?;
    db.close().map_err(|x| e(&x))?;
    let c = rusqlite::Connection::open(&path).map_err(|x| e(&x))?;
    c.execute_batch(&format!(
        "PRAGMA synchronous = OFF; BEGIN; \
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows}) \
         INSERT INTO {STREAM} (oml_sender_id, oml_seq, oml_ts_client, oml_ts_server, v, n, u) \
         SELECT 1, i, i * 0.001, i * 0.001 + 0.0001, {WAVE}, i, i * 3 FROM n; COMMIT;",
        rows = opts.rows
    ))
    .map_err(|x| e(&x))?;
    Ok(path)
}

fn pg_stream(pg: &PgOptions, rows: u64) -> Result<(), String> {
    let e = |e: &dyn fmt::Debug| format!("{e:?}");
    let mut db = PgStore::open(pg, DOMAIN).map_err(|x| e(&x))?;
    db.ensure_start_time(1_700_000_000).map_err(|x| e(&x))?;
    db.sender_id("bench").map_err(|x| e(&x))?;
    db.register_schema(&Schema::parse(SCHEMA).map_err(|x| e(&x))?)
        .map_err(|x| e(&x))?;
    db.commit().map_err(|x| e(&x))?;
    drop(db);
    let mut c = pg.connect(DOMAIN).map_err(|x| e(&x))?;
    c.batch_execute(&format!(
        "TRUNCATE {STREAM}; INSERT INTO {STREAM} (oml_sender_id, oml_seq, oml_ts_client, oml_ts_server, v, n, u) \
         SELECT 1, i, i * 0.001, i * 0.001 + 0.0001, {WAVE}, i, i * 3 FROM generate_series(1::int8, {rows}::int8) i; \
         ANALYZE {STREAM};"
    ))
    .map_err(|x| e(&x))?;
    Ok(())
}

/// Counts what is written.
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0 += b.len() as u64;
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn request(src: &mut Source, pairs: &[(&str, &str)]) -> Result<RowsRequest, BenchError> {
    let schema = src
        .streams()?
        .into_iter()
        .find(|s| s.name == STREAM)
        .ok_or_else(|| setup("stream")("missing".into()))?;
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let mut req = RowsRequest::parse(&pairs, &columns(&schema), 0)?;
    req.limit = None;
    Ok(req)
}

fn timed(src: &mut Source, req: &RowsRequest) -> Result<(Duration, u64), BenchError> {
    let mut out = Counter(0);
    let t = Instant::now();
    write_rows(src, STREAM, req, 1_700_000_000, &mut out, None, None)?;
    Ok((t.elapsed(), out.0))
}

/// One downsampled query (with tiles when `scope` is given): its time,
/// points and answer.
fn points_query(
    src: &mut Source,
    req: &RowsRequest,
    scope: Option<TileScope<'_>>,
) -> Result<(Duration, u64, Vec<u8>), BenchError> {
    let mut out = Vec::new();
    let t = Instant::now();
    write_rows(src, STREAM, req, 1_700_000_000, &mut out, None, scope)?;
    let took = t.elapsed();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap_or_default();
    let n = v["rows"].as_array().map_or(0, |r| r.len() as u64);
    Ok((took, n, out))
}

fn measure(
    backend: &'static str,
    src: &mut Source,
    opts: &BenchOptions,
    generate: Duration,
    reference: Option<(Duration, u64)>,
    append: &dyn Fn(u64, u64) -> Result<(), String>,
) -> Result<BackendReport, BenchError> {
    let points = opts.points.to_string();
    let req = request(
        src,
        &[
            ("points", &points),
            ("fields", "oml_ts_server,v"),
            ("format", "json"),
        ],
    )?;
    let cache = Arc::new(TileCache::new(None));
    let scope = TileScope {
        cache: &cache,
        domain: DOMAIN,
        feed: None,
    };
    let (cold, n, first) = points_query(src, &req, Some(scope))?;
    let tile_bytes = cache.bytes();
    eprintln!(
        "{backend}: points={} -> {n} points, first query (builds the tiles, {:.1} MB) {cold:.1?}",
        opts.points,
        tile_bytes as f64 / 1e6
    );
    let mut times = Vec::new();
    for _ in 0..opts.repeat.max(1) {
        times.push(points_query(src, &req, Some(scope))?.0);
    }
    times.sort();
    let downsample = times[times.len() / 2];
    eprintln!(
        "{backend}: points={} from tiles {downsample:.1?} (median of {})",
        opts.points,
        times.len()
    );
    let exact = if opts.exact {
        let (t, _, out) = points_query(src, &req, None)?;
        if out != first {
            return Err(setup(backend)(
                "the exact M4 answer differs from the tiled one".into(),
            ));
        }
        eprintln!("{backend}: exact M4 (tiles=false) {t:.1?}, same answer");
        Some(t)
    } else {
        None
    };
    let rate_req = request(
        src,
        &[
            ("points", &points),
            ("fields", "oml_ts_server,n"),
            ("derive", "rate"),
        ],
    )?;
    let (rates, _, _) = points_query(src, &rate_req, Some(scope))?;
    let gaps_req = request(
        src,
        &[
            ("points", &points),
            ("fields", "oml_ts_server,v"),
            ("gaps", "3"),
        ],
    )?;
    let (gaps, _, _) = points_query(src, &gaps_req, Some(scope))?;
    eprintln!("{backend}: points={points} with derive=rate {rates:.1?}, with gaps=3 {gaps:.1?}");
    let mut sql = crate::sql::Sql::new(src.dialect());
    sql.push(&format!(
        "SELECT CAST(count(*) AS TEXT), CAST(min(v) AS TEXT), CAST(max(v) AS TEXT) FROM {STREAM}"
    ));
    let t = Instant::now();
    src.text_rows(&sql)?;
    let scan = t.elapsed();
    eprintln!("{backend}: one full scan (count, min, max) {scan:.1?}");
    let r = request(src, &[("format", "arrow")])?;
    let arrow = timed(src, &r)?;
    eprintln!(
        "{backend}: arrow export {:.2} M rows/s",
        rate(opts.rows, arrow.0) / 1e6
    );
    let r = request(src, &[("format", "json")])?;
    let json = timed(src, &r)?;
    eprintln!(
        "{backend}: json export {:.2} M rows/s",
        rate(opts.rows, json.0) / 1e6
    );
    let r = request(src, &[("format", "csv"), ("timestamps", "raw")])?;
    let csv = timed(src, &r)?;
    let catch_up = if opts.append > 0 {
        append(opts.rows + 1, opts.append).map_err(setup(backend))?;
        let (t, _, _) = points_query(src, &req, Some(scope))?;
        eprintln!(
            "{backend}: {} rows appended; next points query (folds them in) {t:.1?}",
            opts.append
        );
        (opts.append, t)
    } else {
        (0, Duration::ZERO)
    };
    Ok(BackendReport {
        backend,
        rows: opts.rows,
        generate,
        cold,
        downsample,
        exact,
        tile_bytes,
        catch_up,
        derived: (rates, gaps),
        scan,
        points: n,
        arrow,
        json,
        csv,
        reference,
    })
}

/// `sqlite3 -csv FILE "SELECT * FROM stream"` into a counter.
fn sqlite3_csv(path: &std::path::Path) -> Option<(Duration, u64)> {
    let t = Instant::now();
    let mut child = Command::new("sqlite3")
        .arg("-csv")
        .arg(path)
        .arg(format!("SELECT * FROM {STREAM}"))
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let mut out = child.stdout.take()?;
    let n = io::copy(&mut out, &mut Counter(0)).ok()?;
    child.wait().ok()?.success().then(|| (t.elapsed(), n))
}

/// `psql -c "COPY stream TO STDOUT (FORMAT csv)"` (libpq, as a user would
/// dump the table) into a counter.
fn psql_csv(pg: &PgOptions) -> Option<(Duration, u64)> {
    let t = Instant::now();
    let mut child = Command::new("psql")
        .args(["-X", "-q", "-h", &pg.host, "-p", &pg.port.to_string()])
        .args(["-U", &pg.user, "-d", DOMAIN, "-c"])
        .arg(format!("COPY {STREAM} TO STDOUT (FORMAT csv)"))
        .env("PGPASSWORD", &pg.password)
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let mut out = child.stdout.take()?;
    let n = io::copy(&mut out, &mut Counter(0)).ok()?;
    child.wait().ok()?.success().then(|| (t.elapsed(), n))
}

fn rate(rows: u64, d: Duration) -> f64 {
    rows as f64 / d.as_secs_f64().max(1e-9)
}

impl fmt::Display for BackendReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = |x: (Duration, u64)| {
            format!(
                "{:>8.2} M rows/s ({:.2?}, {:.0} MB)",
                rate(self.rows, x.0) / 1e6,
                x.0,
                x.1 as f64 / 1e6
            )
        };
        writeln!(
            f,
            "{} — {} rows (generated in {:.1?})",
            self.backend, self.rows, self.generate
        )?;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        writeln!(
            f,
            "  downsample, cold:    {:>8.1} ms (first query: builds the tiles, {:.1} MB)",
            ms(self.cold),
            self.tile_bytes as f64 / 1e6
        )?;
        writeln!(
            f,
            "  downsample, warm:    {:>8.1} ms ({} points; target <= 200 ms)",
            ms(self.downsample),
            self.points
        )?;
        if let Some(x) = self.exact {
            writeln!(f, "  exact M4 (no tiles): {:>8.1} ms", ms(x))?;
        }
        if self.catch_up.0 > 0 {
            writeln!(
                f,
                "  after {} new rows:  {:>8.1} ms (the query folds them into the tiles)",
                self.catch_up.0,
                ms(self.catch_up.1)
            )?;
        }
        writeln!(
            f,
            "  derive=rate:         {:>8.1} ms (rates from every row, then M4)",
            ms(self.derived.0)
        )?;
        writeln!(
            f,
            "  gaps=3:              {:>8.1} ms (tiles; gaps from the kept rows)",
            ms(self.derived.1)
        )?;
        writeln!(
            f,
            "  one scan:            {:>8.1} ms (the exact query's floor; cold = {:.1} scans)",
            ms(self.scan),
            self.cold.as_secs_f64() / self.scan.as_secs_f64().max(1e-9)
        )?;
        writeln!(
            f,
            "  export arrow:        {} (target >= 1 M rows/s)",
            r(self.arrow)
        )?;
        writeln!(f, "  export json:         {}", r(self.json))?;
        writeln!(f, "  export csv:          {}", r(self.csv))?;
        match self.reference {
            Some(x) => {
                let tool = if self.backend == "sqlite" {
                    "sqlite3 -csv"
                } else {
                    "psql COPY TO (csv)"
                };
                writeln!(f, "  reference {tool}: {}", r(x))?;
                writeln!(
                    f,
                    "  ratio to reference:  arrow {:.2}  json {:.2}  csv {:.2}",
                    rate(self.rows, self.arrow.0) / rate(self.rows, x.0),
                    rate(self.rows, self.json.0) / rate(self.rows, x.0),
                    rate(self.rows, self.csv.0) / rate(self.rows, x.0)
                )
            }
            None => writeln!(f, "  reference: tool not available"),
        }
    }
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in &self.backends {
            write!(f, "{b}")?;
        }
        Ok(())
    }
}
