//! C programs against liboml2, ours and the reference one, and the
//! `streamgauge server` they report to: what the observe runner's C
//! flavours and `streamgauge bench c-inject` / `c-observer` share.
//!
//! ```no_run
//! let tmp = tempfile::tempdir()?;
//! let ours = observe::liboml2::Lib::ours("target/debug".as_ref(), None, tmp.path())?;
//! let exe = observe::liboml2::compile("hello", "int main(void) { return 0; }", &ours, tmp.path())?;
//! # let _ = exe;
//! # Ok::<(), anyhow::Error>(())
//! ```

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

/// One liboml2 to build against.
#[derive(Debug, Clone)]
pub struct Lib {
    /// `streamgauge` or `reference`: names the executables built against it.
    pub name: &'static str,
    /// Holds `oml2/omlc.h`.
    include: PathBuf,
    /// Holds `liboml2.so` (and the `liboml2.so.9` the programs need).
    lib: PathBuf,
}

/// Where the reference suite is installed unless told otherwise
/// (`../shared/reference/build-oml.sh` installs it there).
pub fn default_reference() -> PathBuf {
    PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/oml-reference")
}

impl Lib {
    /// Our liboml2.so from `dir` (where cargo builds crates/client-ffi),
    /// headers from `include` or crates/client-ffi/include of this source
    /// tree. Linked through symlinks made in `tmp`: programs NEED the
    /// SONAME liboml2.so.9, which cargo does not create.
    pub fn ours(dir: &Path, include: Option<&Path>, tmp: &Path) -> Result<Lib> {
        let so = dir.join("liboml2.so");
        ensure!(
            so.exists(),
            "{} not found: build it with `cargo build -p client-ffi` (or give its directory)",
            so.display()
        );
        let so = so.canonicalize()?;
        let link = tmp.join("ours-lib");
        std::fs::create_dir_all(&link)?;
        for name in ["liboml2.so", "liboml2.so.9"] {
            let at = link.join(name);
            if !at.exists() {
                std::os::unix::fs::symlink(&so, at)?;
            }
        }
        Ok(Lib {
            name: "streamgauge",
            include: include.map(Path::to_path_buf).unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../client-ffi/include")
            }),
            lib: link,
        })
    }

    /// The reference suite installed under `prefix` (include/oml2, lib/liboml2.so).
    pub fn reference(prefix: &Path) -> Result<Lib> {
        ensure!(
            prefix.join("lib/liboml2.so").exists(),
            "reference liboml2 not found under {} (build it with \
             ../shared/reference/build-oml.sh, which prints where it installed it)",
            prefix.display()
        );
        Ok(Lib {
            name: "reference",
            include: prefix.join("include"),
            lib: prefix.join("lib"),
        })
    }
}

/// Writes `source` as `dir/<stem>.c` and compiles it (C99, -O2, every
/// warning an error) against `lib`; returns the executable `dir/<stem>-<lib>`.
pub fn compile(stem: &str, source: &str, lib: &Lib, dir: &Path) -> Result<PathBuf> {
    let src = dir.join(format!("{stem}.c"));
    std::fs::write(&src, source)?;
    let exe = dir.join(format!("{stem}-{}", lib.name));
    let out = Command::new("cc")
        .args(["-O2", "-std=c99", "-D_POSIX_C_SOURCE=200809L", "-pthread"])
        .args(["-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg("-I")
        .arg(&lib.include)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(&lib.lib)
        .arg("-loml2")
        .arg(format!("-Wl,-rpath,{}", lib.lib.display()))
        .output()
        .context("running cc (a C compiler is needed: apt install gcc)")?;
    ensure!(
        out.status.success(),
        "compiling {stem}.c against the {} liboml2 failed:\n{}",
        lib.name,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(exe)
}

/// `streamgauge server` in a child process, SQLite in `data_dir`, on a
/// free port of 127.0.0.1; stopped with SIGTERM on drop.
pub struct ServerProc {
    child: Child,
    /// The listening address (in the namespace the server was started in).
    pub addr: SocketAddr,
}

impl ServerProc {
    /// Starts `exe server` (`exe`: a `streamgauge` executable) through
    /// `spawn` (which may start it in another network namespace: the
    /// readiness check reads the child's own socket table) and waits until
    /// it listens.
    pub fn start(
        exe: &Path,
        data_dir: &Path,
        spawn: impl FnOnce(&mut Command) -> std::io::Result<Child>,
    ) -> Result<ServerProc> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut cmd = Command::new(exe);
        cmd.args(["server", "--bind", "127.0.0.1", "--timeout", "0"])
            .arg("--listen")
            .arg(port.to_string())
            .arg("--data-dir")
            .arg(data_dir)
            .args(["--debug-level", "-1", "--logfile"])
            .arg(data_dir.join("server.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        let child =
            spawn(&mut cmd).with_context(|| format!("starting `{} server`", exe.display()))?;
        let mut server = ServerProc {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        };
        // On failure the guard's drop stops the child.
        wait_listening(&mut server.child, port, Duration::from_secs(20))
            .with_context(|| format!("`{} server`", exe.display()))?;
        Ok(server)
    }

    /// The process id (for its CPU time).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the server at once (SIGKILL): for a server whose databases
    /// are thrown away, and which may not see SIGTERM (see `Drop`).
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// `--oml-collect` for this server.
    pub fn uri(&self) -> String {
        format!("tcp:{}:{}", self.addr.ip(), self.addr.port())
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        // SIGTERM: the server commits and closes its databases. A server
        // started by a process that blocks SIGTERM (the observe runner,
        // see its `interrupt` module) inherits the block: it is killed
        // when it has not exited after a while.
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + TERM_GRACE;
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How long a server gets to exit after SIGTERM before it is killed.
const TERM_GRACE: Duration = Duration::from_secs(5);

/// Waits until `child` listens on TCP `port` (IPv4 or IPv6) in its own
/// network namespace (its `/proc/PID/net/tcp*` tables), or fails when it
/// exits or `limit` passes.
pub fn wait_listening(child: &mut Child, port: u16, limit: Duration) -> Result<()> {
    let deadline = Instant::now() + limit;
    let pid = child.id();
    loop {
        if listens(pid, port) {
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            bail!("exited at start ({status})");
        }
        ensure!(
            Instant::now() < deadline,
            "did not listen on port {port} in {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// True if process `pid`'s namespace has a TCP socket listening on `port`.
fn listens(pid: u32, port: u16) -> bool {
    ["tcp", "tcp6"].iter().any(|t| {
        std::fs::read_to_string(format!("/proc/{pid}/net/{t}"))
            .is_ok_and(|text| listening_in(&text, port))
    })
}

/// `/proc/net/tcp` format: `sl local_address rem_address st ...`, the
/// address as HEX:PORT in hex, state 0A = LISTEN.
fn listening_in(table: &str, port: u16) -> bool {
    table.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3
            && f[3] == "0A"
            && f[1]
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
                == Some(port)
    })
}

/// Rows of `table` in the SQLite database `db` once they reach `want`, or
/// when they stopped growing for `stall` (the server commits in batches;
/// the count it reaches is returned either way).
pub fn wait_rows(db: &Path, table: &str, want: u64, stall: Duration) -> u64 {
    let count = || {
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .and_then(|c| c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0)))
            .unwrap_or(0u64)
    };
    let (mut last, mut since) = (0, Instant::now());
    loop {
        let got = count();
        if got >= want || since.elapsed() > stall {
            return got;
        }
        if got != last {
            (last, since) = (got, Instant::now());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listening_socket_is_found_by_port() {
        let t = "  sl  local_address rem_address   st tx_queue rx_queue\n   \
                 0: 0100007F:0CBB 00000000:0000 0A 00000000:00000000\n   \
                 1: 0100007F:1451 0100007F:0CBB 01 00000000:00000000\n";
        assert!(listening_in(t, 3259));
        assert!(
            !listening_in(t, 5201),
            "an established socket is not listening"
        );
    }
}
