//! Opt-in partitioning of stream tables with pg_partman, and retention.
//!
//! Why by `oml_tuple_id`: pg_partman (4.x, Debian's) partitions on a
//! timestamp, a date or an integer column. The OML layout has no absolute
//! timestamp: `oml_ts_server` is FLOAT8 seconds since the experiment's
//! start, which pg_partman refuses, and adding a timestamptz column would
//! change what `SELECT *` returns to every OML reader. `oml_tuple_id` is an
//! integer, unique, given by one sequence in arrival order, and already the
//! primary key — which PostgreSQL requires to contain the partition key.
//! So a partitioned stream table keeps the reference's columns exactly;
//! only the parent is `PARTITION BY RANGE (oml_tuple_id)`, with children of
//! `rows` ids each, kept ready ahead of the data by pg_partman.
//!
//! Retention is by time all the same: a child is dropped once every row in
//! it arrived longer ago than the retention (`max(oml_ts_server)` + the
//! start time), checked under an exclusive lock on that child, oldest child
//! first; the child holding the newest id and those ahead are never
//! dropped. pg_partman's own retention counts ids, not time, so it is not
//! used.
//!
//! Everything that changes partitions (the parent and `create_parent`,
//! new children, moving rows out of the default partition, drops) runs
//! under the domain's catalog lock, so servers sharing a domain take turns.
//! Maintenance runs in the domain's writer after commits: a cheap check of
//! the ids left before the last child at most once a second, the full
//! maintenance (with retention) every [`Partitioning::every`].

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ::postgres::error::SqlState;
use ::postgres::Client;
use omsp::metadata::SCHEMA0_NAME;
use omsp::Schema;

use super::PgStore;
use crate::error::StoreError;
use crate::sql::quote;

/// The extension's name.
pub const EXTENSION: &str = "pg_partman";

/// Schema the server creates the extension in when it may.
const DEFAULT_SCHEMA: &str = "partman";

/// The partition key.
const KEY: &str = "oml_tuple_id";

/// Longest wait for a table lock during maintenance: a long query holding
/// a table must not stall the writers queued behind a DROP.
const LOCK_TIMEOUT: &str = "1s";

/// Most often the ids left before the last child are checked.
const HEADROOM_CHECK: Duration = Duration::from_secs(1);

/// Maintenance of a table runs when fewer than this many children's worth
/// of ids are left ready.
const HEADROOM_CHILDREN: i64 = 2;

/// How partitioned tables are laid out and kept (`--pg-partition`,
/// `--pg-retention`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partitioning {
    /// Ids (rows) per child table.
    pub rows: i64,
    /// Children kept ready ahead of the newest row (pg_partman's premake).
    pub premake: i32,
    /// Drop a child once every row in it is older than this.
    pub retention: Option<Duration>,
    /// How often the full maintenance (and retention) runs while the
    /// domain is written.
    pub every: Duration,
}

impl Partitioning {
    /// `rows` ids per child, pg_partman's default premake (4), no
    /// retention, maintenance every 10 s.
    pub fn new(rows: i64) -> Partitioning {
        Partitioning {
            rows,
            premake: 4,
            retention: None,
            every: Duration::from_secs(10),
        }
    }
}

fn partman_error(msg: impl Into<String>) -> StoreError {
    StoreError::Partitioning(msg.into())
}

/// The SQL to run once, as a superuser, in `template1` (so every new
/// domain database has pg_partman) for a server role `role` that is not a
/// superuser.
pub fn setup_sql(role: &str) -> String {
    let r = quote(role);
    format!(
        "CREATE SCHEMA IF NOT EXISTS partman; \
         CREATE EXTENSION IF NOT EXISTS pg_partman SCHEMA partman; \
         GRANT ALL ON SCHEMA partman TO {r}; \
         GRANT ALL ON ALL TABLES IN SCHEMA partman TO {r}; \
         GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA partman TO {r}; \
         GRANT EXECUTE ON ALL PROCEDURES IN SCHEMA partman TO {r};"
    )
}

/// The schema pg_partman is installed in, in the connected database.
fn installed_schema(client: &mut Client) -> Result<Option<String>, StoreError> {
    Ok(client
        .query_opt(
            "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = $1",
            &[&EXTENSION],
        )?
        .map(|r| r.get(0)))
}

/// Start-up check on the maintenance database (`postgres`): the extension
/// is installed on the server, and new domain databases will have it —
/// the role is a superuser (it creates it in each) or `template1` has it.
pub fn check_available(
    maintenance: &mut Client,
    template: impl FnOnce() -> Result<Client, StoreError>,
) -> Result<(), StoreError> {
    let available = maintenance
        .query_opt(
            "SELECT 1 FROM pg_available_extensions WHERE name = $1",
            &[&EXTENSION],
        )?
        .is_some();
    if !available {
        return Err(partman_error(
            "the pg_partman extension is not installed on the PostgreSQL server \
             (Debian: apt-get install postgresql-15-partman)",
        ));
    }
    let row = maintenance.query_one(
        "SELECT current_user::text, rolsuper FROM pg_roles WHERE rolname = current_user",
        &[],
    )?;
    let (role, superuser): (String, bool) = (row.get(0), row.get(1));
    if superuser || installed_schema(&mut template()?)?.is_some() {
        return Ok(());
    }
    Err(partman_error(format!(
        "role {role:?} is not a superuser and template1 has no pg_partman, so new domain \
         databases could not be partitioned; as a superuser, run in template1: {}",
        setup_sql(&role)
    )))
}

/// Makes sure the connected domain database has pg_partman (creating it if
/// the role may) and returns its schema. Runs under the catalog lock.
pub fn ensure_extension(client: &mut Client, db: &str) -> Result<String, StoreError> {
    if let Some(schema) = installed_schema(client)? {
        return Ok(schema);
    }
    let create = format!(
        "CREATE SCHEMA IF NOT EXISTS {s}; CREATE EXTENSION IF NOT EXISTS {EXTENSION} SCHEMA {s}",
        s = DEFAULT_SCHEMA
    );
    match client.batch_execute(&create) {
        Ok(()) => Ok(DEFAULT_SCHEMA.to_owned()),
        Err(e) if e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) => {
            Err(partman_error(format!(
                "database {db} has no pg_partman and this role may not create it \
                 (as a superuser, run in that database: {})",
                setup_sql("<server role>")
            )))
        }
        Err(e) => Err(e.into()),
    }
}

/// Whether a stream table of `schema` is partitioned: every stream but
/// `_experiment_metadata`, which stays small.
pub fn applies_to(schema: &Schema) -> bool {
    schema.name != SCHEMA0_NAME
}

/// `CREATE TABLE … ;` turned into the partitioned parent's DDL.
pub fn parent_ddl(create_table: &str) -> String {
    let body = create_table.trim_end().trim_end_matches(';');
    format!("{body} PARTITION BY RANGE ({KEY});")
}

/// Hands the new (empty) parent `table` to pg_partman, which creates its
/// first children and its default partition. In the transaction that
/// created the table, under the catalog lock.
pub fn create_parent(
    client: &mut Client,
    partman: &str,
    table: &str,
    p: &Partitioning,
) -> Result<(), StoreError> {
    client.execute(
        &format!(
            "SELECT {partman}.create_parent(current_schema() || '.' || $1, $2, 'native', $3, \
             p_premake := $4, p_jobmon := false)"
        ),
        &[&table, &KEY, &p.rows.to_string(), &p.premake],
    )?;
    Ok(())
}

/// One partitioned table of the domain, as maintenance sees it.
#[derive(Debug)]
struct Parent {
    /// `schema.table` as pg_partman names it (unquoted).
    name: String,
    /// The table as SQL names it (quoted where needed).
    rel: String,
    /// Highest id the sequence handed out (0 if none yet).
    high: i64,
    /// End of the last child (exclusive), if it has any.
    top: Option<i64>,
    /// Ids per child.
    interval: i64,
}

impl Parent {
    /// Whether the ids left ready are running out (or ran out: rows went
    /// to the default partition).
    fn short(&self) -> bool {
        self.top
            .is_none_or(|top| top - self.high < HEADROOM_CHILDREN * self.interval)
    }
}

/// The bounds of each partition of the table `$1` (regclass text): its
/// name, and its `FROM`/`TO` ids (NULL for the default partition).
const BOUNDS_SQL: &str = "SELECT k.oid::regclass::text, \
       substring(b FROM 'FROM \\(''?(-?[0-9]+)''?\\)')::int8, \
       substring(b FROM 'TO \\(''?(-?[0-9]+)''?\\)')::int8 \
     FROM pg_inherits i JOIN pg_class k ON k.oid = i.inhrelid, \
       LATERAL pg_get_expr(k.relpartbound, k.oid) b \
     WHERE i.inhparent = $1::text::regclass";

/// A child partition: its name (as SQL names it) and its `FROM` and `TO`
/// ids.
type Child = (String, i64, i64);

/// The partitions of `rel`: the default partition, if any, and the
/// children, oldest first.
fn partitions(client: &mut Client, rel: &str) -> Result<(Option<String>, Vec<Child>), StoreError> {
    let mut default = None;
    let mut children = Vec::new();
    for r in client.query(BOUNDS_SQL, &[&rel])? {
        let name: String = r.get(0);
        match (r.get::<_, Option<i64>>(1), r.get::<_, Option<i64>>(2)) {
            (Some(lo), Some(hi)) => children.push((name, lo, hi)),
            _ => default = Some(name),
        }
    }
    children.sort_by_key(|c| c.1);
    Ok((default, children))
}

/// The id-partitioned stream tables pg_partman manages in this database.
fn parents(client: &mut Client, partman: &str) -> Result<Vec<Parent>, StoreError> {
    let rows = client.query(
        &format!(
            "SELECT parent_table, rel::text, partition_interval::int8, \
               COALESCE(pg_sequence_last_value(pg_get_serial_sequence(rel::text, $1)::regclass), 0) \
             FROM (SELECT parent_table, partition_interval, \
               to_regclass(format('%I.%I', split_part(parent_table, '.', 1), \
                 split_part(parent_table, '.', 2))) AS rel \
             FROM {partman}.part_config WHERE control = $1) p WHERE rel IS NOT NULL"
        ),
        &[&KEY],
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let rel: String = r.get(1);
        let (_, children) = partitions(client, &rel)?;
        out.push(Parent {
            name: r.get(0),
            top: children.iter().map(|c| c.2).max(),
            rel,
            interval: r.get(2),
            high: r.get(3),
        });
    }
    Ok(out)
}

/// A domain's maintenance state.
#[derive(Debug, Default)]
pub struct Upkeep {
    /// pg_partman's schema in the domain database, once known.
    pub schema: Option<String>,
    /// Last headroom check.
    checked: Option<Instant>,
    /// Last full maintenance.
    full: Option<Instant>,
    /// Last warning about maintenance that failed (one a minute).
    warned: Option<Instant>,
}

impl PgStore {
    /// Maintenance after a commit: children created ahead where ids run
    /// short, rows moved out of the default partition, and, every
    /// [`Partitioning::every`], every table and the retention. Failures
    /// are logged (once a minute) and retried later; they never fail the
    /// commit.
    pub(super) fn upkeep(&mut self) {
        let Some(p) = self.opts.partition.clone() else {
            return;
        };
        let Some(partman) = self.upkeep.schema.clone() else {
            return;
        };
        let due = |t: Option<Instant>, every: Duration| t.is_none_or(|t| t.elapsed() >= every);
        let full = due(self.upkeep.full, p.every);
        if !full && !due(self.upkeep.checked, HEADROOM_CHECK.min(p.every)) {
            return;
        }
        self.upkeep.checked = Some(Instant::now());
        if full {
            self.upkeep.full = Some(Instant::now());
        }
        if let Err(e) = self.maintain(&partman, &p, full) {
            if due(self.upkeep.warned, Duration::from_secs(60)) {
                self.upkeep.warned = Some(Instant::now());
                tracing::warn!(db = %self.uri, error = %e,
                    "partition maintenance failed; retrying later (rows are not affected)");
            }
        }
    }

    fn maintain(&mut self, partman: &str, p: &Partitioning, full: bool) -> Result<(), StoreError> {
        let parents = self.retry(|s| parents(&mut s.client, partman))?;
        // One table failing (a lock not granted in time) does not hold
        // back the others; the first error is reported.
        let mut first_err = None;
        for parent in parents.iter().filter(|t| full || t.short()) {
            let res = self.locked(|s| {
                s.client
                    .batch_execute(&format!("SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))?;
                empty_default(&mut s.client, partman, parent)?;
                s.client.execute(
                    &format!(
                        "SELECT {partman}.run_maintenance($1, p_analyze := false, p_jobmon := false)"
                    ),
                    &[&parent.name],
                )?;
                Ok(())
            });
            first_err = first_err.or(res.err());
        }
        if let (true, Some(keep), Some(start)) = (full, p.retention, self.start_time) {
            let horizon = horizon(keep, start);
            for parent in &parents {
                first_err = first_err.or(self.expire(parent, horizon).err());
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Drops the children of `parent` whose rows are all older than
    /// `horizon` (seconds since the start time), oldest first, each in its
    /// own locked transaction; stops at the first child it keeps.
    fn expire(&mut self, parent: &Parent, horizon: f64) -> Result<(), StoreError> {
        let (_, children) = self.retry(|s| partitions(&mut s.client, &parent.rel))?;
        for (child, _, end) in children {
            if end > parent.high {
                return Ok(());
            }
            let last_by_id = self.retry(|s| {
                Ok(s.client
                    .query_opt(
                        &format!("SELECT oml_ts_server FROM {child} ORDER BY {KEY} DESC LIMIT 1"),
                        &[],
                    )?
                    .and_then(|r| r.get::<_, Option<f64>>(0)))
            })?;
            if last_by_id.is_some_and(|ts| ts >= horizon) {
                return Ok(());
            }
            let dropped = self.locked(|s| {
                s.client.batch_execute(&format!(
                    "SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'; \
                     LOCK TABLE {child} IN ACCESS EXCLUSIVE MODE"
                ))?;
                let newest: Option<f64> = s
                    .client
                    .query_one(&format!("SELECT max(oml_ts_server) FROM {child}"), &[])?
                    .get(0);
                if newest.is_some_and(|ts| ts >= horizon) {
                    return Ok(false);
                }
                s.client.batch_execute(&format!("DROP TABLE {child}"))?;
                Ok(true)
            })?;
            if !dropped {
                return Ok(());
            }
            tracing::info!(db = %self.uri, table = %parent.name, partition = %child,
                "retention: dropped a partition whose rows are all older than the retention");
        }
        Ok(())
    }
}

/// Seconds since the start time `start` (Unix seconds) before which rows
/// are past a retention of `keep`.
fn horizon(keep: Duration, start: i64) -> f64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    now - keep.as_secs_f64() - start as f64
}

/// Moves rows that went to `parent`'s default partition (ids beyond the
/// children made ahead) into children of their own, which pg_partman
/// creates; without this, a child for those ids could not be attached.
fn empty_default(client: &mut Client, partman: &str, parent: &Parent) -> Result<(), StoreError> {
    let Some(default) = partitions(client, &parent.rel)?.0 else {
        return Ok(());
    };
    let has_rows = client
        .query_opt(&format!("SELECT 1 FROM ONLY {default} LIMIT 1"), &[])?
        .is_some();
    if !has_rows {
        return Ok(());
    }
    let moved: i64 = client
        .query_one(
            &format!(
                "SELECT {partman}.partition_data_id($1, p_batch_count := 2147483647, \
                 p_analyze := false)"
            ),
            &[&parent.name],
        )?
        .get(0);
    tracing::warn!(table = %parent.rel, rows = moved,
        "rows had gone to the default partition (ids beyond the partitions made ahead); \
         moved into partitions of their own");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_ddl_partitions_by_tuple_id() {
        assert_eq!(
            parent_ddl("CREATE TABLE \"t\" (oml_tuple_id SERIAL PRIMARY KEY, x INT4);"),
            "CREATE TABLE \"t\" (oml_tuple_id SERIAL PRIMARY KEY, x INT4) \
             PARTITION BY RANGE (oml_tuple_id);"
        );
        assert!(!applies_to(&omsp::metadata::schema0()));
        assert!(applies_to(&Schema::parse("1 t x:int32").unwrap()));
    }

    #[test]
    fn headroom() {
        let mut t = Parent {
            name: "public.t".into(),
            rel: "t".into(),
            high: 0,
            top: Some(4000),
            interval: 1000,
        };
        assert!(!t.short());
        t.high = 2001;
        assert!(t.short());
        t.top = None;
        t.high = 0;
        assert!(t.short());
    }
}
