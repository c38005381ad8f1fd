//! What the worst connection header the default limits allow costs the
//! server end to end: decode, then one table per schema.
//! A measurement, not a check of the build's speed: ignored by default.
//!
//! Run (figures in docs/benchmarks.md, "Worst connection header"):
//! `cargo test -p server --release --test header_cost -- --ignored --nocapture`

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// CPU seconds (user + system) of every thread of this process, from
/// /proc/self/stat (fields 14 and 15, in clock ticks of 1/100 s on Linux).
fn cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let field = |n: usize| -> f64 { after_name.split(' ').nth(n - 3).unwrap().parse().unwrap() };
    (field(14) + field(15)) / 100.0
}

/// A header of as many `fields`-field schemas as fit in `max` bytes (at
/// most the decoder's header limit), for `domain`.
fn header(domain: &str, fields: usize, max: usize) -> Vec<u8> {
    let limits = omsp::Limits::default();
    let list: String = (0..fields).map(|i| format!(" f{i}:bool")).collect();
    let mut out =
        format!("protocol: 5\ndomain: {domain}\nsender-id: s\napp-name: a\n").into_bytes();
    let end = b"content: text\n\n";
    for index in 1..=limits.max_index {
        let line = format!("schema: {index} s{index}{list}\n");
        if out.len() + line.len() + end.len() > max.min(limits.max_header) {
            break;
        }
        out.extend_from_slice(line.as_bytes());
    }
    out.extend_from_slice(end);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run with --release --ignored --nocapture"]
async fn worst_header_cost() {
    let t = common::start().await;
    let addr = t.addr;
    // 4096 fields: the decoder's limit (SQLite refuses the first table);
    // 1995: the widest table SQLite accepts (2000 columns with the five
    // oml_ ones), so every schema becomes a table; a quarter and half of
    // the header limit show how the cost grows with the number of tables.
    let rounds = [
        (4096, 4),
        (1995, 1),
        (1995, 2),
        (1995, 4),
        (4096, 4),
        (1995, 4),
    ];
    for (round, (fields, mib)) in rounds.into_iter().enumerate() {
        let bytes = header(&format!("worst{round}"), fields, mib << 20);
        let (cpu0, t0) = (cpu(), Instant::now());
        let answer = tokio::task::spawn_blocking(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(&bytes).unwrap();
            s.shutdown(std::net::Shutdown::Write).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(600))).unwrap();
            let mut sink = Vec::new();
            let _ = s.read_to_end(&mut sink);
            bytes.len()
        })
        .await
        .unwrap();
        let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu() - cpu0);
        let tables = std::fs::metadata(t.dir.path().join(format!("worst{round}.sq3")))
            .map_or(0, |m| m.len());
        println!(
            "fields {fields}, header <= {mib} MiB: {answer} bytes, {wall:.3} s wall, {cpu:.3} s CPU, database {tables} bytes"
        );
    }
    t.server.shutdown().await;
}
