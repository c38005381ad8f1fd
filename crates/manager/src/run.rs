//! Running the manager as a program, and administering its database
//! offline: what `streamgauge manager`, `manager user add` and `manager
//! import-reservation` do once their flags are parsed.
//!
//! ```no_run
//! use manager::{run, ManagerConfig};
//!
//! let mut cfg = ManagerConfig::new("/var/lib/streamgauge/manager");
//! cfg.admin_password = run::admin_password(None)?;
//! run::serve(cfg, |addr| println!("manager: http://{addr}"))?;
//! # Ok::<(), manager::run::RunError>(())
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::db::users::{self, Role};
use crate::db::{Db, DbError, DbTarget};
use crate::reservation::{self, FileReservation, ImportReport, ReservationSource};
use crate::{Manager, ManagerConfig, StartError};

/// Why a manager command failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A file (password, reservation) could not be read, or a folder
    /// created.
    #[error("{action} {}", path.display())]
    File {
        /// What was being done (`reading`, `creating`).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
    /// A setting is missing or invalid; the message says what to give.
    #[error("{0}")]
    Invalid(String),
    /// The database could not be opened.
    #[error(transparent)]
    Db(#[from] DbError),
    /// A statement failed.
    #[error("{0}")]
    Query(String),
    /// The password could not be hashed.
    #[error(transparent)]
    Password(#[from] crate::auth::passwords::PasswordError),
    /// The reservation could not be read or imported.
    #[error(transparent)]
    Reservation(#[from] reservation::ReservationError),
    /// The manager did not start.
    #[error(transparent)]
    Start(#[from] StartError),
    /// A signal handler or the async runtime could not be set up.
    #[error("{context}")]
    Io {
        /// What was being done.
        context: &'static str,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
}

impl From<httpkit::ApiError> for RunError {
    fn from(e: httpkit::ApiError) -> RunError {
        RunError::Query(e.to_string())
    }
}

/// The first line of a file (a password file), without its end.
pub fn first_line(path: &Path) -> Result<String, RunError> {
    let text = std::fs::read_to_string(path).map_err(|source| RunError::File {
        action: "reading",
        path: path.to_path_buf(),
        source,
    })?;
    Ok(text.lines().next().unwrap_or("").to_owned())
}

/// The first start's admin password: the file's first line (`\r`
/// trimmed) > `STREAMGAUGE_ADMIN_PASSWORD` > none (one is generated).
pub fn admin_password(file: Option<&Path>) -> Result<Option<String>, RunError> {
    if let Some(f) = file {
        return Ok(Some(first_line(f)?.trim_end_matches('\r').to_owned()));
    }
    Ok(std::env::var("STREAMGAUGE_ADMIN_PASSWORD")
        .ok()
        .filter(|p| !p.is_empty()))
}

/// The `--db` target, with its password from `password_file` (first
/// line) or `PGPASSWORD`.
pub fn db_target(
    url: Option<&str>,
    password_file: Option<&Path>,
) -> Result<Option<DbTarget>, RunError> {
    let Some(url) = url else {
        return Ok(None);
    };
    let t = DbTarget::parse(url).map_err(RunError::Invalid)?;
    let password = match password_file {
        Some(f) => Some(first_line(f)?.trim_end_matches('\r').to_owned()),
        None => std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()),
    };
    Ok(Some(t.with_password(password)))
}

/// The database for an offline command: `target`, else
/// `<data_dir>/manager.db` (the folder created if needed).
pub fn open(target: Option<DbTarget>, data_dir: Option<&Path>) -> Result<Db, RunError> {
    if let Some(t) = target {
        return Ok(Db::connect(&t)?);
    }
    let Some(dir) = data_dir else {
        return Err(RunError::Invalid(
            "give --data-dir DIR (where manager.db is) or --db URL".into(),
        ));
    };
    std::fs::create_dir_all(dir).map_err(|source| RunError::File {
        action: "creating",
        path: dir.to_path_buf(),
        source,
    })?;
    Ok(Db::open(&dir.join("manager.db"))?)
}

/// Creates `username`, or sets an existing user's password and role;
/// audited as done by `cli`. Returns the user's id.
pub fn add_user(db: &Db, username: &str, password: &str, role: Role) -> Result<i64, RunError> {
    let hash = crate::auth::passwords::hash(password)?;
    let id = match db.with(|c| users::by_name(c, username))? {
        Some(u) => {
            db.with(|c| users::set_password(c, u.id, &hash))?;
            db.with(|c| users::set_role(c, u.id, role))?;
            u.id
        }
        None => db.with(|c| users::create(c, username, &hash, role))?.id,
    };
    crate::audit::record(db, "cli", "user.create", &format!("user/{id}"), username);
    Ok(id)
}

/// Imports a reservation file (TOML, or JSON by its extension).
pub fn import_reservation(db: &Db, file: &Path) -> Result<ImportReport, RunError> {
    let r = FileReservation::new(file).reservation()?;
    Ok(reservation::import(db, &r, "cli")?)
}

/// Validates `cfg`, starts the manager, tells `listening` its address and
/// serves until SIGTERM or SIGINT (requests in flight are finished, the
/// monitor stopped and its stream flushed).
pub fn serve(cfg: ManagerConfig, listening: impl FnOnce(SocketAddr)) -> Result<(), RunError> {
    // Every file and directory created from here on is owner-only.
    httpkit::secret::owner_only_from_now();
    cfg.validate().map_err(RunError::Invalid)?;
    let io = |context| move |source| RunError::Io { context, source };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(io("starting the async runtime"))?;
    runtime.block_on(async move {
        use tokio::signal::unix::{signal, SignalKind};
        // Installed before listening, so no signal hits the default action.
        let mut term = signal(SignalKind::terminate()).map_err(io("installing SIGTERM handler"))?;
        let mut int = signal(SignalKind::interrupt()).map_err(io("installing SIGINT handler"))?;
        let m = Manager::start(cfg).await?;
        listening(m.local_addr());
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::info!("shutting down");
        m.shutdown().await;
        Ok(())
    })
}

/// `15`, `15s`, `500ms`, `2m`, `12h` → a duration.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (e.g. 15s, 500ms, 2m, 12h)"))?;
    let scale = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (use ms, s, m, h, d)")),
    };
    if !(n.is_finite() && n > 0.0) {
        return Err(format!("{s:?}: must be positive"));
    }
    Ok(Duration::from_secs_f64(n * scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("15").unwrap(), Duration::from_secs(15));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("12h").unwrap(), Duration::from_secs(43_200));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
