//! What a connection costs the server before it has sent a header, and
//! whether the memory comes back once many connections have closed.
//! Measured on a server of its own, whose connection limit is raised so
//! that all the connections are served at once.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};

use super::child::ServerProcess;
use super::RSS_SLACK;

/// Source addresses: 127.0.0.2 … 127.0.0.33, each under the per-source
/// limit (1024) with 10 000 connections.
const SOURCES: u32 = 32;

/// A header stopped inside its fourth line.
const PARTIAL_HEADER: &[u8] = b"protocol: 5\ndomain: memory\nsender-id: s1\napp-name: a";

/// What was measured.
#[derive(Debug, Clone)]
pub struct Costs {
    /// Connections held.
    pub connections: u64,
    /// Resident bytes per idle connection.
    pub idle: f64,
    /// Resident bytes per connection stopped inside its header.
    pub mid_header: f64,
    /// Resident memory before, with the connections inside their header,
    /// and a settling time after they closed.
    pub rss: [u64; 3],
    /// Seconds until memory was back within the slack, if it was.
    pub back: Option<f64>,
}

/// Opens `n` connections, idle then inside their header, closes them, and
/// watches memory for `settle`.
pub fn measure(n: u64, settle: Duration, log: Option<PathBuf>) -> Result<Costs> {
    let dir = tempfile::tempdir().context("creating a data directory")?;
    let srv = ServerProcess::start(dir.path(), log, Some(n as usize + 1024))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the clients' runtime")?;
    let rss0 = settled(&srv);
    let fd0 = srv.fds();
    let mut conns = rt.block_on(open(srv.omsp, n))?;
    wait(
        || srv.fds() >= fd0 + n,
        "the server to accept every connection",
    )?;
    let rss1 = settled(&srv);
    rt.block_on(async {
        for c in &mut conns {
            c.write_all(PARTIAL_HEADER).await?;
        }
        anyhow::Ok(())
    })?;
    let rss2 = settled(&srv);
    drop(conns);
    let closed = Instant::now();
    wait(|| srv.fds() <= fd0, "the server to close every connection")?;
    let slack = RSS_SLACK.max(rss0 / 10);
    let mut back = None;
    while closed.elapsed() < settle {
        if back.is_none() && srv.rss() <= rss0 + slack {
            back = Some(closed.elapsed().as_secs_f64());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let rss3 = srv.rss();
    srv.stop()?;
    Ok(Costs {
        connections: n,
        idle: rss1.saturating_sub(rss0) as f64 / n as f64,
        mid_header: rss2.saturating_sub(rss0) as f64 / n as f64,
        rss: [rss0, rss2, rss3],
        back,
    })
}

async fn open(to: SocketAddr, n: u64) -> Result<Vec<TcpStream>> {
    let mut conns = Vec::with_capacity(n as usize);
    for i in 0..n {
        let source = IpAddr::V4(Ipv4Addr::from(0x7f00_0002 + (i as u32 % SOURCES)));
        let socket = TcpSocket::new_v4()?;
        socket.bind(SocketAddr::new(source, 0))?;
        conns.push(socket.connect(to).await.context("connecting")?);
    }
    Ok(conns)
}

/// Resident memory once it has not changed by more than 64 KiB for half a
/// second (within 15 s).
fn settled(srv: &ServerProcess) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut last = srv.rss();
    let mut since = Instant::now();
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        let now = srv.rss();
        if now.abs_diff(last) > 64 << 10 {
            last = now;
            since = Instant::now();
        } else if since.elapsed() >= Duration::from_millis(500) {
            return now;
        }
    }
    last
}

fn wait(done: impl Fn() -> bool, what: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        ensure!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}
