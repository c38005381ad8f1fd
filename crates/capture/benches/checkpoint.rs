//! Cost of the flow checkpoint a session writes at every tick.
//!
//! Machine: 2-core shared VM, ext4 on a virtual disk; toolchain rustc 1.95.
//! Run: `cargo bench -p capture --bench checkpoint --profile dev`
//! (the project's rule for shared machines: no optimised builds) or
//! without `--profile dev` for optimised figures.
//! Last results (2026-11-29, unoptimised, machine loaded by other builds):
//! 10 000 flows: encode 10.7 ms, write 23 ms, tick 19.7 ms;
//! 100 000 flows: encode 72 ms, write 66 ms, tick 70 ms; also in docs/capture.md.
//!
//! - `encode/N`: the active flow table (N IPv4 flows) encoded into the reused buffer;
//! - `write/N`: encode + temporary file + fsync + rename;
//! - `tick/N`: a whole `Session::tick` with one new packet since the last
//!   (so the checkpoint is due): expiry scan, IPFIX file flush and
//!   fdatasync, checkpoint.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use capture::checkpoint::{write_atomic, Checkpoint};
use capture::config::SessionConfig;
use capture::flow::{EndReason, FlowKey, FlowRecord};
use capture::session::{Session, SessionEnv};
use criterion::{criterion_group, criterion_main, Criterion};

fn flows(n: u32) -> Vec<FlowRecord> {
    (0..n)
        .map(|i| FlowRecord {
            key: FlowKey {
                v6: false,
                src: u128::from(0x0a00_0000 | i),
                dst: 0xc000_0201,
                sport: 1000 + (i % 50_000) as u16,
                dport: 53,
                proto: 17,
            },
            start_ns: 1_700_000_000_000_000_000,
            end_ns: 1_700_000_001_000_000_000,
            packets: u64::from(i % 1000) + 1,
            octets: 100 * (u64::from(i % 1000) + 1),
            tcp_flags: 0,
            rev_packets: 0,
            rev_octets: 0,
            rev_tcp_flags: 0,
            end_reason: EndReason::Idle,
        })
        .collect()
}

fn frame(i: u32) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
    f.extend_from_slice(&[0x45, 0, 0, 50, 0, 0, 0x40, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&[10, (i >> 16) as u8, (i >> 8) as u8, i as u8, 192, 0, 2, 1]);
    f.extend_from_slice(&[0x03, 0xe8, 0, 53, 0, 30, 0, 0]);
    f.extend_from_slice(&[0x55; 22]);
    f
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut g = c.benchmark_group("checkpoint");
    g.sample_size(10);
    for n in [10_000u32, 100_000] {
        let table = flows(n);
        let mut buf = Vec::new();
        g.bench_function(format!("encode/{n}"), |b| {
            b.iter(|| Checkpoint::encode(&mut buf, [(1u32, None, 0u64, table.iter())]))
        });
        let path = dir.path().join("bench.flows");
        g.bench_function(format!("write/{n}"), |b| {
            b.iter(|| {
                Checkpoint::encode(&mut buf, [(1u32, None, 0u64, table.iter())]);
                write_atomic(&path, &buf).unwrap()
            })
        });
        let cfg = SessionConfig::from_json(&format!(
            r#"{{"name":"b{n}","outputs":[{{"type":"ipfix","target":{{"transport":"file","path":"f.ipfix"}},
                "flows":{{"idle_timeout_s":3600,"active_timeout_s":3600}}}}]}}"#
        ))
        .unwrap();
        let env = SessionEnv {
            data_dir: dir.path().to_path_buf(),
            source: "bench".into(),
            key: None,
            closed: None,
            flows: None,
        };
        let mut s = Session::new(cfg, &env).unwrap();
        s.keep_flow_checkpoint(dir.path().join(format!("b{n}.flows")))
            .unwrap();
        let t0 = 1_700_000_000_000_000_000u64;
        for i in 0..n {
            s.process(t0 + u64::from(i), &frame(i));
        }
        let one = frame(0);
        let mut t = t0 + 1_000_000_000;
        g.bench_function(format!("tick/{n}"), |b| {
            b.iter(|| {
                t += 1000;
                s.process(t, &one);
                s.tick(t).unwrap()
            })
        });
        s.stop(t).unwrap();
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
