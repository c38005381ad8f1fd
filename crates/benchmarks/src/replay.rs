//! Sending the pre-encoded sessions over parallel TCP connections.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

/// Connections that have been opened and are waiting for the start signal.
pub struct Replay {
    /// Released once to start every client at the same moment.
    go: Arc<Barrier>,
    /// One thread per client; each ends when the server has closed its side.
    threads: Vec<JoinHandle<Result<()>>>,
}

impl Replay {
    /// Connects one client per session; nothing is sent until [`Replay::start`].
    pub fn connect(addr: SocketAddr, sessions: Vec<Vec<u8>>) -> Result<Replay> {
        let go = Arc::new(Barrier::new(sessions.len() + 1));
        let mut threads = Vec::with_capacity(sessions.len());
        for bytes in sessions {
            let mut sock =
                TcpStream::connect(addr).with_context(|| format!("connecting to {addr}"))?;
            sock.set_nodelay(true)?;
            let go = Arc::clone(&go);
            threads.push(std::thread::spawn(move || -> Result<()> {
                go.wait();
                sock.write_all(&bytes).context("sending")?;
                sock.shutdown(std::net::Shutdown::Write)?;
                // The server closes once it has decoded everything and
                // handed the rows to its writer.
                sock.set_read_timeout(Some(Duration::from_secs(600)))?;
                let mut sink = [0u8; 256];
                while sock.read(&mut sink)? > 0 {}
                Ok(())
            }));
        }
        Ok(Replay { go, threads })
    }

    /// Releases every client; returns the moment the first byte may leave.
    pub fn start(&self) -> Instant {
        let t0 = Instant::now();
        self.go.wait();
        t0
    }

    /// Waits until every client is done (the server closed each connection).
    pub fn join(self) -> Result<()> {
        for t in self.threads {
            t.join().map_err(|_| anyhow!("client thread panicked"))??;
        }
        Ok(())
    }
}
