//! OMSP codec throughput: decode and encode of a 3-field tuple
//! (`int32`, `double`, 16-character `string`), text and binary.
//!
//! Run: `cargo bench -p omsp --bench codec` (about a minute).
//!
//! Machine: 2 cores (vCPU), Intel(R) Xeon(R) Processor (lscpu model name),
//! 23 GiB; toolchain: rustc 1.95.0 stable, profile `bench` (opt-level 3,
//! debug = 1). Date: 2026-11-22. Quiet machine, `nice -n -15` (on a shared
//! machine the figures halve; see docs/benchmarks.md).
//! Last results (one core; MB = 10^6 bytes):
//!   decode/text     4.51 M tuples/s   236 MB/s   (target >= 2 M: 2.26x)
//!   decode/binary  10.50 M tuples/s   500 MB/s   (target >= 5 M: 2.10x)
//!   encode/text     5.82 M tuples/s   312 MB/s
//!   encode/binary  18.84 M tuples/s   888 MB/s

#![allow(missing_docs)] // criterion_group! generates an undocumented fn

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use omsp::{Content, Decoder, Encoder, Event, Header, Schema, ValueRef};

/// Tuples per iteration.
const N: usize = 100_000;
/// Input chunk size for the decoder (what a socket read typically returns).
const CHUNK: usize = 64 * 1024;

struct Tuple {
    id: i32,
    value: f64,
    label: String,
}

fn tuples() -> Vec<Tuple> {
    (0..N)
        .map(|i| Tuple {
            id: i as i32 * 7 - 1000,
            value: i as f64 * 1.0625e-3 + 20.5,
            label: format!("node-{:011}", i * 13), // 16 characters
        })
        .collect()
}

fn header(content: Content) -> Header {
    let mut h = Header::new("bench", "sender", "app", 1_700_000_000, content);
    h.schemas
        .push(Schema::parse("1 app_mp id:int32 value:double label:string").expect("schema"));
    h
}

/// Header and all tuples, encoded into `out` (cleared first).
fn encode(content: Content, header: &Header, tuples: &[Tuple], out: &mut Vec<u8>) {
    out.clear();
    let mut enc = Encoder::new(content);
    enc.header(header, out);
    for (i, t) in tuples.iter().enumerate() {
        let values = [
            ValueRef::Int32(t.id),
            ValueRef::Double(t.value),
            ValueRef::String(&t.label),
        ];
        enc.tuple(out, 1, i as i64 + 1, i as f64 * 0.001, values)
            .expect("encodable");
    }
}

/// Decodes `input` with a fresh decoder, fed in 64 KiB chunks; returns the
/// number of samples.
fn decode(input: &[u8]) -> usize {
    let mut d = Decoder::new();
    let mut samples = 0;
    let mut drain = |d: &mut Decoder| {
        while let Some(ev) = d.next_event() {
            if let Ok(Event::Sample(s)) = ev {
                black_box(&s);
                samples += 1;
            }
        }
    };
    for chunk in input.chunks(CHUNK) {
        d.feed(chunk);
        drain(&mut d);
    }
    d.finish();
    drain(&mut d);
    samples
}

fn bench(c: &mut Criterion) {
    let tuples = tuples();
    let encodings = [("text", Content::Text), ("binary", Content::Binary)];
    let inputs: Vec<(&str, Content, Header, Vec<u8>)> = encodings
        .iter()
        .map(|&(name, content)| {
            let h = header(content);
            let mut buf = Vec::new();
            encode(content, &h, &tuples, &mut buf);
            assert_eq!(decode(&buf), N, "{name} input decodes to {N} samples");
            (name, content, h, buf)
        })
        .collect();

    // Same benchmarks, reported per tuple and per byte of the encoded stream.
    for per_byte in [false, true] {
        let mut g = c.benchmark_group(if per_byte {
            "codec_bytes"
        } else {
            "codec_tuples"
        });
        g.sample_size(10)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3));
        for (name, content, h, buf) in &inputs {
            g.throughput(if per_byte {
                Throughput::Bytes(buf.len() as u64)
            } else {
                Throughput::Elements(N as u64)
            });
            g.bench_function(format!("decode/{name}"), |b| {
                b.iter(|| assert_eq!(decode(black_box(buf)), N))
            });
            let mut out = Vec::with_capacity(buf.len());
            g.bench_function(format!("encode/{name}"), |b| {
                b.iter(|| {
                    encode(*content, h, black_box(&tuples), &mut out);
                    black_box(out.len())
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
