//! Proxy forwarding throughput against direct client → server ingest,
//! measured in the same run (target: ratio ≥ 0.8), and the latency the
//! proxy adds to one tuple when the upstream is live.
//!
//! Each scenario starts a fresh collection server (SQLite, in this
//! process, on 127.0.0.1); the "proxy" scenarios put a proxy (journal in a
//! temporary directory, fsync interval:100) in front of it. CLIENTS stock
//! clients send pre-encoded binary sessions (int32, double, 16-character
//! string), and the time runs from the first byte sent to the moment a
//! separate SQLite connection counts every row. Scenarios alternate
//! direct / proxy, twice; every run checks the exact row count.
//!
//! ```text
//! cargo bench -p proxy --bench forward                  # 4 clients x 250000
//! BENCH_TUPLES=4000000 BENCH_CLIENTS=4 cargo bench -p proxy --bench forward
//! ```
//!
//! Machine: 2 vCPU "Intel(R) Xeon(R) Processor", Linux, rustc 1.95 stable,
//! bench profile. Last results: see docs/benchmarks.md, section "Proxy".

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use omsp::{Content, Encoder, Header, Schema, Value};

/// The allocator of the `streamgauge` binary, so that both sides are
/// measured as they run in production.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn session(client: usize, tuples: u64) -> Vec<u8> {
    let schema = Schema::parse("1 bench_sample i:int32 d:double s:string").unwrap();
    let mut header = Header::new(
        "bench",
        &format!("c{client}"),
        "bench",
        1_700_000_000,
        Content::Binary,
    );
    header.schemas.push(schema);
    let mut enc = Encoder::new(Content::Binary);
    let mut out = Vec::with_capacity(tuples as usize * 48 + 256);
    enc.header(&header, &mut out);
    for seq in 0..tuples as i64 {
        let values = [
            Value::Int32(seq as i32),
            Value::Double(seq as f64 * 0.25),
            Value::String(format!("c{client:02}s{seq:013}")),
        ];
        enc.tuple(
            &mut out,
            1,
            seq,
            seq as f64 * 1e-6,
            values.iter().map(Value::as_value_ref),
        )
        .unwrap();
    }
    out
}

/// CPU seconds (user + system) this process has used so far.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces): utime is the
    // 12th and stime the 13th of them.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    match (f.get(11), f.get(12)) {
        (Some(u), Some(s)) => (u + s) / 100.0,
        _ => 0.0,
    }
}

fn count(dir: &Path) -> i64 {
    let Ok(db) = rusqlite::Connection::open_with_flags(
        dir.join("bench.sq3"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    ) else {
        return 0;
    };
    db.query_row(
        "SELECT COALESCE(MAX(oml_tuple_id), 0) FROM bench_sample",
        [],
        |r| r.get(0),
    )
    .unwrap_or(0)
}

/// Sends every session at once; returns the seconds until all rows are stored.
fn send(addr: SocketAddr, sessions: &[Arc<Vec<u8>>], dir: &Path, total: i64) -> f64 {
    let go = Arc::new(Barrier::new(sessions.len() + 1));
    let threads: Vec<_> = sessions
        .iter()
        .map(|bytes| {
            let bytes = Arc::clone(bytes);
            let go = Arc::clone(&go);
            let mut s = TcpStream::connect(addr).unwrap();
            std::thread::spawn(move || {
                go.wait();
                s.write_all(&bytes).unwrap();
                s.shutdown(std::net::Shutdown::Write).unwrap();
                let mut sink = [0u8; 64];
                while s.read(&mut sink).unwrap_or(0) > 0 {}
            })
        })
        .collect();
    let t0 = Instant::now();
    go.wait();
    for t in threads {
        t.join().unwrap();
    }
    while count(dir) < total {
        assert!(t0.elapsed() < Duration::from_secs(600), "rows missing");
        std::thread::sleep(Duration::from_millis(5));
    }
    let secs = t0.elapsed().as_secs_f64();
    let exact: i64 = rusqlite::Connection::open(dir.join("bench.sq3"))
        .unwrap()
        .query_row("SELECT COUNT(*) FROM bench_sample", [], |r| r.get(0))
        .unwrap();
    assert_eq!(exact, total, "exact row count");
    secs
}

async fn start_server(dir: &Path) -> (server::Server, SocketAddr) {
    let mut c = server::ServerConfig::new(dir);
    c.listen = vec!["127.0.0.1:0".parse().unwrap()];
    let s = server::Server::start(c).await.unwrap();
    let a = s.local_addrs()[0];
    (s, a)
}

async fn start_proxy(journal: &Path, upstream: SocketAddr) -> (proxy::Proxy, SocketAddr) {
    let mut c = proxy::ProxyConfig::new(journal, upstream.to_string());
    c.listen = vec!["127.0.0.1:0".parse().unwrap()];
    c.control = None;
    c.quota = 8 << 30;
    let p = proxy::Proxy::start(c).await.unwrap();
    let a = p.local_addrs()[0];
    (p, a)
}

/// Median seconds from writing one tuple to seeing it stored, over `n` tuples.
fn latency(addr: SocketAddr, dir: &Path, n: usize) -> f64 {
    let schema = Schema::parse("1 bench_sample i:int32 d:double s:string").unwrap();
    let mut header = Header::new("bench", "lat", "bench", 1_700_000_000, Content::Binary);
    header.schemas.push(schema);
    let mut enc = Encoder::new(Content::Binary);
    let mut out = Vec::new();
    enc.header(&header, &mut out);
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    s.write_all(&out).unwrap();
    let mut samples = Vec::new();
    let base = count(dir);
    for seq in 0..n as i64 {
        out.clear();
        let values = [
            Value::Int32(1),
            Value::Double(0.5),
            Value::String("latency-probe-xx".into()),
        ];
        enc.tuple(
            &mut out,
            1,
            seq,
            0.0,
            values.iter().map(Value::as_value_ref),
        )
        .unwrap();
        let t0 = Instant::now();
        s.write_all(&out).unwrap();
        while count(dir) < base + seq + 1 {
            std::thread::sleep(Duration::from_micros(200));
        }
        samples.push(t0.elapsed().as_secs_f64());
    }
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("forward: bench");
        return;
    }
    let clients = env_num("BENCH_CLIENTS", 4) as usize;
    let per = env_num("BENCH_TUPLES", 1_000_000) / clients as u64;
    let total = (per * clients as u64) as i64;
    let sessions: Vec<Arc<Vec<u8>>> = (0..clients).map(|c| Arc::new(session(c, per))).collect();
    let bytes: usize = sessions.iter().map(|s| s.len()).sum();
    let rt = tokio::runtime::Runtime::new().unwrap();
    println!(
        "{clients} clients x {per} tuples, binary, {:.1} MB",
        bytes as f64 / 1e6
    );
    let mut direct = Vec::new();
    let mut via = Vec::new();
    let (mut cpu_direct, mut cpu_proxy) = (0.0, 0.0);
    let rounds = env_num("BENCH_ROUNDS", 3);
    for round in 0..rounds {
        let dir = tempfile::tempdir().unwrap();
        let (srv, addr) = rt.block_on(start_server(dir.path()));
        let c0 = cpu_seconds();
        let t = send(addr, &sessions, dir.path(), total);
        cpu_direct += cpu_seconds() - c0;
        rt.block_on(srv.shutdown());
        direct.push(t);
        println!(
            "round {round} direct: {:.2} s, {:.0} samples/s, {:.1} MB/s",
            t,
            total as f64 / t,
            bytes as f64 / t / 1e6
        );

        let dir = tempfile::tempdir().unwrap();
        let journal = tempfile::tempdir().unwrap();
        let (srv, up) = rt.block_on(start_server(dir.path()));
        let (px, addr) = rt.block_on(start_proxy(journal.path(), up));
        let c0 = cpu_seconds();
        let t = send(addr, &sessions, dir.path(), total);
        cpu_proxy += cpu_seconds() - c0;
        rt.block_on(px.shutdown());
        rt.block_on(srv.shutdown());
        via.push(t);
        println!(
            "round {round} proxy:  {:.2} s, {:.0} samples/s, {:.1} MB/s",
            t,
            total as f64 / t,
            bytes as f64 / t / 1e6
        );
    }
    let best = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let (d, p) = (best(&direct), best(&via));
    println!(
        "best: direct {:.0} samples/s ({:.1} MB/s), proxy {:.0} samples/s ({:.1} MB/s), ratio proxy/direct {:.2} (target >= 0.8)",
        total as f64 / d,
        bytes as f64 / d / 1e6,
        total as f64 / p,
        bytes as f64 / p / 1e6,
        d / p
    );
    let mid = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (dm, pm) = (mid(&mut direct), mid(&mut via));
    println!(
        "median: direct {:.0} samples/s, proxy {:.0} samples/s, ratio {:.2}",
        total as f64 / dm,
        total as f64 / pm,
        dm / pm
    );
    println!(
        "CPU per million samples (server + clients, + proxy): direct {:.2} s, via proxy {:.2} s",
        cpu_direct / rounds as f64 / total as f64 * 1e6,
        cpu_proxy / rounds as f64 / total as f64 * 1e6
    );

    // Added latency, upstream live: one tuple at a time.
    let dir = tempfile::tempdir().unwrap();
    let journal = tempfile::tempdir().unwrap();
    let (srv, up) = rt.block_on(start_server(dir.path()));
    let direct_lat = latency(up, dir.path(), 200);
    let (px, addr) = rt.block_on(start_proxy(journal.path(), up));
    let proxy_lat = latency(addr, dir.path(), 200);
    rt.block_on(px.shutdown());
    rt.block_on(srv.shutdown());
    println!(
        "latency (write -> row visible, median of 200): direct {:.2} ms, via proxy {:.2} ms, added {:.2} ms",
        direct_lat * 1e3,
        proxy_lat * 1e3,
        (proxy_lat - direct_lat) * 1e3
    );
}
