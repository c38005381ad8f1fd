//! The event hook (`-H PROGRAM`): a helper process told about database
//! lifecycle events, one line each, on its standard input.
//!
//! Protocol (the reference's): the program must print `OML HOOK READY`
//! within 5 s of starting, else it is ignored. Then it receives
//! `DBCREATED <uri>`, `DBOPENED <uri>`, `DBCLOSED <uri>` and finally `EXIT`.
//! Unlike the reference, no empty line follows SQLite URIs.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

/// The banner a hook prints when ready (only its first 14 bytes are compared).
pub const BANNER: &str = "OML HOOK READY";

/// How long a hook may take to print its banner.
const BANNER_WAIT: Duration = Duration::from_secs(5);

/// A database lifecycle event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// A new database was created.
    DbCreated,
    /// An existing database was opened again.
    DbOpened,
    /// The last client of a database left and it was closed.
    DbClosed,
}

/// A running hook process (or none: every method is then a no-op).
#[derive(Debug, Default)]
pub struct Hook {
    /// The process and its stdin, while it works.
    inner: Mutex<Option<(Child, ChildStdin)>>,
}

impl Hook {
    /// A hook that does nothing.
    pub fn none() -> Hook {
        Hook::default()
    }

    /// Starts `program` (PATH lookup, no arguments) and waits for its
    /// banner; on any failure logs a warning and returns a disabled hook.
    pub fn start(program: &Path) -> Hook {
        match start(program) {
            Ok(pair) => Hook {
                inner: Mutex::new(Some(pair)),
            },
            Err(reason) => {
                tracing::warn!(hook = %program.display(), %reason, "event hook disabled");
                Hook::none()
            }
        }
    }

    /// Reports a database event.
    pub fn event(&self, event: HookEvent, uri: &str) {
        let verb = match event {
            HookEvent::DbCreated => "DBCREATED",
            HookEvent::DbOpened => "DBOPENED",
            HookEvent::DbClosed => "DBCLOSED",
        };
        self.send(&format!("{verb} {uri}\n"));
    }

    fn send(&self, line: &str) {
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, stdin)) = guard.as_mut() {
            if let Err(e) = stdin
                .write_all(line.as_bytes())
                .and_then(|()| stdin.flush())
            {
                tracing::warn!(error = %e, "event hook stopped reading; disabling it");
                if let Some((mut child, _)) = guard.take() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
            }
        }
    }

    /// Sends `EXIT`, closes the hook's stdin and waits briefly for it to end
    /// (killing it after 2 s).
    pub fn exit(&self) {
        self.send("EXIT\n");
        let taken = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some((mut child, stdin)) = taken {
            drop(stdin);
            let deadline = Instant::now() + Duration::from_secs(2);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn start(program: &Path) -> Result<(Child, ChildStdin), String> {
    let mut child = Command::new(program)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start: {e}"))?;
    let (stdin, stdout) = match (child.stdin.take(), child.stdout.take()) {
        (Some(i), Some(o)) => (i, o),
        _ => return Err("no pipes".into()),
    };
    let (tx, rx) = mpsc::channel();
    // Reads the banner, then keeps draining what the hook prints so it never
    // blocks on a full pipe.
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout);
        let mut first = String::new();
        let _ = tx.send(lines.read_line(&mut first).map(|_| first));
        let mut sink = String::new();
        while matches!(lines.read_line(&mut sink), Ok(n) if n > 0) {
            sink.clear();
        }
    });
    match rx.recv_timeout(BANNER_WAIT) {
        Ok(Ok(line)) if line.as_bytes().starts_with(BANNER.as_bytes()) => Ok((child, stdin)),
        other => {
            let _ = child.kill();
            let _ = child.wait();
            Err(format!("no '{BANNER}' banner within 5 s (got {other:?})"))
        }
    }
}
