//! Results of the server ingest benchmark: one line per scenario, as a
//! table or as JSON.

use serde_json::{json, Value as Json};

/// The target: the server stores at least this fraction of the
/// raw insert rate.
pub const TARGET_RATIO: f64 = 0.8;

/// Every scenario of one `bench server` run.
#[derive(Debug, Clone)]
pub struct Report {
    /// `sqlite` or `postgresql`.
    pub backend: &'static str,
    /// The schema preset's name.
    pub schema: &'static str,
    /// One per scenario, in the order they ran.
    pub outcomes: Vec<Outcome>,
}

impl Report {
    /// The human-readable table.
    pub fn table(&self) -> String {
        table(self.backend, self.schema, &self.outcomes)
    }

    /// Machine-readable results.
    pub fn json(&self) -> Json {
        json(self.backend, self.schema, &self.outcomes)
    }
}

/// One measured scenario.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Content type (`binary`, `text`).
    pub content: &'static str,
    /// Parallel client connections.
    pub clients: usize,
    /// Rows sent (and, if verified, stored).
    pub rows: u64,
    /// First byte sent → all rows committed and visible.
    pub seconds: f64,
    /// The raw limit (SQLite prepared inserts, PostgreSQL binary COPY) for
    /// the same rows, measured beside this scenario.
    pub raw_seconds: Option<f64>,
    /// SQLite only: the same rows inserted many rows per INSERT execution,
    /// the store's own method (the best this SQLite does).
    pub raw_multi_seconds: Option<f64>,
    /// Whether the row count and the sampled values were checked.
    pub verified: bool,
    /// Sampled rows whose values were compared.
    pub checked_rows: u64,
    /// Transactions the server committed for the run (in-process server only).
    pub commits: Option<u64>,
    /// PostgreSQL, for reference: `(rows, rows/s)` of one synchronous
    /// prepared INSERT per row (the reference server's method) on a subset.
    pub row_insert: Option<(u64, f64)>,
    /// `(rows, rows/s)` of the reference oml2-server on the same workload,
    /// measured right after this scenario.
    pub reference: Option<(u64, f64)>,
}

impl Outcome {
    /// Short scenario name, e.g. `binary x4`.
    pub fn name(&self) -> String {
        format!("{} x{}", self.content, self.clients)
    }

    /// Rows per second through the server.
    pub fn rate(&self) -> f64 {
        self.rows as f64 / self.seconds
    }

    /// Rows per second of the raw inserts.
    pub fn raw_rate(&self) -> Option<f64> {
        self.raw_seconds.map(|s| self.rows as f64 / s)
    }

    /// Server rate / raw rate.
    pub fn ratio(&self) -> Option<f64> {
        self.raw_rate().map(|r| self.rate() / r)
    }

    /// Rows per second of the multi-row raw inserts.
    pub fn raw_multi_rate(&self) -> Option<f64> {
        self.raw_multi_seconds.map(|s| self.rows as f64 / s)
    }

    /// Our rate / the reference oml2-server's.
    pub fn ratio_reference(&self) -> Option<f64> {
        self.reference.map(|(_, r)| self.rate() / r)
    }

    /// Server rate / multi-row raw rate.
    pub fn ratio_multi(&self) -> Option<f64> {
        self.raw_multi_rate().map(|r| self.rate() / r)
    }
}

/// What the raw limit of a back end is.
pub fn raw_method(backend: &str) -> &'static str {
    match backend {
        "postgresql" => "binary COPY, one per batch, into a fresh table",
        _ => {
            "prepared INSERTs of one row each (multi: 64 rows each, the store's method), \
             one transaction per batch, into a fresh file"
        }
    }
}

fn table(backend: &str, schema: &str, outcomes: &[Outcome]) -> String {
    let mut out = format!(
        "{:<12} {:>9} {:>8} {:>11} {:>13} {:>6} {:>13} {:>6} {:>8}  {}\n",
        "scenario",
        "rows",
        "seconds",
        "rows/s",
        "raw rows/s",
        "ratio",
        "multi rows/s",
        "ratio",
        "commits",
        "check"
    );
    for o in outcomes {
        let raw = o.raw_rate().map_or("-".to_owned(), |r| format!("{r:.0}"));
        let ratio = o.ratio().map_or("-".to_owned(), |r| format!("{r:.2}"));
        let multi = o
            .raw_multi_rate()
            .map_or("-".to_owned(), |r| format!("{r:.0}"));
        let ratio_multi = o
            .ratio_multi()
            .map_or("-".to_owned(), |r| format!("{r:.2}"));
        let check = if o.verified {
            format!("exact ({} sampled)", o.checked_rows)
        } else {
            "not verified (no --db)".to_owned()
        };
        out.push_str(&format!(
            "{:<12} {:>9} {:>8.3} {:>11.0} {:>13} {:>6} {:>13} {:>6} {:>8}  {}\n",
            o.name(),
            o.rows,
            o.seconds,
            o.rate(),
            raw,
            ratio,
            multi,
            ratio_multi,
            o.commits.map_or("-".to_owned(), |c| c.to_string()),
            check
        ));
    }
    out.push_str(&format!(
        "backend {backend}; raw limit: {}\n",
        raw_method(backend)
    ));
    for o in outcomes {
        if let Some((rows, rate)) = o.reference {
            out.push_str(&format!(
                "{}: reference oml2-server, same run ({rows} rows, count checked): \
                 {rate:.0} rows/s; streamgauge is {:.2} x that\n",
                o.name(),
                o.rate() / rate
            ));
        }
        if let Some((rows, rate)) = o.row_insert {
            out.push_str(&format!(
                "{}: one synchronous INSERT per row (reference method, {rows} rows, \
                 extrapolated): {rate:.0} rows/s; ingest is {:.1} x that\n",
                o.name(),
                o.rate() / rate
            ));
        }
    }
    let below: Vec<String> = outcomes
        .iter()
        .filter(|o| o.ratio().is_some_and(|r| r < TARGET_RATIO))
        .map(Outcome::name)
        .collect();
    if outcomes.iter().any(|o| o.ratio().is_some()) {
        if below.is_empty() {
            out.push_str(&format!(
                "schema {schema}: every scenario at or above {TARGET_RATIO} x the raw limit\n"
            ));
        } else {
            out.push_str(&format!(
                "schema {schema}: below {TARGET_RATIO} x the raw limit: {}\n",
                below.join(", ")
            ));
        }
    }
    out
}

fn json(backend: &str, schema: &str, outcomes: &[Outcome]) -> Json {
    json!({
        "backend": backend,
        "raw_method": raw_method(backend),
        "schema": schema,
        "target_ratio": TARGET_RATIO,
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "scenarios": outcomes.iter().map(|o| json!({
            "scenario": o.name(),
            "content": o.content,
            "clients": o.clients,
            "rows": o.rows,
            "seconds": o.seconds,
            "rows_per_s": o.rate(),
            "raw_seconds": o.raw_seconds,
            "raw_rows_per_s": o.raw_rate(),
            "ratio": o.ratio(),
            "raw_multi_rows_per_s": o.raw_multi_rate(),
            "ratio_multi": o.ratio_multi(),
            "verified": o.verified,
            "checked_rows": o.checked_rows,
            "commits": o.commits,
            "row_insert_sample": o.row_insert.map(|(rows, _)| rows),
            "row_insert_rows_per_s": o.row_insert.map(|(_, rate)| rate),
            "reference_rows": o.reference.map(|(rows, _)| rows),
            "reference_rows_per_s": o.reference.map(|(_, rate)| rate),
            "ratio_to_reference": o.ratio_reference(),
        })).collect::<Vec<_>>(),
    })
}
