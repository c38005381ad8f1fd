//! The audit log: who changed what, when. Summaries never carry
//! passwords, token secrets or device credentials (the callers build them
//! from names and ids only).

use super::{Conn, Result};
use serde::Serialize;
use utoipa::ToSchema;

/// One audit entry.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AuditEntry {
    /// Entry id (ascending in time).
    pub id: i64,
    /// When, Unix seconds.
    pub time_unix_s: i64,
    /// Who (user name).
    pub user: String,
    /// What (`experiment.create`, `run.start`, …).
    pub action: String,
    /// On what (`experiment/7`).
    pub object: String,
    /// Human summary (names, never secrets).
    pub summary: String,
}

/// Appends an entry.
pub fn write(c: &Conn<'_>, user: &str, action: &str, object: &str, summary: &str) -> Result<()> {
    c.execute(
        "INSERT INTO audit (time_unix_s, \"user\", action, object, summary) VALUES (?1, ?2, ?3, ?4, ?5)",
        (crate::now_s(), user, action, object, summary),
    )?;
    Ok(())
}

/// The newest `limit` entries, newest first.
pub fn newest(c: &Conn<'_>, limit: i64) -> Result<Vec<AuditEntry>> {
    c.query_map(
        "SELECT id, time_unix_s, \"user\", action, object, summary FROM audit
         ORDER BY id DESC LIMIT ?1",
        [limit],
        |r| {
            Ok(AuditEntry {
                id: r.get(0)?,
                time_unix_s: r.get(1)?,
                user: r.get(2)?,
                action: r.get(3)?,
                object: r.get(4)?,
                summary: r.get(5)?,
            })
        },
    )
}
