//! Versioned schema migrations, applied in order on start.
//!
//! Each migration runs once, in one transaction with the row that records
//! it in `schema_migrations`, so a crash half-way leaves the previous
//! version intact. New versions are appended; released ones never change.

use rusqlite::Connection;

/// `(version, SQL)`, ascending.
pub const MIGRATIONS: &[(i64, &str)] = &[(1, V1)];

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

/// Applies every migration newer than the database's version.
pub fn apply(conn: &mut Connection) -> rusqlite::Result<i64> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version INTEGER PRIMARY KEY, applied_unix_s INTEGER NOT NULL)",
    )?;
    let current: i64 = conn.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
        [],
        |r| r.get(0),
    )?;
    let mut version = current;
    for (v, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_unix_s) VALUES (?1, ?2)",
            (v, crate::now_s()),
        )?;
        tx.commit()?;
        version = *v;
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_once_and_records_the_version() {
        let mut c = Connection::open_in_memory().unwrap();
        assert_eq!(apply(&mut c).unwrap(), 1);
        assert_eq!(apply(&mut c).unwrap(), 1, "second start changes nothing");
        let n: i64 = c
            .query_row("SELECT count(*) FROM schema_migrations", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
    }
}
