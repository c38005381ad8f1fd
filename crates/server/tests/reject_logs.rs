//! Rejected input is logged at a bounded rate: 2 MB of garbage
//! after a valid header, or a thousand connections with a bad header,
//! write a few dozen log lines, not one per tuple or per connection; the
//! counters (`/metrics`, `server_stats`) still count every reject.
//!
//! The server's log is captured by a tracing subscriber at INFO, the
//! level `streamgauge server` logs at by default.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use server::metrics::rejects::LINES_PER_PERIOD;
use server::metrics::CloseReason;

use common::noise;

/// Every line the server logged, in this test binary.
fn log() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&log);
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_writer(move || Capture(Arc::clone(&sink)))
            .init();
        log
    })
}

struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Lines logged since `from` (a byte offset into the log), and the new offset.
fn lines_since(from: usize) -> (Vec<String>, usize) {
    let log = log().lock().unwrap();
    let text = String::from_utf8_lossy(&log[from..]);
    (text.lines().map(str::to_owned).collect(), log.len())
}

/// Tests share the global log: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Garbage tuples: lines of 3 to 40 bytes of noise (tabs and digits
/// included, so that every text reject reason comes up), 2 MB in all.
fn garbage_lines() -> Vec<u8> {
    let mut out = Vec::new();
    let bytes = noise(2 << 20, 7);
    for (i, chunk) in bytes.chunks(23).enumerate() {
        for &b in &chunk[..3 + i % 20] {
            out.push(match b % 8 {
                0 => b'\t',
                1..=3 => b'0' + b % 10,
                _ if b == b'\n' => b'x',
                _ => b,
            });
        }
        out.push(b'\n');
    }
    out.truncate(2 << 20);
    out
}

/// Polls `cond` until it holds, for at most 20 s.
async fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_after_a_valid_header_logs_a_bounded_number_of_lines() {
    let _serial = SERIAL.lock().await;
    let (_, start) = lines_since(0);
    let t = common::start().await;
    let garbage = garbage_lines();
    let lines = garbage.iter().filter(|&&b| b == b'\n').count() as u64;
    let mut text =
        common::text_header("junk", "j", 1000, &["1 app_m x:int64 s:string"]).into_bytes();
    text.extend_from_slice(&garbage);
    let mut binary = common::text_header("junkbin", "jb", 1000, &["1 app_m x:int64 s:string"])
        .replace("content: text", "content: binary")
        .into_bytes();
    binary.extend_from_slice(&noise(2 << 20, 11));
    common::replay_async(t.addr, text).await;
    common::replay_async(t.addr, binary).await;
    let m = Arc::clone(t.server.metrics());
    wait_for("both connections closed", || {
        m.closed_count(CloseReason::Closed) + m.closed_count(CloseReason::Error) == 2
    })
    .await;
    // Every garbage line is counted, though few are logged.
    let rejected = m
        .domain("junk")
        .rejected_decode
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(rejected, lines, "each garbage line is one reject");
    let errors: u64 = m.decode_errors().iter().map(|(_, n)| n).sum();
    assert!(errors > lines, "text and binary rejects counted: {errors}");
    let metrics = server::metrics::render(&m);
    assert!(
        metrics.contains("streamgauge_tuples_rejected_total{domain=\"junk\",stage=\"decode\"} "),
        "{metrics}"
    );
    let (logged, _) = lines_since(start);
    let rejects: Vec<&String> = logged.iter().filter(|l| l.contains("rejected")).collect();
    // Per connection: one line per reason (a handful), a summary per reason
    // at the end (and every 10 s), the session's own lines.
    assert!(
        logged.len() <= 60,
        "{} lines for 4 MB of garbage ({} rejects):\n{}",
        logged.len(),
        errors,
        logged.join("\n")
    );
    assert!(
        rejects
            .iter()
            .any(|l| l.contains("input rejected repeatedly") && l.contains("total=")),
        "a summary with counts:\n{}",
        logged.join("\n")
    );
    t.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_malformed_connections_log_a_bounded_number_of_lines() {
    let _serial = SERIAL.lock().await;
    let (_, start) = lines_since(0);
    let t = common::start().await;
    const N: u64 = 1000;
    let addr = t.addr;
    tokio::task::spawn_blocking(move || {
        for i in 0..N {
            // A header line of a few KiB that is no header: it must not be
            // logged whole either.
            let bad = format!("protocol: 5\nx{}\n\n", "y".repeat(4096 + i as usize));
            common::replay(addr, bad.as_bytes());
        }
    })
    .await
    .unwrap();
    let m = Arc::clone(t.server.metrics());
    wait_for("every connection closed", || {
        m.closed_count(CloseReason::Error) == N
    })
    .await;
    let header_errors = m
        .decode_errors()
        .into_iter()
        .find(|(c, _)| *c == "header")
        .map(|(_, n)| n);
    assert_eq!(header_errors, Some(N), "every bad header counted");
    let suppressed = m.rejects.suppressed();
    let header_suppressed = suppressed
        .iter()
        .find(|(r, _)| *r == "header")
        .map(|(_, n)| *n)
        .unwrap_or(0);
    assert!(
        header_suppressed >= 2 * N - 2 * LINES_PER_PERIOD * 2,
        "{suppressed:?}"
    );
    let metrics = server::metrics::render(&m);
    assert!(
        metrics.contains(&format!("streamgauge_reject_log_lines_suppressed_total{{reason=\"header\"}} {header_suppressed}")),
        "{metrics}"
    );
    assert_eq!(
        m.totals(None).reject_log_lines_suppressed,
        suppressed.iter().map(|(_, n)| n).sum::<u64>()
    );
    let (logged, _) = lines_since(start);
    let total_bytes: usize = logged.iter().map(String::len).sum();
    // Two lines per reason and period (the error, the disconnection) up to
    // the budget, the summaries, and the server's own start-up lines.
    assert!(
        logged.len() as u64 <= 4 * LINES_PER_PERIOD + 20,
        "{} lines for {N} bad connections:\n{}",
        logged.len(),
        logged.join("\n")
    );
    assert!(total_bytes < 64 * 1024, "{total_bytes} bytes of log");
    let longest = logged.iter().map(String::len).max().unwrap_or(0);
    assert!(
        longest < 1024,
        "a line of {longest} bytes: the bad header quoted whole"
    );
    t.server.shutdown().await;
}
