//! Per-packet cost of the session pipeline.
//!
//! Machine: 2-core shared VM; toolchain rustc 1.95.
//! Run: `CARGO_TARGET_DIR=/work/targets/capture cargo bench -p capture --bench pipeline`
//! Last results (2026-11-25): one_session_full 2.9 M packets/s,
//! demux_256_counters 1.4 M packets/s; also in docs/capture.md.
//!
//! - `one_session_full`: filter + header-only + Crypto-PAn + field zeroing +
//!   pcap file (in a temp dir) + IPFIX file, 64-byte-ish UDP frames.
//! - `demux_256_counters`: 256 counters-only sessions over 16 distinct filters.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use capture::config::SessionConfig;
use capture::cryptopan::Key;
use capture::demux::Demux;
use capture::session::{Session, SessionEnv};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn frames() -> Vec<Vec<u8>> {
    (0..4096u32)
        .map(|i| {
            let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
            f.extend_from_slice(&[0x45, 0, 0, 50, 0, 0, 0x40, 0, 64, 17, 0, 0]);
            f.extend_from_slice(&[10, (i >> 8) as u8, i as u8, 1, 192, 0, 2, (i % 7) as u8]);
            f.extend_from_slice(&(1000 + (i % 64) as u16).to_be_bytes());
            f.extend_from_slice(&[0, 53, 0, 30, 0, 0]);
            f.extend_from_slice(&[0x55; 22]);
            f
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let env = SessionEnv {
        data_dir: dir.path().into(),
        source: "bench".into(),
        key: Some(Key::from_bytes([3; 32])),
        closed: None,
        flows: None,
    };
    let fr = frames();
    let mut g = c.benchmark_group("pipeline");
    g.throughput(Throughput::Elements(fr.len() as u64));
    let cfg = SessionConfig::from_json(
        r#"{"name":"full","filter":"udp","header_only":true,"fields":["ip.src","ip.dst","ip.proto","ip.len","ports"],
        "anonymization":{"key":"k"},"rollover":{"bytes":50000000},"quota":{"bytes":200000000,"policy":"delete_oldest"},
        "outputs":[{"type":"pcap"},{"type":"ipfix","target":{"transport":"file","path":"f.ipfix"}}]}"#,
    )
    .unwrap();
    let mut s = Session::new(cfg, &env).unwrap();
    let mut ts = 1_700_000_000_000_000_000u64;
    g.bench_function("one_session_full", |b| {
        b.iter(|| {
            for f in &fr {
                ts += 1000;
                s.process(ts, f);
            }
        })
    });
    let mut d = Demux::new();
    for i in 0..256 {
        let cfg = SessionConfig::from_json(&format!(
            r#"{{"name":"s{i}","filter":"udp and src net 10.{}.0.0/16","outputs":[{{"type":"counters"}}]}}"#,
            i % 16
        ))
        .unwrap();
        d.add(Session::new(cfg, &env).unwrap());
    }
    g.bench_function("demux_256_counters", |b| {
        b.iter(|| {
            for f in &fr {
                ts += 1000;
                d.process(ts, f, f.len() as u32);
            }
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
