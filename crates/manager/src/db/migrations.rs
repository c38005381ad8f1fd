//! Versioned schema migrations, applied in order on start.
//!
//! Each migration has one text per backend (the only SQL written twice:
//! the types differ, see [`super::sql`]) and runs once, in one transaction
//! with the row that records it in `schema_migrations`, so a crash half-way
//! leaves the previous version intact. New versions are appended; released
//! ones never change.
//!
//! On PostgreSQL several managers may start at once on one database: the
//! whole check-and-apply runs under a session advisory lock, so exactly one
//! of them applies each migration and the others find it applied. A
//! database whose version is newer than this build knows is refused rather
//! than used with a schema the queries do not expect.

use super::sql::{Conn, Error, Result};
use super::Dialect;

/// One schema version.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// Its number (ascending from 1).
    pub version: i64,
    /// The SQLite text.
    pub sqlite: &'static str,
    /// The PostgreSQL text.
    pub postgres: &'static str,
}

/// Every migration, ascending.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sqlite: V1,
        postgres: V1_PG,
    },
    Migration {
        version: 2,
        sqlite: V2,
        postgres: V2_PG,
    },
    Migration {
        version: 3,
        sqlite: V3,
        postgres: V3_PG,
    },
    Migration {
        version: 4,
        sqlite: V4,
        postgres: V4_PG,
    },
    Migration {
        version: 5,
        sqlite: V5,
        postgres: V5_PG,
    },
];

/// The advisory lock held while migrating a PostgreSQL database
/// (`SGMANAGR` in ASCII).
pub const LOCK_KEY: i64 = 0x5347_4d41_4e41_4752;

/// The first schema: every table of the management plane.
const V1: &str = "
CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('admin', 'user')),
    created_unix_s INTEGER NOT NULL
);
CREATE TABLE web_sessions (
    id_hash TEXT PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    csrf TEXT NOT NULL,
    created_unix_s INTEGER NOT NULL,
    expires_unix_s INTEGER NOT NULL
);
CREATE TABLE api_tokens (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    secret_hash TEXT NOT NULL UNIQUE,
    created_unix_s INTEGER NOT NULL,
    last_used_unix_s INTEGER
);
CREATE TABLE sites (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT ''
);
CREATE TABLE devices (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL CHECK (kind IN ('capture', 'inline', 'collector')),
    site INTEGER REFERENCES sites(id) ON DELETE SET NULL,
    hostname TEXT NOT NULL,
    port INTEGER NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    credential_ref TEXT,
    capabilities TEXT,
    status TEXT NOT NULL DEFAULT 'unknown',
    last_seen_unix_s INTEGER,
    version INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE experiments (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    domain TEXT NOT NULL,
    owner INTEGER NOT NULL REFERENCES users(id),
    collector INTEGER REFERENCES devices(id) ON DELETE SET NULL,
    description TEXT NOT NULL DEFAULT '',
    version INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE experiment_members (
    experiment INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    PRIMARY KEY (experiment, user_id)
);
CREATE TABLE configs (
    id INTEGER PRIMARY KEY,
    experiment INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    device INTEGER NOT NULL REFERENCES devices(id),
    version INTEGER NOT NULL DEFAULT 1,
    storage TEXT NOT NULL,
    session TEXT NOT NULL,
    metadata TEXT NOT NULL,
    UNIQUE (experiment, name)
);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    experiment INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    config INTEGER NOT NULL REFERENCES configs(id),
    state TEXT NOT NULL,
    created_unix_s INTEGER NOT NULL
);
CREATE TABLE run_devices (
    run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    device INTEGER NOT NULL REFERENCES devices(id),
    session TEXT NOT NULL,
    state TEXT NOT NULL,
    reason TEXT,
    created_on_device INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run, device)
);
CREATE TABLE run_events (
    id INTEGER PRIMARY KEY,
    run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    time_unix_s REAL NOT NULL,
    message TEXT NOT NULL
);
CREATE TABLE snapshots (
    id INTEGER PRIMARY KEY,
    device INTEGER NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
    time_unix_s INTEGER NOT NULL,
    status TEXT NOT NULL,
    latency_ms REAL,
    data TEXT NOT NULL
);
CREATE INDEX snapshots_device_time ON snapshots(device, time_unix_s);
CREATE TABLE alerts (
    id INTEGER PRIMARY KEY,
    device INTEGER NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    since_unix_s INTEGER NOT NULL,
    message TEXT NOT NULL,
    cleared_unix_s INTEGER
);
CREATE TABLE audit (
    id INTEGER PRIMARY KEY,
    time_unix_s INTEGER NOT NULL,
    user TEXT NOT NULL,
    action TEXT NOT NULL,
    object TEXT NOT NULL,
    summary TEXT NOT NULL
);
";

/// [`V1`] for PostgreSQL: BIGINT identities and integers, DOUBLE
/// PRECISION reals, a BOOLEAN where SQLite keeps 0/1, names compared and
/// sorted byte-wise (`COLLATE "C"`, as SQLite does), `"user"` quoted, and
/// indexes on the foreign keys that are searched.
const V1_PG: &str = r#"
CREATE TABLE users (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    username TEXT COLLATE "C" NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('admin', 'user')),
    created_unix_s BIGINT NOT NULL
);
CREATE TABLE web_sessions (
    id_hash TEXT PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    csrf TEXT NOT NULL,
    created_unix_s BIGINT NOT NULL,
    expires_unix_s BIGINT NOT NULL
);
CREATE INDEX web_sessions_user ON web_sessions(user_id);
CREATE TABLE api_tokens (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    secret_hash TEXT NOT NULL UNIQUE,
    created_unix_s BIGINT NOT NULL,
    last_used_unix_s BIGINT
);
CREATE INDEX api_tokens_user ON api_tokens(user_id);
CREATE TABLE sites (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT ''
);
CREATE TABLE devices (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL UNIQUE,
    kind TEXT NOT NULL CHECK (kind IN ('capture', 'inline', 'collector')),
    site BIGINT REFERENCES sites(id) ON DELETE SET NULL,
    hostname TEXT NOT NULL,
    port INTEGER NOT NULL CHECK (port BETWEEN 0 AND 65535),
    description TEXT NOT NULL DEFAULT '',
    credential_ref TEXT,
    capabilities TEXT,
    status TEXT NOT NULL DEFAULT 'unknown',
    last_seen_unix_s BIGINT,
    version BIGINT NOT NULL DEFAULT 1
);
CREATE TABLE experiments (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL UNIQUE,
    domain TEXT NOT NULL,
    owner BIGINT NOT NULL REFERENCES users(id),
    collector BIGINT REFERENCES devices(id) ON DELETE SET NULL,
    description TEXT NOT NULL DEFAULT '',
    version BIGINT NOT NULL DEFAULT 1
);
CREATE INDEX experiments_owner ON experiments(owner);
CREATE TABLE experiment_members (
    experiment BIGINT NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    PRIMARY KEY (experiment, user_id)
);
CREATE INDEX experiment_members_user ON experiment_members(user_id);
CREATE TABLE configs (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    experiment BIGINT NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    name TEXT COLLATE "C" NOT NULL,
    device BIGINT NOT NULL REFERENCES devices(id),
    version BIGINT NOT NULL DEFAULT 1,
    storage TEXT NOT NULL,
    session TEXT NOT NULL,
    metadata TEXT NOT NULL,
    UNIQUE (experiment, name)
);
CREATE INDEX configs_device ON configs(device);
CREATE TABLE runs (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    experiment BIGINT NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    config BIGINT NOT NULL REFERENCES configs(id),
    state TEXT NOT NULL,
    created_unix_s BIGINT NOT NULL
);
CREATE INDEX runs_experiment ON runs(experiment);
CREATE INDEX runs_config ON runs(config);
CREATE TABLE run_devices (
    run BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    device BIGINT NOT NULL REFERENCES devices(id),
    session TEXT NOT NULL,
    state TEXT NOT NULL,
    reason TEXT,
    created_on_device BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (run, device)
);
CREATE INDEX run_devices_device ON run_devices(device);
CREATE TABLE run_events (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    run BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    time_unix_s DOUBLE PRECISION NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX run_events_run ON run_events(run);
CREATE TABLE snapshots (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    device BIGINT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
    time_unix_s BIGINT NOT NULL,
    status TEXT NOT NULL,
    latency_ms DOUBLE PRECISION,
    data TEXT NOT NULL
);
CREATE INDEX snapshots_device_time ON snapshots(device, time_unix_s);
CREATE TABLE alerts (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    device BIGINT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    since_unix_s BIGINT NOT NULL,
    message TEXT NOT NULL,
    cleared_unix_s BIGINT
);
CREATE INDEX alerts_device ON alerts(device);
CREATE TABLE audit (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    time_unix_s BIGINT NOT NULL,
    "user" TEXT NOT NULL,
    action TEXT NOT NULL,
    object TEXT NOT NULL,
    summary TEXT NOT NULL
);
"#;

/// A domain belongs to one experiment per collector. Existing
/// duplicates keep their first owner (the lowest id); every later holder
/// gets `{domain (40 bytes at most)}_dup{id}`, with an audit entry saying
/// so, and the unique index is created. Their data stays under the old
/// domain, readable through the first experiment (as before, when both
/// read it); an admin can move an experiment back by editing its domain
/// with `adopt`.
macro_rules! v2 {
    ($user:literal, $now:literal) => {
        concat!(
            "INSERT INTO audit (time_unix_s, ", $user, ", action, object, summary)
SELECT ", $now, ", 'migration', 'experiment.domain_moved',
       'experiment/' || e.id,
       'domain ' || e.domain || ' is kept by experiment ' ||
       (SELECT MIN(f.id) FROM experiments f WHERE f.domain = e.domain
           AND COALESCE(f.collector, 0) = COALESCE(e.collector, 0)) ||
       '; this one now has ' || substr(e.domain, 1, 40) || '_dup' || e.id
FROM experiments e WHERE EXISTS (SELECT 1 FROM experiments f WHERE f.domain = e.domain
    AND COALESCE(f.collector, 0) = COALESCE(e.collector, 0) AND f.id < e.id);
UPDATE experiments SET domain = substr(domain, 1, 40) || '_dup' || id
WHERE EXISTS (SELECT 1 FROM experiments f WHERE f.domain = experiments.domain
    AND COALESCE(f.collector, 0) = COALESCE(experiments.collector, 0) AND f.id < experiments.id);
CREATE UNIQUE INDEX experiments_domain ON experiments (COALESCE(collector, 0), domain);
"
        )
    };
}
const V2: &str = v2!("user", "CAST(strftime('%s', 'now') AS INTEGER)");

/// [`V2`] for PostgreSQL (`user` is a reserved word there).
const V2_PG: &str = v2!("\"user\"", "EXTRACT(EPOCH FROM now())::BIGINT");

/// Version 3: how the manager authenticates each device's API (a pinned
/// certificate fingerprint or a CA file), and whether plain HTTP to it is
/// accepted. Devices registered before spoke plain HTTP; those not on a
/// loopback name keep working, marked `insecure`, which the UI shows
/// until an admin pins their certificate.
const V3: &str = "
ALTER TABLE devices ADD COLUMN tls_fingerprint TEXT;
ALTER TABLE devices ADD COLUMN ca_file TEXT;
ALTER TABLE devices ADD COLUMN insecure INTEGER NOT NULL DEFAULT 0;
UPDATE devices SET insecure = 1
 WHERE hostname NOT IN ('localhost', '127.0.0.1', '::1', '[::1]');
";

/// Version 3 for PostgreSQL (`insecure` a BOOLEAN).
const V3_PG: &str = "
ALTER TABLE devices ADD COLUMN tls_fingerprint TEXT;
ALTER TABLE devices ADD COLUMN ca_file TEXT;
ALTER TABLE devices ADD COLUMN insecure BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE devices SET insecure = TRUE
 WHERE hostname NOT IN ('localhost', '127.0.0.1', '::1', '[::1]');
";

/// Version 4: a domain belongs to one experiment, whatever its collector.
/// Per collector was not enough: a capture daemon's counters and an
/// in-line agent's records carry the experiment's domain to whatever
/// collector the device reports to, so two experiments with one domain
/// (one of them without a collector) wrote into each other's data.
/// Existing duplicates are moved as in [`V2`] (the lowest id keeps the
/// domain, audited).
macro_rules! v4 {
    ($user:literal, $now:literal) => {
        concat!(
            "INSERT INTO audit (time_unix_s, ",
            $user,
            ", action, object, summary)
SELECT ",
            $now,
            ", 'migration', 'experiment.domain_moved',
       'experiment/' || e.id,
       'domain ' || e.domain || ' is kept by experiment ' ||
       (SELECT MIN(f.id) FROM experiments f WHERE f.domain = e.domain) ||
       '; this one now has ' || substr(e.domain, 1, 40) || '_dup' || e.id
FROM experiments e WHERE EXISTS (SELECT 1 FROM experiments f WHERE f.domain = e.domain
    AND f.id < e.id);
UPDATE experiments SET domain = substr(domain, 1, 40) || '_dup' || id
WHERE EXISTS (SELECT 1 FROM experiments f WHERE f.domain = experiments.domain
    AND f.id < experiments.id);
DROP INDEX experiments_domain;
CREATE UNIQUE INDEX experiments_domain_one ON experiments (domain);
"
        )
    };
}
const V4: &str = v4!("user", "CAST(strftime('%s', 'now') AS INTEGER)");

/// [`V4`] for PostgreSQL.
const V4_PG: &str = v4!("\"user\"", "EXTRACT(EPOCH FROM now())::BIGINT");

/// Version 5: dashboards, an experiment's named lists of plot
/// definitions (the JSON the run page exports), restored on its run pages.
const V5: &str = "
CREATE TABLE dashboards (
    id INTEGER PRIMARY KEY,
    experiment INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    plots TEXT NOT NULL,
    updated_unix_s INTEGER NOT NULL,
    updated_by TEXT NOT NULL,
    UNIQUE (experiment, name)
);
";

/// [`V5`] for PostgreSQL.
const V5_PG: &str = r#"
CREATE TABLE dashboards (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    experiment BIGINT NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    name TEXT COLLATE "C" NOT NULL,
    plots TEXT NOT NULL,
    updated_unix_s BIGINT NOT NULL,
    updated_by TEXT NOT NULL,
    UNIQUE (experiment, name)
);
"#;

/// The newest version this build knows.
pub fn latest() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// The database's schema version (0: empty).
pub fn current(c: &Conn<'_>) -> Result<i64> {
    c.query_one(
        "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
        (),
    )
}

/// Every applied version with when it was applied, ascending.
pub fn applied(c: &Conn<'_>) -> Result<Vec<(i64, i64)>> {
    c.query_map(
        "SELECT version, applied_unix_s FROM schema_migrations ORDER BY version",
        (),
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// Applies every migration newer than the database's version; answers
/// the version it ends at.
pub fn apply(c: &Conn<'_>) -> Result<i64> {
    let pg = c.backend() == Dialect::Postgres;
    if pg {
        c.execute("SELECT pg_advisory_lock(?1)", [LOCK_KEY])?;
    }
    let result = apply_locked(c, pg);
    if pg {
        // Also released when the connection ends (e.g. because it failed).
        let _ = c.execute("SELECT pg_advisory_unlock(?1)", [LOCK_KEY]);
    }
    result
}

fn apply_locked(c: &Conn<'_>, pg: bool) -> Result<i64> {
    c.batch(if pg {
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version BIGINT PRIMARY KEY, applied_unix_s BIGINT NOT NULL)"
    } else {
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version INTEGER PRIMARY KEY, applied_unix_s INTEGER NOT NULL)"
    })?;
    let found = current(c)?;
    if found > latest() {
        return Err(Error::NewerSchema {
            found,
            known: latest(),
        });
    }
    let mut version = found;
    for m in MIGRATIONS.iter().filter(|m| m.version > found) {
        c.transaction(|tx| {
            tx.batch(if pg { m.postgres } else { m.sqlite })?;
            tx.execute(
                "INSERT INTO schema_migrations (version, applied_unix_s) VALUES (?1, ?2)",
                (m.version, crate::now_s()),
            )
        })?;
        tracing::info!(version = m.version, "database schema migrated");
        version = m.version;
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_once_and_records_the_version() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let conn = Conn::sqlite(&c);
        assert_eq!(apply(&conn).unwrap(), latest());
        let first = applied(&conn).unwrap();
        assert_eq!(
            apply(&conn).unwrap(),
            latest(),
            "second start changes nothing"
        );
        assert_eq!(applied(&conn).unwrap(), first);
        assert_eq!(first.len() as i64, latest());
    }

    /// A version-1 database where two experiments share a domain on one
    /// collector (possible before domains were owned) keeps working: the first
    /// keeps the domain, the second is moved and audited.
    #[test]
    fn duplicate_domains_keep_their_first_owner() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let conn = Conn::sqlite(&c);
        conn.batch(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_unix_s INTEGER NOT NULL)",
        )
        .unwrap();
        conn.batch(V1).unwrap();
        conn.batch(
            "INSERT INTO schema_migrations VALUES (1, 0);
             INSERT INTO users (id, username, password_hash, role, created_unix_s)
                 VALUES (1, 'a', 'x', 'user', 0);
             INSERT INTO experiments (id, name, domain, owner) VALUES
                 (1, '实验', '__', 1), (2, '试验', '__', 1), (3, 'other', 'other', 1);",
        )
        .unwrap();
        assert_eq!(apply(&conn).unwrap(), latest());
        let domains: Vec<String> = conn
            .query_map("SELECT domain FROM experiments ORDER BY id", (), |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(domains, ["__", "___dup2", "other"]);
        let audit: Vec<String> = conn
            .query_map("SELECT summary FROM audit", (), |r| r.get(0))
            .unwrap();
        assert_eq!(audit.len(), 1, "{audit:?}");
        assert!(audit[0].contains("kept by experiment 1"), "{audit:?}");
        let dup = conn.execute(
            "INSERT INTO experiments (name, domain, owner) VALUES ('x', 'other', 1)",
            (),
        );
        assert!(dup.is_err(), "the pair is unique now");
    }

    /// A version-3 database where an experiment without a collector
    /// shares its domain with one on a collector: the first keeps it, the
    /// second is moved and audited, and the domain is unique from then on.
    #[test]
    fn one_domain_one_experiment_whatever_the_collector() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let conn = Conn::sqlite(&c);
        conn.batch(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_unix_s INTEGER NOT NULL)",
        )
        .unwrap();
        for m in &MIGRATIONS[..3] {
            conn.batch(m.sqlite).unwrap();
        }
        conn.batch(
            "INSERT INTO schema_migrations VALUES (1, 0), (2, 0), (3, 0);
             INSERT INTO users (id, username, password_hash, role, created_unix_s)
                 VALUES (1, 'a', 'x', 'user', 0);
             INSERT INTO devices (id, name, kind, hostname, port)
                 VALUES (7, 'c', 'collector', 'localhost', 3004);
             INSERT INTO experiments (id, name, domain, owner, collector) VALUES
                 (1, 'alice', 'lab', 1, 7), (2, 'bob', 'lab', 1, NULL);",
        )
        .unwrap();
        assert_eq!(apply(&conn).unwrap(), latest());
        let domains: Vec<String> = conn
            .query_map("SELECT domain FROM experiments ORDER BY id", (), |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(domains, ["lab", "lab_dup2"]);
        let audit: Vec<String> = conn
            .query_map("SELECT summary FROM audit", (), |r| r.get(0))
            .unwrap();
        assert!(
            audit.iter().any(|a| a.contains("kept by experiment 1")),
            "{audit:?}"
        );
        let dup = conn.execute(
            "INSERT INTO experiments (name, domain, owner) VALUES ('x', 'lab', 1)",
            (),
        );
        assert!(dup.is_err(), "the domain is unique now");
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let conn = Conn::sqlite(&c);
        apply(&conn).unwrap();
        conn.execute(
            "INSERT INTO schema_migrations (version, applied_unix_s) VALUES (?1, 0)",
            [latest() + 1],
        )
        .unwrap();
        let e = apply(&conn).unwrap_err();
        assert!(matches!(e, Error::NewerSchema { .. }), "{e}");
    }

    #[test]
    fn both_texts_define_the_same_tables() {
        let tables = |sql: &str| {
            let mut t: Vec<String> = sql
                .split("CREATE TABLE ")
                .skip(1)
                .map(|x| x.split_whitespace().next().unwrap().to_owned())
                .collect();
            t.sort();
            t
        };
        for m in MIGRATIONS {
            assert_eq!(
                tables(m.sqlite),
                tables(m.postgres),
                "version {}",
                m.version
            );
        }
    }
}
