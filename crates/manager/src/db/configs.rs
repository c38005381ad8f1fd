//! Saved capture configurations. `version` detects concurrent edits: an
//! update names the version it edits and fails when the stored one moved.

use super::{Conn, Result, Row};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Where a run's files go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Storage {
    /// `local` (files stay on the device), `sftp` or `s3`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The device's archive target (`sftp`, `s3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl Default for Storage {
    fn default() -> Storage {
        Storage {
            kind: "local".into(),
            target: None,
        }
    }
}

/// A configuration as stored and shown.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Config {
    /// Database id.
    pub id: i64,
    /// Its experiment.
    pub experiment: i64,
    /// Name, unique in the experiment.
    pub name: String,
    /// The capture device it is meant for.
    pub device: i64,
    /// Incremented by every edit.
    pub version: i64,
    /// Where files go.
    pub storage: Storage,
    /// The capture daemon's session configuration, without `name`.
    #[schema(value_type = Object)]
    pub session: serde_json::Value,
    /// The user's metadata (free JSON object).
    #[schema(value_type = Object)]
    pub metadata: serde_json::Value,
}

/// The fields a user sends.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigInput {
    /// Name, unique in the experiment.
    pub name: String,
    /// The capture device.
    pub device: i64,
    /// Where files go (default local).
    #[serde(default)]
    pub storage: Storage,
    /// Session configuration (docs/capture.md), without `name`.
    #[schema(value_type = Object)]
    pub session: serde_json::Value,
    /// Free metadata.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub metadata: serde_json::Value,
    /// PUT only: the version being edited.
    #[serde(default)]
    pub version: Option<i64>,
    /// Ignored (the path names the experiment); accepted so a fetched
    /// configuration can be sent back as it is.
    #[serde(default)]
    pub experiment: Option<i64>,
    /// Ignored, as `experiment`.
    #[serde(default)]
    pub id: Option<i64>,
}

const COLS: &str = "id, experiment, name, device, version, storage, session, metadata";

fn config(r: &Row) -> Result<Config> {
    let storage: String = r.get(5)?;
    Ok(Config {
        id: r.get(0)?,
        experiment: r.get(1)?,
        name: r.get(2)?,
        device: r.get(3)?,
        version: r.get(4)?,
        storage: serde_json::from_str(&storage).unwrap_or_default(),
        session: super::json_col(r.get(6)?),
        metadata: super::json_col(r.get(7)?),
    })
}

fn metadata_text(v: &serde_json::Value) -> String {
    if v.is_null() {
        "{}".into()
    } else {
        v.to_string()
    }
}

/// One configuration.
pub fn get(c: &Conn<'_>, id: i64) -> Result<Option<Config>> {
    c.query_opt(
        &format!("SELECT {COLS} FROM configs WHERE id = ?1"),
        [id],
        config,
    )
}

/// An experiment's configurations, by name.
pub fn list(c: &Conn<'_>, experiment: i64) -> Result<Vec<Config>> {
    c.query_map(
        &format!("SELECT {COLS} FROM configs WHERE experiment = ?1 ORDER BY name"),
        [experiment],
        config,
    )
}

/// Saves a new (validated) configuration.
pub fn create(c: &Conn<'_>, experiment: i64, i: &ConfigInput) -> Result<i64> {
    c.insert(
        "INSERT INTO configs (experiment, name, device, storage, session, metadata)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
        (
            experiment,
            &i.name,
            i.device,
            serde_json::to_string(&i.storage).unwrap_or_default(),
            i.session.to_string(),
            metadata_text(&i.metadata),
        ),
    )
}

/// Replaces a configuration if its stored version is `version`.
pub fn update(c: &Conn<'_>, id: i64, version: i64, i: &ConfigInput) -> Result<bool> {
    let n = c.execute(
        "UPDATE configs SET name = ?3, device = ?4, storage = ?5, session = ?6, metadata = ?7,
             version = version + 1 WHERE id = ?1 AND version = ?2",
        (
            id,
            version,
            &i.name,
            i.device,
            serde_json::to_string(&i.storage).unwrap_or_default(),
            i.session.to_string(),
            metadata_text(&i.metadata),
        ),
    )?;
    Ok(n == 1)
}

/// Deletes a configuration (refused while runs use it: 409).
pub fn delete(c: &Conn<'_>, id: i64) -> Result<u64> {
    c.execute("DELETE FROM configs WHERE id = ?1", [id])
}
