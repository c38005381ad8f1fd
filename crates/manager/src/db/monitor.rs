//! Monitoring snapshots and alerts.

use super::{Conn, Result, Row};
use serde::Serialize;
use utoipa::ToSchema;

/// One poll of one device.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Snapshot {
    /// Device id.
    pub device: i64,
    /// When, Unix seconds.
    pub time_unix_s: i64,
    /// `up` or `down`.
    pub status: String,
    /// Round trip of the capabilities request.
    pub latency_ms: Option<f64>,
    /// What the device answered (sessions and counters), or the error.
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
}

/// An active alert.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Alert {
    /// Device id.
    pub device: i64,
    /// `down` or `dropping`.
    pub kind: String,
    /// Raised at, Unix seconds.
    pub since: i64,
    /// What is wrong.
    pub message: String,
}

/// Stores a snapshot.
pub fn insert(c: &Conn<'_>, s: &Snapshot) -> Result<()> {
    c.execute(
        "INSERT INTO snapshots (device, time_unix_s, status, latency_ms, data) VALUES (?1, ?2, ?3, ?4, ?5)",
        (s.device, s.time_unix_s, &s.status, s.latency_ms, s.data.to_string()),
    )?;
    Ok(())
}

fn snapshot(r: &Row) -> Result<Snapshot> {
    Ok(Snapshot {
        device: r.get(0)?,
        time_unix_s: r.get(1)?,
        status: r.get(2)?,
        latency_ms: r.get(3)?,
        data: super::json_col(r.get(4)?),
    })
}

/// A device's snapshots since `since`, oldest first (at most 10 000).
pub fn since(c: &Conn<'_>, device: i64, since: i64) -> Result<Vec<Snapshot>> {
    c.query_map(
        "SELECT device, time_unix_s, status, latency_ms, data FROM snapshots
         WHERE device = ?1 AND time_unix_s >= ?2 ORDER BY id LIMIT 10000",
        [device, since],
        snapshot,
    )
}

/// The latest snapshot of a device.
pub fn latest(c: &Conn<'_>, device: i64) -> Result<Option<Snapshot>> {
    c.query_opt(
        "SELECT device, time_unix_s, status, latency_ms, data FROM snapshots
         WHERE device = ?1 ORDER BY id DESC LIMIT 1",
        [device],
        snapshot,
    )
}

/// Raises an alert unless one of that kind is active for the device.
pub fn raise(c: &Conn<'_>, device: i64, kind: &str, message: &str) -> Result<bool> {
    let active: bool = c.query_one(
        "SELECT EXISTS (SELECT 1 FROM alerts WHERE device = ?1 AND kind = ?2 AND cleared_unix_s IS NULL)",
        (device, kind),
    )?;
    if active {
        return Ok(false);
    }
    c.execute(
        "INSERT INTO alerts (device, kind, since_unix_s, message) VALUES (?1, ?2, ?3, ?4)",
        (device, kind, crate::now_s(), message),
    )?;
    Ok(true)
}

/// Clears the device's active alert of that kind, if any.
pub fn clear(c: &Conn<'_>, device: i64, kind: &str) -> Result<bool> {
    Ok(c.execute(
        "UPDATE alerts SET cleared_unix_s = ?3 WHERE device = ?1 AND kind = ?2 AND cleared_unix_s IS NULL",
        (device, kind, crate::now_s()),
    )? > 0)
}

/// Active alerts, oldest first.
pub fn active(c: &Conn<'_>) -> Result<Vec<Alert>> {
    c.query_map(
        "SELECT device, kind, since_unix_s, message FROM alerts WHERE cleared_unix_s IS NULL ORDER BY id",
        (),
        |r| {
            Ok(Alert {
                device: r.get(0)?,
                kind: r.get(1)?,
                since: r.get(2)?,
                message: r.get(3)?,
            })
        },
    )
}

/// A device's `down` alerts that overlap the time from `from` on
/// (Unix seconds): when each was raised and, if it was, cleared.
pub fn down_periods(c: &Conn<'_>, device: i64, from: i64) -> Result<Vec<(i64, Option<i64>)>> {
    c.query_map(
        "SELECT since_unix_s, cleared_unix_s FROM alerts
         WHERE device = ?1 AND kind = 'down' AND (cleared_unix_s IS NULL OR cleared_unix_s >= ?2)
         ORDER BY id",
        [device, from],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}
