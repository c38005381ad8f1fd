//! Advisory locks that let several collection servers share one
//! PostgreSQL: whoever changes a domain's catalog (creates its database, a
//! table, a sender, the start time) holds the lock, re-reads what is there
//! and only then decides, so every server takes the same decision and no
//! two run the same DDL at once (concurrent `CREATE TABLE`s of one name
//! fail with 42P07 or 23505 on `pg_type`, not with a clean "exists").
//!
//! The same holds for the rows: every commit transaction takes the
//! domain's write lock ([`writes`]) before it takes its first
//! `oml_tuple_id`, so two servers writing one domain commit one after
//! the other and ids become visible in id order. Without it, a
//! transaction that took ids 101..200 could commit after another that
//! took 201..300, and a live tail that read in between moved past 300
//! and never sent 101..200.
//!
//! Advisory locks belong to one database, so the catalog and write locks
//! are constants taken in the domain's own database, and the lock around
//! `CREATE DATABASE` is a hash of the domain taken in the maintenance
//! database. Writers that do not take them (the reference oml2-server, an
//! operator) are still tolerated by the "already exists" checks around
//! them, but their rows may become visible out of id order.

use ::postgres::Client;

use crate::error::StoreError;

/// Key of the catalog lock in each domain database (`SGCATALG` in ASCII).
pub const CATALOG_KEY: i64 = 0x5347_4341_5441_4c47;

/// Takes the domain's catalog lock until the end of the open transaction.
pub fn catalog(client: &mut Client) -> Result<(), StoreError> {
    client.execute("SELECT pg_advisory_xact_lock($1)", &[&CATALOG_KEY])?;
    Ok(())
}

/// Key of the write lock in each domain database (`SGWRITES` in ASCII),
/// taken by [`super::write::begin`] in the statement after `BEGIN`, before
/// any row takes an id; released by the transaction's end. The catalog
/// lock is a different key: catalog transactions run on the store's own
/// connection while the pump's transaction may hold this one, so sharing a
/// key would make a store wait for itself.
pub const WRITES_KEY: i64 = 0x5347_5752_4954_4553;

fn database_key(domain: &str) -> String {
    format!("streamgauge-database:{domain}")
}

/// Takes the session lock that serializes the creation of `domain`'s
/// database (on a connection to the maintenance database).
pub fn database(client: &mut Client, domain: &str) -> Result<(), StoreError> {
    client.execute(
        "SELECT pg_advisory_lock(hashtextextended($1, 0))",
        &[&database_key(domain)],
    )?;
    Ok(())
}

/// Releases the lock of [`database`].
pub fn release_database(client: &mut Client, domain: &str) -> Result<(), StoreError> {
    client.execute(
        "SELECT pg_advisory_unlock(hashtextextended($1, 0))",
        &[&database_key(domain)],
    )?;
    Ok(())
}
