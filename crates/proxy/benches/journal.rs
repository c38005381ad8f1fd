//! Journal write throughput per fsync policy: appends of 64 KiB of whole
//! text tuples, as the accept side makes them (one append per socket
//! read). `interval:100` syncs whenever 100 ms have passed since the last
//! sync, as the proxy's ticker does; `always` syncs after every append.
//!
//! ```text
//! cargo bench -p proxy --bench journal
//! ```
//!
//! Machine: 2 vCPU "Intel(R) Xeon(R) Processor", Linux, rustc 1.95 stable,
//! bench profile; file system of /tmp (overlay on ext4 here). Last
//! results: see docs/benchmarks.md, section "Proxy".

#![allow(missing_docs)] // criterion_group! generates an undocumented fn

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use proxy::journal::{Journal, JournalOptions};
use proxy::FsyncPolicy;

const HEADER: &[u8] = b"protocol: 5\ndomain: d\nschema: 1 t_m i:int32 s:string\ncontent: text\n\n";

fn chunk() -> Vec<u8> {
    let mut out = Vec::with_capacity(64 << 10);
    let mut i = 0;
    while out.len() < (64 << 10) - 64 {
        out.extend_from_slice(format!("0.5\t1\t{i}\t{i}\tvalue-{i:010}\n").as_bytes());
        i += 1;
    }
    out
}

fn bench(c: &mut Criterion) {
    let data = chunk();
    let mut g = c.benchmark_group("journal_append_64k");
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(5));
    for policy in ["never", "interval:100", "always"] {
        let policy: FsyncPolicy = policy.parse().unwrap();
        g.bench_function(policy.to_string(), |b| {
            let root = tempfile::tempdir().unwrap();
            let opts = JournalOptions {
                fsync: policy,
                segment_size: 8 << 20,
                usage: Arc::new(AtomicU64::new(0)),
            };
            let mut j = Journal::create(root.path(), 1, HEADER, None, opts).unwrap();
            let mut last_sync = Instant::now();
            b.iter(|| {
                j.append(&data, Vec::new()).unwrap();
                match policy {
                    FsyncPolicy::Always => j.sync().unwrap(),
                    FsyncPolicy::Interval(d) if last_sync.elapsed() >= d => {
                        j.sync().unwrap();
                        last_sync = Instant::now();
                    }
                    _ => {}
                }
                // Keep the disk use bounded: acknowledge all but the last segment.
                if j.segments() > 4 {
                    let end = j.end();
                    j.ack(end).unwrap();
                }
            });
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
