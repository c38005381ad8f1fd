//! A throwaway PostgreSQL cluster for tests: `initdb` into a temporary
//! directory, a server on 127.0.0.1 with a free port (and its Unix socket in
//! that directory), trust authentication, a role `oml` with CREATEDB and a
//! role `nocreate` without it.
//!
//! One cluster per test binary ([`shared`]), started on first use. Because a
//! `static` is never dropped, a watchdog process stops the cluster and
//! deletes its directory once the test process has exited, whether the tests
//! passed, panicked or the binary was killed. A [`Cluster`] that is not
//! shared stops and cleans up in `Drop`.
//!
//! Missing PostgreSQL binaries fail the test with a message saying what to
//! install (`bash scripts/setup.sh`); they never skip it. Set `PG_BINDIR` to
//! use binaries elsewhere than `/usr/lib/postgresql/<newest>/bin`.
//!
//! Shared by the store, server and CLI tests (included with `#[path]`).

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// A running cluster.
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

/// The cluster of this test binary.
pub fn shared() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        let c = Cluster::start();
        c.watch_process(std::process::id());
        c
    })
}

fn bindir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PG_BINDIR") {
        return PathBuf::from(dir);
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
    match versions.pop() {
        Some((_, p)) => p,
        None => panic!(
            "PostgreSQL server binaries not found (no /usr/lib/postgresql/*/bin/initdb, \
             PG_BINDIR unset): run `bash scripts/setup.sh` (installs the `postgresql` package)"
        ),
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free port")
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

impl Cluster {
    /// initdb, start, create the roles. Panics with the server log on failure.
    pub fn start() -> Cluster {
        let bin = bindir();
        let as_postgres = is_root();
        let dir =
            std::env::temp_dir().join(format!("sg-pg-{}-{}", std::process::id(), free_port()));
        std::fs::create_dir_all(&dir).unwrap();
        let c = Cluster {
            bin,
            dir,
            port: free_port(),
            as_postgres,
        };
        if as_postgres {
            let ok = Command::new("chown")
                .args(["postgres:postgres"])
                .arg(&c.dir)
                .status()
                .is_ok_and(|s| s.success());
            assert!(
                ok,
                "chown postgres {} failed (no postgres user?)",
                c.dir.display()
            );
        }
        let d = c.dir.display().to_string();
        c.run(&format!(
            "{} -D {}/data -A trust -U postgres --no-sync -E UTF8 --locale=C.UTF-8 >{}/initdb.log 2>&1",
            c.tool("initdb"),
            sh_quote(&d),
            sh_quote(&d)
        ));
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
            c.port, d
        );
        c.run(&format!(
            "{} -D {}/data -l {}/server.log -w -t 60 -o {} start >/dev/null",
            c.tool("pg_ctl"),
            sh_quote(&d),
            sh_quote(&d),
            sh_quote(&opts)
        ));
        c.psql(
            "postgres",
            "CREATE ROLE oml LOGIN CREATEDB; CREATE ROLE nocreate LOGIN;",
        );
        c
    }

    fn tool(&self, name: &str) -> String {
        sh_quote(&self.bin.join(name).display().to_string())
    }

    /// Runs a shell command as the cluster's owner; panics with the logs if it fails.
    fn run(&self, cmd: &str) {
        let status = if self.as_postgres {
            Command::new("runuser")
                .args(["-u", "postgres", "--", "sh", "-c", cmd])
                .status()
        } else {
            Command::new("sh").args(["-c", cmd]).status()
        };
        if !status.is_ok_and(|s| s.success()) {
            let log = |f: &str| std::fs::read_to_string(self.dir.join(f)).unwrap_or_default();
            panic!(
                "PostgreSQL test cluster: `{cmd}` failed\ninitdb.log:\n{}\nserver.log:\n{}",
                log("initdb.log"),
                log("server.log")
            );
        }
    }

    /// Runs SQL as the superuser `postgres` on database `db` (psql, so it
    /// works from async tests too).
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args([
                "-X",
                "-q",
                "-t",
                "-A",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                "127.0.0.1",
            ])
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-d",
                db,
                "-c",
                sql,
            ])
            .stdin(Stdio::null())
            .output()
            .expect("psql");
        assert!(
            out.status.success(),
            "psql {sql:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim_end().to_owned()
    }

    /// A blocking client on database `db` as `oml`. Do not use it on an
    /// async runtime thread (see [`blocking`]).
    pub fn client(&self, db: &str) -> postgres::Client {
        self.try_client(db)
            .unwrap_or_else(|e| panic!("connect to {db}: {e}"))
    }

    /// Like [`Cluster::client`], for a database that may not exist yet.
    pub fn try_client(&self, db: &str) -> Result<postgres::Client, postgres::Error> {
        postgres::Config::new()
            .host("127.0.0.1")
            .port(self.port)
            .user("oml")
            .dbname(db)
            .connect(postgres::NoTls)
    }

    fn stop_command(&self) -> String {
        format!(
            "{} -D {}/data -m immediate stop >/dev/null 2>&1; rm -rf {}",
            self.tool("pg_ctl"),
            sh_quote(&self.dir.display().to_string()),
            sh_quote(&self.dir.display().to_string())
        )
    }

    /// Starts a detached watchdog that stops the cluster and removes its
    /// directory once process `pid` is gone.
    fn watch_process(&self, pid: u32) {
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
        let started = Command::new("setsid")
            .args(["-f", "sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(started, "starting the cluster watchdog (setsid) failed");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let stop = self.stop_command();
        if self.as_postgres {
            let _ = Command::new("runuser")
                .args(["-u", "postgres", "--", "sh", "-c", &stop])
                .status();
        } else {
            let _ = Command::new("sh").args(["-c", &stop]).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `f` on a fresh thread: the blocking `postgres` client must not run
/// on an async runtime's thread.
pub fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(f)
        .join()
        .expect("blocking helper panicked")
}

/// A database name no other test of this run uses.
pub fn unique_domain(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!("{prefix}_{}", N.fetch_add(1, Ordering::Relaxed))
}
