//! Dashboards: an experiment's named lists of plot definitions.

use super::{Conn, Result, Row};
use serde::Serialize;
use utoipa::ToSchema;

/// A dashboard as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Dashboard {
    /// Its name, unique in the experiment.
    pub name: String,
    /// Plot definitions (docs/manager.md, *Figures out*), in page order.
    #[schema(value_type = Vec<Object>)]
    pub plots: serde_json::Value,
    /// Last saved, Unix seconds.
    pub updated_unix_s: i64,
    /// Who saved it last.
    pub updated_by: String,
}

fn dashboard(r: &Row) -> Result<Dashboard> {
    Ok(Dashboard {
        name: r.get(0)?,
        plots: super::json_col(r.get(1)?),
        updated_unix_s: r.get(2)?,
        updated_by: r.get(3)?,
    })
}

/// An experiment's dashboards, the last saved first.
pub fn list(c: &Conn<'_>, experiment: i64) -> Result<Vec<Dashboard>> {
    c.query_map(
        "SELECT name, plots, updated_unix_s, updated_by FROM dashboards
         WHERE experiment = ?1 ORDER BY updated_unix_s DESC, id DESC",
        [experiment],
        dashboard,
    )
}

/// One dashboard.
pub fn get(c: &Conn<'_>, experiment: i64, name: &str) -> Result<Option<Dashboard>> {
    c.query_opt(
        "SELECT name, plots, updated_unix_s, updated_by FROM dashboards
         WHERE experiment = ?1 AND name = ?2",
        (experiment, name),
        dashboard,
    )
}

/// Saves a dashboard (created, or replaced whole).
pub fn put(c: &Conn<'_>, experiment: i64, name: &str, plots: &str, by: &str) -> Result<()> {
    c.execute(
        "INSERT INTO dashboards (experiment, name, plots, updated_unix_s, updated_by)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (experiment, name) DO UPDATE SET plots = excluded.plots,
           updated_unix_s = excluded.updated_unix_s, updated_by = excluded.updated_by",
        (experiment, name, plots, crate::now_s(), by),
    )?;
    Ok(())
}

/// Deletes a dashboard; answers whether it existed.
pub fn delete(c: &Conn<'_>, experiment: i64, name: &str) -> Result<bool> {
    Ok(c.execute(
        "DELETE FROM dashboards WHERE experiment = ?1 AND name = ?2",
        (experiment, name),
    )? > 0)
}
