//! The hostile clients: each attack runs as many tasks on the attackers'
//! runtime, opens connections until it has made its number of them and
//! the legitimate sender is done, then closes everything it holds.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::task::JoinSet;

/// Source addresses of the OMSP attacks: 127.0.0.2 … 127.0.0.17, as a
/// botnet would come from many hosts (each under the per-source limit);
/// the legitimate sender is 127.0.0.1.
const SOURCES: u8 = 16;

/// How long an attack connection is held before it is abandoned.
const HOLD: Duration = Duration::from_secs(2);

/// Pause before a slowloris client that the server closed reconnects.
const RECONNECT: Duration = Duration::from_secs(1);

/// Longest wait for a server's answer or close.
const ANSWER: Duration = Duration::from_secs(5);

/// One of the attacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Half-sent HTTP requests to `--http`, held open, re-sent when closed.
    Slowloris,
    /// Live tails opened and abandoned without reading.
    Tails,
    /// OMSP headers as large as the limits allow, never finished.
    Headers,
    /// OMSP connections that send what is not OMSP.
    Malformed,
}

impl Kind {
    /// The attack of `--only` `name` (`slowloris`, `tails`, `headers`,
    /// `malformed`).
    pub fn named(name: &str) -> Option<Kind> {
        match name {
            "slowloris" => Some(Kind::Slowloris),
            "tails" => Some(Kind::Tails),
            "headers" => Some(Kind::Headers),
            "malformed" => Some(Kind::Malformed),
            _ => None,
        }
    }

    /// Name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Slowloris => "slowloris on --http",
            Kind::Tails => "abandoned live tails",
            Kind::Headers => "pathological OMSP headers",
            Kind::Malformed => "malformed OMSP connections",
        }
    }
}

/// Shared state of a running attack.
#[derive(Debug, Default)]
pub struct Progress {
    /// Connections opened so far.
    pub made: AtomicU64,
    /// Connections held open now.
    pub open: AtomicU64,
    /// Set once the legitimate sender is done: finish the count, then close.
    pub stop: AtomicBool,
}

/// Where and how hard to attack.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The attack.
    pub kind: Kind,
    /// Tasks (connections in flight at once).
    pub tasks: usize,
    /// Connections to make at least.
    pub total: u64,
    /// OMSP address.
    pub omsp: SocketAddr,
    /// HTTP address.
    pub http: SocketAddr,
    /// Path of a live tail (for [`Kind::Tails`]).
    pub tail_path: String,
}

/// Runs `plan` until it has made `plan.total` connections and
/// `progress.stop` is set; every connection is closed when it returns.
pub async fn run(plan: Plan, progress: Arc<Progress>) {
    let headers = Arc::new([max_schemas_header(), max_keys_header()]);
    let mut tasks = JoinSet::new();
    for i in 0..plan.tasks {
        let (plan, progress, headers) = (plan.clone(), Arc::clone(&progress), Arc::clone(&headers));
        tasks.spawn(async move {
            let source = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + (i % SOURCES as usize) as u8));
            while !done(&progress, plan.total) {
                let n = progress.made.fetch_add(1, Ordering::Relaxed);
                progress.open.fetch_add(1, Ordering::Relaxed);
                let _ = match plan.kind {
                    Kind::Slowloris => slowloris(plan.http, &progress).await,
                    Kind::Tails => tail(plan.http, &plan.tail_path).await,
                    Kind::Headers => {
                        header(plan.omsp, source, &headers[n as usize % 2], &progress).await
                    }
                    Kind::Malformed => malformed(plan.omsp, source, n).await,
                };
                progress.open.fetch_sub(1, Ordering::Relaxed);
                if plan.kind == Kind::Slowloris && !progress.stop.load(Ordering::Relaxed) {
                    tokio::time::sleep(RECONNECT).await;
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
}

fn done(p: &Progress, total: u64) -> bool {
    p.stop.load(Ordering::Relaxed) && p.made.load(Ordering::Relaxed) >= total
}

/// Waits until the server closes `s`, `limit` passes, or the attack stops.
async fn hold(s: &mut TcpStream, limit: Duration, progress: &Progress) {
    let deadline = tokio::time::Instant::now() + limit;
    let mut buf = [0u8; 512];
    while tokio::time::Instant::now() < deadline && !progress.stop.load(Ordering::Relaxed) {
        let step = tokio::time::timeout(Duration::from_millis(200), s.read(&mut buf)).await;
        match step {
            Ok(Ok(0)) | Ok(Err(_)) => return,
            Ok(Ok(_)) | Err(_) => {}
        }
    }
}

/// A request head that never ends, held until the server closes it.
async fn slowloris(http: SocketAddr, progress: &Progress) -> std::io::Result<()> {
    let mut s = TcpStream::connect(http).await?;
    s.write_all(b"GET /api/v1/domains HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await?;
    // Held until the server gives up on it (its header timeout) or the
    // attack ends.
    hold(&mut s, Duration::from_secs(3600), progress).await;
    Ok(())
}

/// A live tail, opened and then left unread until abandoned.
async fn tail(http: SocketAddr, path: &str) -> std::io::Result<()> {
    let mut s = TcpStream::connect(http).await?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
        .await?;
    // The response head (200 and the stream, or 503), then nothing read.
    let mut head = [0u8; 256];
    let _ = tokio::time::timeout(ANSWER, s.read(&mut head)).await;
    tokio::time::sleep(HOLD).await;
    Ok(())
}

/// A header as large as the limits allow, without its final empty line.
async fn header(
    omsp: SocketAddr,
    source: IpAddr,
    bytes: &[u8],
    progress: &Progress,
) -> std::io::Result<()> {
    let mut s = connect_from(source, omsp).await?;
    let write = tokio::time::timeout(ANSWER, s.write_all(bytes)).await;
    if let Ok(Ok(())) = write {
        hold(&mut s, HOLD, progress).await;
    }
    Ok(())
}

/// Something that is not OMSP, then wait for the server to close.
async fn malformed(omsp: SocketAddr, source: IpAddr, n: u64) -> std::io::Result<()> {
    let mut s = connect_from(source, omsp).await?;
    let junk: Vec<u8> = match n % 4 {
        0 => b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        1 => b"protocol: 99\ndomain: x\n\n".to_vec(),
        2 => b"protocol: 5\ndomain: x\nschema: one two three\n\n".to_vec(),
        // Bytes of no text at all (a fixed pseudo-random run).
        _ => (0..1024u64)
            .map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(n) >> 7) as u8)
            .collect(),
    };
    s.write_all(&junk).await?;
    s.shutdown().await?;
    let mut buf = [0u8; 256];
    let _ = tokio::time::timeout(ANSWER, async {
        while let Ok(1..) = s.read(&mut buf).await {}
    })
    .await;
    Ok(())
}

async fn connect_from(source: IpAddr, to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(source, 0))?;
    socket.connect(to).await
}

/// Identity lines every hostile header starts with.
const IDENTITY: &str = "protocol: 5\ndomain: hostile\nsender-id: h\napp-name: h\n";

/// Just under the default header limit (4 MiB): what a connection may make
/// the server hold before it is refused.
const HEADER_BYTES: usize = (4 << 20) - (64 << 10);

/// Schemas of the most fields a schema may have (4096), up to
/// [`HEADER_BYTES`].
fn max_schemas_header() -> Vec<u8> {
    let mut out = IDENTITY.as_bytes().to_vec();
    for index in 1.. {
        let mut line = format!("schema: {index} h_s{index}");
        for f in 0..4096 {
            line.push_str(&format!(" f{f}:int32"));
        }
        line.push('\n');
        if out.len() + line.len() > HEADER_BYTES {
            break;
        }
        out.extend_from_slice(line.as_bytes());
    }
    out
}

/// The most extension keys a header may have (256), each value as long as
/// fits in [`HEADER_BYTES`].
fn max_keys_header() -> Vec<u8> {
    let mut out = IDENTITY.as_bytes().to_vec();
    let value = "v".repeat(HEADER_BYTES / 256 - 16);
    for k in 0..256 {
        out.extend_from_slice(format!("x-k{k}: {value}\n").as_bytes());
    }
    out.truncate(HEADER_BYTES);
    out
}
