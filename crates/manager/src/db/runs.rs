//! Runs (a configuration applied to one or more devices), their
//! per-device state and their event log.

use super::{Conn, Result, Row};
use serde::Serialize;
use utoipa::ToSchema;

/// One device of a run.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RunDevice {
    /// Device id.
    pub device: i64,
    /// The capture session's name on that device.
    pub session: String,
    /// `created`, `running`, `paused`, `stopped` or `failed`.
    pub state: String,
    /// Why it failed (or a note on its last transition).
    pub reason: Option<String>,
    /// Whether the session exists on the device (created there).
    #[serde(skip)]
    pub created_on_device: bool,
}

/// A run as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Run {
    /// Database id.
    pub id: i64,
    /// Its experiment.
    pub experiment: i64,
    /// The configuration it applies.
    pub config: i64,
    /// `created`, `running`, `paused`, `stopped`, `failed` or `partial`.
    pub state: String,
    /// Creation time, Unix seconds.
    pub created_unix_s: i64,
    /// Per-device state.
    pub devices: Vec<RunDevice>,
}

/// One event of a run's log.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RunEvent {
    /// When, Unix seconds (fractional).
    pub time_unix_s: f64,
    /// What happened.
    pub message: String,
}

fn run(r: &Row) -> Result<Run> {
    Ok(Run {
        id: r.get(0)?,
        experiment: r.get(1)?,
        config: r.get(2)?,
        state: r.get(3)?,
        created_unix_s: r.get(4)?,
        devices: Vec::new(),
    })
}

fn with_devices(c: &Conn<'_>, mut run: Run) -> Result<Run> {
    run.devices = c.query_map(
        "SELECT device, session, state, reason, created_on_device FROM run_devices
         WHERE run = ?1 ORDER BY device",
        [run.id],
        |r| {
            Ok(RunDevice {
                device: r.get(0)?,
                session: r.get(1)?,
                state: r.get(2)?,
                reason: r.get(3)?,
                created_on_device: r.get(4)?,
            })
        },
    )?;
    Ok(run)
}

/// One run with its devices.
pub fn get(c: &Conn<'_>, id: i64) -> Result<Option<Run>> {
    let r = c.query_opt(
        "SELECT id, experiment, config, state, created_unix_s FROM runs WHERE id = ?1",
        [id],
        run,
    )?;
    r.map(|r| with_devices(c, r)).transpose()
}

/// An experiment's runs, newest first.
pub fn list(c: &Conn<'_>, experiment: i64) -> Result<Vec<Run>> {
    let found = c.query_map(
        "SELECT id, experiment, config, state, created_unix_s FROM runs
         WHERE experiment = ?1 ORDER BY id DESC",
        [experiment],
        run,
    )?;
    found.into_iter().map(|r| with_devices(c, r)).collect()
}

/// Every device of every run in `states` (the monitor's view of what
/// should be running).
pub fn active_sessions(c: &Conn<'_>) -> Result<Vec<(i64, i64, String)>> {
    c.query_map(
        "SELECT run, device, session FROM run_devices WHERE state IN ('running', 'paused')",
        (),
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
}

/// The session names on `device` of the runs of experiments `user` owns
/// or belongs to, with whether each may still be live there: what that
/// user may see of the device. Only sessions the manager created (or
/// found as the experiment's) count: a run's name alone is no claim, as
/// a session of that name on the device may be another experiment's.
pub fn sessions_of_user(c: &Conn<'_>, device: i64, user: i64) -> Result<Vec<(String, bool)>> {
    c.query_map(
        "SELECT d.session, d.state IN ('created', 'running', 'paused')
         FROM run_devices d JOIN runs r ON r.id = d.run JOIN experiments e ON e.id = r.experiment
         WHERE d.device = ?1 AND d.created_on_device
           AND (e.owner = ?2 OR EXISTS (SELECT 1 FROM experiment_members m
             WHERE m.experiment = e.id AND m.user_id = ?2))",
        [device, user],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// Whether a device of a run may still have a session on the device
/// that is not stopped: created there and `created`, `running` or
/// `paused` (a failed stop leaves the state as it was).
pub fn is_live(d: &RunDevice) -> bool {
    d.created_on_device && matches!(d.state.as_str(), "created" | "running" | "paused")
}

/// The `(run, device)` pairs of an experiment whose sessions may still
/// exist unstopped on their devices ([`is_live`]).
pub fn live_sessions(c: &Conn<'_>, experiment: i64) -> Result<Vec<(i64, i64)>> {
    c.query_map(
        "SELECT d.run, d.device FROM run_devices d JOIN runs r ON r.id = d.run
         WHERE r.experiment = ?1 AND d.created_on_device
           AND d.state IN ('created', 'running', 'paused')
         ORDER BY d.run, d.device",
        [experiment],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// Creates a run in state `created` with its devices; session names are
/// derived from the run id, so they are written after the insert.
pub fn create(
    c: &Conn<'_>,
    experiment: i64,
    config: i64,
    devices: &[i64],
    session_name: impl Fn(i64) -> String,
) -> Result<i64> {
    let id = c.insert(
        "INSERT INTO runs (experiment, config, state, created_unix_s) VALUES (?1, ?2, 'created', ?3)
         RETURNING id",
        (experiment, config, crate::now_s()),
    )?;
    let name = session_name(id);
    for d in devices {
        c.execute(
            "INSERT INTO run_devices (run, device, session, state) VALUES (?1, ?2, ?3, 'created')",
            (id, d, &name),
        )?;
    }
    Ok(id)
}

/// Records a device's state in a run.
pub fn set_device(
    c: &Conn<'_>,
    run: i64,
    device: i64,
    state: &str,
    reason: Option<&str>,
    created_on_device: bool,
) -> Result<()> {
    c.execute(
        "UPDATE run_devices SET state = ?3, reason = ?4, created_on_device = ?5
         WHERE run = ?1 AND device = ?2",
        (run, device, state, reason, created_on_device),
    )?;
    Ok(())
}

/// Records the run's overall state.
pub fn set_state(c: &Conn<'_>, run: i64, state: &str) -> Result<()> {
    c.execute("UPDATE runs SET state = ?2 WHERE id = ?1", (run, state))?;
    Ok(())
}

/// Appends to the run's log.
pub fn event(c: &Conn<'_>, run: i64, message: &str) -> Result<()> {
    c.execute(
        "INSERT INTO run_events (run, time_unix_s, message) VALUES (?1, ?2, ?3)",
        (run, crate::now_f64(), message),
    )?;
    Ok(())
}

/// The run's log, oldest first.
pub fn events(c: &Conn<'_>, run: i64) -> Result<Vec<RunEvent>> {
    c.query_map(
        "SELECT time_unix_s, message FROM run_events WHERE run = ?1 ORDER BY id",
        [run],
        |r| {
            Ok(RunEvent {
                time_unix_s: r.get(0)?,
                message: r.get(1)?,
            })
        },
    )
}
