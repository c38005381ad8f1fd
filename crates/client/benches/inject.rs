//! Cost of `Mp::inject` on the application thread.
//!
//! The sample is the 3-field tuple (int32, double, 16-byte string). Two
//! figures per configuration:
//!
//! - `burst`: injects into a queue with room (bursts of 4096 samples, the
//!   writer drains between bursts, untimed). This is what an instrumented
//!   application pays per call as long as the writer keeps up.
//! - `sustained`: injects back to back for the whole measurement. The queue
//!   fills, so this is the client's end-to-end throughput (encoding and I/O
//!   on the writer and sender threads, on the 2 cores the machine has).
//!
//! Destinations: a file in a temporary directory (binary, text) and a TCP
//! sink thread that reads and discards (binary); one and two injecting
//! threads; and one stream with `samples = 100` (default filters: `avg` for
//! the numbers, `first` for the string) to a file.
//!
//! Run: `cargo bench -p client --bench inject`.
//!
//! Machine: 2 vCPU Intel Xeon VM (TSC clocksource; one `rdtsc` ≈ 20 ns, one
//! `clock_gettime` ≈ 40 ns), 24 GiB, shared with other builds (load 1–5
//! during the run, so the sustained figures are pessimistic). Toolchain:
//! rustc 1.95.0, bench profile (release + debug info). Results of
//! 2026-05 (criterion median estimate, ns per inject on the application
//! thread):
//!
//! | configuration          | burst | sustained |
//! |------------------------|------:|----------:|
//! | binary file, 1 thread  |  54.5 |       382 |
//! | text file, 1 thread    |  47.5 |       767 |
//! | binary TCP, 1 thread   |  55.2 |       439 |
//! | binary file, 2 threads |  61.3 |       829 |
//! | binary TCP, 2 threads  |  69.2 |       386 |
//! | avg (samples=100), file|  61.2 |       213 |
//!
//! An earlier run at lower load measured sustained binary file 185 ns and
//! binary TCP 230 ns (the writer, the sender and the sink share the second
//! core). Of a burst inject, about 20 ns is the clock read and 10–15 ns the
//! copy into the ring (cache lines moving to the writer's core).

#![allow(missing_docs)] // criterion_group! generates an undocumented fn

use std::io::Read;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use client::spec::{
    ClientSpec, DestinationSpec, Encoding, OverloadPolicy, StreamSpec, Uri, Window,
};
use client::{Client, Mp};
use criterion::{criterion_group, criterion_main, Criterion};
use omsp::{OmlType, ValueRef};

/// Samples per timed burst (fits the default 512 KiB per-thread queue).
const BURST: u64 = 4096;

fn destination(uri: Uri, encoding: Encoding, streams: Option<Vec<StreamSpec>>) -> DestinationSpec {
    DestinationSpec {
        uri,
        encoding,
        policy: OverloadPolicy::Block { stall_limit: None },
        bufsize: 64 << 20,
        streams,
        instrumentation: true,
        backchannel: Default::default(),
    }
}

fn client(dest: DestinationSpec) -> Option<(Client, Mp)> {
    let spec = ClientSpec {
        app: "bench".into(),
        id: Some("b".into()),
        domain: Some("bench".into()),
        destinations: vec![dest],
        instr_interval: Some(Duration::from_secs(1)),
        ..ClientSpec::default()
    };
    let c = Client::new(spec).ok()?;
    let mp = c
        .add_mp(
            "m",
            &[
                ("i", OmlType::Int32),
                ("d", OmlType::Double),
                ("s", OmlType::String),
            ],
        )
        .ok()?;
    match c.start() {
        Ok(()) => Some((c, mp)),
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

#[inline]
fn inject(mp: &Mp, i: u64) {
    let _ = mp.inject(&[
        ValueRef::Int32(i as i32),
        ValueRef::Double(i as f64 * 0.5),
        ValueRef::String("sixteen-chars..!"),
    ]);
}

/// Waits until the writer has taken `n` samples.
fn drained(c: &Client, n: u64) {
    while c.stats().injected < n {
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Time of `iters` injects spread over `threads` threads: per-thread time,
/// scaled so that criterion divides by the injects of one thread.
fn run(c: &Client, mp: &Mp, iters: u64, threads: u64, burst: bool, base: &mut u64) -> Duration {
    let per_thread = iters.div_ceil(threads);
    let start_total = *base;
    let total: Duration = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let mp = mp.clone();
                s.spawn(move || {
                    let mut timed = Duration::ZERO;
                    let mut done = 0;
                    while done < per_thread {
                        let n = if burst {
                            BURST.min(per_thread - done)
                        } else {
                            per_thread - done
                        };
                        let t0 = Instant::now();
                        for i in 0..n {
                            inject(&mp, t * per_thread + done + i);
                        }
                        timed += t0.elapsed();
                        done += n;
                        if burst {
                            // Let the writer catch up (untimed).
                            drained(c, start_total + (done * threads).min(per_thread * threads));
                        }
                    }
                    timed
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .sum()
    });
    *base += per_thread * threads;
    drained(c, *base);
    // Mean per-thread time, for `iters` counted as injects of one thread.
    total / threads as u32 * (iters as u32) / (per_thread as u32).max(1)
}

fn tcp_sink() -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut s = s;
                let mut buf = vec![0u8; 1 << 16];
                while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    addr
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let sink = tcp_sink();
    let tcp = Uri::Tcp {
        host: sink.ip().to_string(),
        port: sink.port(),
    };
    let file = |name: &str| Uri::File(dir.path().join(name));
    let avg_stream = vec![StreamSpec {
        mp: "m".into(),
        name: None,
        window: Window::Samples(100),
        filters: Vec::new(),
    }];
    let configs: Vec<(&str, DestinationSpec, u64)> = vec![
        (
            "binary-file/1t",
            destination(file("b1"), Encoding::Binary, None),
            1,
        ),
        (
            "text-file/1t",
            destination(file("t1"), Encoding::Text, None),
            1,
        ),
        (
            "binary-tcp/1t",
            destination(tcp.clone(), Encoding::Binary, None),
            1,
        ),
        (
            "binary-file/2t",
            destination(file("b2"), Encoding::Binary, None),
            2,
        ),
        ("binary-tcp/2t", destination(tcp, Encoding::Binary, None), 2),
        (
            "avg100-file/1t",
            destination(file("a1"), Encoding::Binary, Some(avg_stream)),
            1,
        ),
    ];
    let mut group = c.benchmark_group("inject");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (name, dest, threads) in configs {
        let Some((cl, mp)) = client(dest) else {
            continue;
        };
        let mut base = 0;
        for (mode, burst) in [("burst", true), ("sustained", false)] {
            group.bench_function(format!("{mode}/{name}"), |b| {
                b.iter_custom(|iters| run(&cl, &mp, iters, threads, burst, &mut base))
            });
        }
        cl.close().unwrap();
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
