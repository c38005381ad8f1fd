//! Experiments and their members.

use super::{Conn, Result, Row};
use serde::Serialize;
use utoipa::ToSchema;

/// An experiment as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Experiment {
    /// Database id.
    pub id: i64,
    /// Unique name.
    pub name: String,
    /// The domain its data carry (capture experiment, OMSP domain).
    pub domain: String,
    /// Owner's user name.
    pub owner: String,
    /// Owner's user id (authorisation; not shown).
    #[serde(skip)]
    pub owner_id: i64,
    /// Members' user names.
    pub members: Vec<String>,
    /// The collection server (device id) holding its streams.
    pub collector: Option<i64>,
    /// Free text.
    pub description: String,
    /// Incremented by every edit.
    pub version: i64,
}

const COLS: &str =
    "e.id, e.name, e.domain, u.username, e.owner, e.collector, e.description, e.version";

fn experiment(r: &Row) -> Result<Experiment> {
    Ok(Experiment {
        id: r.get(0)?,
        name: r.get(1)?,
        domain: r.get(2)?,
        owner: r.get(3)?,
        owner_id: r.get(4)?,
        members: Vec::new(),
        collector: r.get(5)?,
        description: r.get(6)?,
        version: r.get(7)?,
    })
}

fn with_members(c: &Conn<'_>, mut e: Experiment) -> Result<Experiment> {
    e.members = c.query_map(
        "SELECT u.username FROM experiment_members m JOIN users u ON u.id = m.user_id
         WHERE m.experiment = ?1 ORDER BY u.username",
        [e.id],
        |r| r.get(0),
    )?;
    Ok(e)
}

/// One experiment (whoever may see it).
pub fn get(c: &Conn<'_>, id: i64) -> Result<Option<Experiment>> {
    let e = c.query_opt(
        &format!("SELECT {COLS} FROM experiments e JOIN users u ON u.id = e.owner WHERE e.id = ?1"),
        [id],
        experiment,
    )?;
    e.map(|e| with_members(c, e)).transpose()
}

/// The experiments `user` owns or belongs to (`None`: all, for admins).
pub fn list(c: &Conn<'_>, user: Option<i64>) -> Result<Vec<Experiment>> {
    let found = c.query_map(
        &format!(
            "SELECT {COLS} FROM experiments e JOIN users u ON u.id = e.owner
             WHERE CAST(?1 AS BIGINT) IS NULL OR e.owner = ?1
                OR EXISTS (SELECT 1 FROM experiment_members m WHERE m.experiment = e.id AND m.user_id = ?1)
             ORDER BY e.name"
        ),
        [user],
        experiment,
    )?;
    found.into_iter().map(|e| with_members(c, e)).collect()
}

/// Whether `user` belongs to experiment `id` (as owner or member).
pub fn is_member(c: &Conn<'_>, id: i64, user: i64) -> Result<bool> {
    c.query_one(
        "SELECT EXISTS (SELECT 1 FROM experiments WHERE id = ?1 AND owner = ?2)
             OR EXISTS (SELECT 1 FROM experiment_members WHERE experiment = ?1 AND user_id = ?2)",
        [id, user],
    )
}

/// Whether another experiment than `except` is called `name`.
pub fn name_held(c: &Conn<'_>, name: &str, except: Option<i64>) -> Result<bool> {
    c.query_one(
        "SELECT EXISTS (SELECT 1 FROM experiments WHERE name = ?1
             AND id <> COALESCE(CAST(?2 AS BIGINT), 0))",
        (name, except),
    )
}

/// Whether another experiment than `except` holds `domain`, on any
/// collector or none (unique, see migration 4).
pub fn domain_held(c: &Conn<'_>, domain: &str, except: Option<i64>) -> Result<bool> {
    c.query_one(
        "SELECT EXISTS (SELECT 1 FROM experiments WHERE domain = ?1
             AND id <> COALESCE(CAST(?2 AS BIGINT), 0))",
        (domain, except),
    )
}

/// Creates an experiment owned by `owner`.
pub fn create(
    c: &Conn<'_>,
    name: &str,
    domain: &str,
    owner: i64,
    collector: Option<i64>,
    description: &str,
) -> Result<i64> {
    c.insert(
        "INSERT INTO experiments (name, domain, owner, collector, description)
         VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id",
        (name, domain, owner, collector, description),
    )
}

/// Edits name, domain, collector and description if the stored version
/// is `version`.
pub fn update(c: &Conn<'_>, id: i64, version: i64, e: &Experiment) -> Result<bool> {
    let n = c.execute(
        "UPDATE experiments SET name = ?3, domain = ?4, collector = ?5, description = ?6,
             version = version + 1 WHERE id = ?1 AND version = ?2",
        (id, version, &e.name, &e.domain, e.collector, &e.description),
    )?;
    Ok(n == 1)
}

/// Deletes an experiment with its configurations and runs (the caller
/// stops their sessions on the devices first: [`live_sessions`]).
pub fn delete(c: &Conn<'_>, id: i64) -> Result<u64> {
    c.execute("DELETE FROM runs WHERE experiment = ?1", [id])?;
    c.execute("DELETE FROM configs WHERE experiment = ?1", [id])?;
    // Named, not left to the cascade: a later experiment may get this id.
    c.execute("DELETE FROM dashboards WHERE experiment = ?1", [id])?;
    c.execute("DELETE FROM experiments WHERE id = ?1", [id])
}

/// Adds a member (idempotent).
pub fn add_member(c: &Conn<'_>, id: i64, user: i64) -> Result<()> {
    c.execute(
        "INSERT INTO experiment_members (experiment, user_id) VALUES (?1, ?2)
         ON CONFLICT DO NOTHING",
        [id, user],
    )?;
    Ok(())
}

/// Removes a member; returns whether they were one.
pub fn remove_member(c: &Conn<'_>, id: i64, user: i64) -> Result<bool> {
    Ok(c.execute(
        "DELETE FROM experiment_members WHERE experiment = ?1 AND user_id = ?2",
        [id, user],
    )? == 1)
}
