//! # pgtemp — a throwaway PostgreSQL cluster
//!
//! `initdb` into a temporary directory, a server on 127.0.0.1 with a free
//! port (and its Unix socket in that directory), trust authentication,
//! `fsync = off`, a role `oml` with CREATEDB and a role `nocreate` without
//! it. Used by the store, server and CLI tests and by
//! `streamgauge bench server --pg-temp`.
//!
//! When running as root, the cluster belongs to the `postgres` user:
//! `initdb` and `pg_ctl` run through `runuser -u postgres` (PostgreSQL
//! refuses to run as root). Set `PG_BINDIR` to use binaries elsewhere than
//! `/usr/lib/postgresql/<newest>/bin`.
//!
//! A [`Cluster`] stops and deletes its directory when dropped. Tests share
//! one cluster per test binary ([`shared`]); because a `static` is never
//! dropped, a watchdog process ([`Cluster::watch_process`]) stops it once
//! the test process has exited, whether the tests passed, panicked or the
//! binary was killed.
//!
//! ```no_run
//! let cluster = pgtemp::Cluster::start()?;
//! cluster.watch_process(std::process::id())?;
//! let mut client = cluster.try_client("postgres")?;
//! let one: i32 = client.query_one("SELECT 1", &[])?.get(0);
//! assert_eq!(one, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Why a cluster could not be started or used.
#[derive(Debug, thiserror::Error)]
pub enum PgTempError {
    /// No PostgreSQL server binaries were found.
    #[error(
        "PostgreSQL server binaries not found (no /usr/lib/postgresql/*/bin/initdb, \
         PG_BINDIR unset): run `bash scripts/setup.sh` (installs the `postgresql` package)"
    )]
    NoBinaries,
    /// A local operation (temporary directory, free port, process) failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A PostgreSQL tool exited with an error.
    #[error("PostgreSQL cluster: `{command}` failed\n{logs}")]
    Command {
        /// The shell command.
        command: String,
        /// Its output, or the cluster's initdb and server logs.
        logs: String,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> PgTempError {
    let what = what.into();
    move |source| PgTempError::Io { what, source }
}

/// A running cluster.
#[derive(Debug)]
pub struct Cluster {
    /// Directory of the PostgreSQL binaries.
    bin: PathBuf,
    /// Cluster data directory (also the socket directory), owned by the
    /// user the server runs as.
    dir: PathBuf,
    /// TCP port on 127.0.0.1.
    pub port: u16,
    /// Whether the server runs as user `postgres` (we are root).
    as_postgres: bool,
}

/// The cluster of this test binary, started on first use. Panics if it
/// cannot start: for tests, where that is the right outcome.
pub fn shared() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        let c = Cluster::start().unwrap_or_else(|e| panic!("{e}"));
        c.watch_process(std::process::id())
            .unwrap_or_else(|e| panic!("{e}"));
        c
    })
}

fn bindir() -> Result<PathBuf, PgTempError> {
    if let Some(dir) = std::env::var_os("PG_BINDIR") {
        return Ok(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, p)| p.join("initdb").exists())
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, p)| p)
        .ok_or(PgTempError::NoBinaries)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// A new directory of this process's own for a cluster
/// (`<tmp>/sg-pg-<pid>-<n>`); one left by an earlier process with the same
/// pid is passed over.
fn new_dir() -> Result<PathBuf, PgTempError> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    loop {
        let dir = std::env::temp_dir().join(format!(
            "sg-pg-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(format!("creating {}", dir.display()))(e)),
        }
    }
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

impl Cluster {
    /// initdb, start, create the roles. On failure the error carries the
    /// cluster's logs, and what was started is stopped and removed.
    pub fn start() -> Result<Cluster, PgTempError> {
        let bin = bindir()?;
        let as_postgres = is_root();
        let dir = new_dir()?;
        // From here on, `Drop` cleans up if a step fails.
        let c = Cluster {
            bin,
            dir,
            // Below the ephemeral range, never given twice in a process: a
            // stopped cluster comes back on its port, which a port from
            // `bind(0)` may meanwhile be to another test's connection.
            port: testkit::free_port(),
            as_postgres,
        };
        if as_postgres {
            let status = Command::new("chown")
                .args(["postgres:postgres"])
                .arg(&c.dir)
                .status()
                .map_err(io("running chown"))?;
            if !status.success() {
                return Err(PgTempError::Command {
                    command: format!("chown postgres:postgres {}", c.dir.display()),
                    logs: "(is there a `postgres` user?)".into(),
                });
            }
        }
        let d = c.dir.display().to_string();
        c.run(&format!(
            "{} -D {}/data -A trust -U postgres --no-sync -E UTF8 --locale=C.UTF-8 >{}/initdb.log 2>&1",
            c.tool("initdb"),
            sh_quote(&d),
            sh_quote(&d)
        ))?;
        c.start_server()?;
        c.try_psql(
            "postgres",
            "CREATE ROLE oml LOGIN CREATEDB; CREATE ROLE nocreate LOGIN;",
        )?;
        Ok(c)
    }

    /// `pg_ctl start` on the cluster's port, waiting until it accepts
    /// connections.
    fn start_server(&self) -> Result<(), PgTempError> {
        let d = self.dir.display().to_string();
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
            self.port, d
        );
        self.run(&format!(
            "{} -D {}/data -l {}/server.log -w -t 60 -o {} start >/dev/null",
            self.tool("pg_ctl"),
            sh_quote(&d),
            sh_quote(&d),
            sh_quote(&opts)
        ))
    }

    /// Stops the server (`pg_ctl stop -m <mode>`: `smart`, `fast` ends the
    /// sessions, `immediate` kills everything, as a crash) and keeps the
    /// cluster, for tests of database outages; [`Cluster::restart`] brings
    /// it back on the same port.
    pub fn stop(&self, mode: &str) -> Result<(), PgTempError> {
        let d = sh_quote(&self.dir.display().to_string());
        self.run(&format!(
            "{} -D {d}/data -m {} -w stop >/dev/null",
            self.tool("pg_ctl"),
            sh_quote(mode)
        ))
    }

    /// Starts the server again after [`Cluster::stop`].
    pub fn restart(&self) -> Result<(), PgTempError> {
        self.start_server()
    }

    fn tool(&self, name: &str) -> String {
        sh_quote(&self.bin.join(name).display().to_string())
    }

    /// The command line that runs `cmd` as the cluster's owner.
    fn as_owner(&self, cmd: &str) -> Command {
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", "sh", "-c", cmd]);
            c
        } else {
            let mut c = Command::new("sh");
            c.args(["-c", cmd]);
            c
        }
    }

    /// Runs a shell command as the cluster's owner.
    fn run(&self, cmd: &str) -> Result<(), PgTempError> {
        let status = self
            .as_owner(cmd)
            .status()
            .map_err(io(format!("running `{cmd}`")))?;
        if status.success() {
            return Ok(());
        }
        let log = |f: &str| std::fs::read_to_string(self.dir.join(f)).unwrap_or_default();
        Err(PgTempError::Command {
            command: cmd.to_owned(),
            logs: format!(
                "initdb.log:\n{}\nserver.log:\n{}",
                log("initdb.log"),
                log("server.log")
            ),
        })
    }

    /// Runs SQL as the superuser `postgres` on database `db` with `psql`
    /// (so it works from async code too); returns its unaligned output.
    pub fn try_psql(&self, db: &str, sql: &str) -> Result<String, PgTempError> {
        let port = self.port.to_string();
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", "127.0.0.1", "-p", &port, "-U", "postgres"])
            .args(["-d", db, "-c", sql])
            .stdin(Stdio::null())
            .output()
            .map_err(io("running psql"))?;
        if !out.status.success() {
            return Err(PgTempError::Command {
                command: format!("psql -c {sql:?}"),
                logs: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_owned())
    }

    /// [`Cluster::try_psql`] for tests: panics on failure.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        self.try_psql(db, sql).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A blocking client on database `db` as `oml`, for tests: panics on
    /// failure. Do not use it on an async runtime thread (see [`blocking`]).
    pub fn client(&self, db: &str) -> postgres::Client {
        self.try_client(db)
            .unwrap_or_else(|e| panic!("connect to {db}: {e}"))
    }

    /// A blocking client on database `db` as `oml`.
    pub fn try_client(&self, db: &str) -> Result<postgres::Client, postgres::Error> {
        postgres::Config::new()
            .host("127.0.0.1")
            .port(self.port)
            .user("oml")
            .dbname(db)
            .connect(postgres::NoTls)
    }

    fn stop_command(&self) -> String {
        let d = sh_quote(&self.dir.display().to_string());
        format!(
            "{} -D {d}/data -m immediate stop >/dev/null 2>&1; rm -rf {d}",
            self.tool("pg_ctl"),
        )
    }

    /// Starts a detached watchdog that stops the cluster and removes its
    /// directory once process `pid` is gone (for clusters that are never
    /// dropped, or processes that may be killed).
    pub fn watch_process(&self, pid: u32) -> Result<(), PgTempError> {
        let stop = if self.as_postgres {
            format!(
                "runuser -u postgres -- sh -c {}",
                sh_quote(&self.stop_command())
            )
        } else {
            self.stop_command()
        };
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 0.5; done; {stop}; rm -rf {}",
            sh_quote(&self.dir.display().to_string())
        );
        // `setsid -f` forks the watchdog into its own session and returns.
        let status = Command::new("setsid")
            .args(["-f", "sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(io("starting the cluster watchdog (setsid)"))?;
        if !status.success() {
            return Err(PgTempError::Command {
                command: "setsid -f sh -c <watchdog>".into(),
                logs: String::new(),
            });
        }
        Ok(())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.as_owner(&self.stop_command()).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `f` on a fresh thread: the blocking `postgres` client must not run
/// on an async runtime's thread.
pub fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(f)
        .join()
        .unwrap_or_else(|_| panic!("blocking helper panicked"))
}

/// A database name no other user of this process takes.
pub fn unique_domain(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!("{prefix}_{}", N.fetch_add(1, Ordering::Relaxed))
}
