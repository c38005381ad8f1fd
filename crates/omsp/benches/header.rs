//! The worst connection header the default [`omsp::Limits`] (the server's)
//! allow, decoded: as many schemas as fit in `max_header` (4 MiB), each of
//! `max_fields` (4096) distinct, shortest-possible fields (`ab:bool`), so
//! that every per-field check runs as often as the limits permit. The
//! duplicate-field check used to compare every pair of fields (seconds of
//! CPU per header, from any unauthenticated sender); it now uses a hash set.
//!
//! Run: `cargo bench -p omsp --bench header` (about half a minute).
//!
//! `header/decode` is what the server does with such a header today;
//! `header/pairwise_duplicate_check` is the old pairwise check alone, run
//! on the same schemas (kept here only as the baseline: the old decode cost
//! at least this much more).
//!
//! Machine: 2 cores (vCPU), shared, other builds running (load average
//! about 4); toolchain rustc 1.95.0 stable, profile `bench`. Date:
//! 2026-11-28. Last results (worst header: 4 179 350 bytes, 125 schemas of
//! 4096 fields):
//!   header/decode                     136 ms   (29 MiB/s)
//!   header/pairwise_duplicate_check   2.02 s   (the old check alone)
//! See docs/benchmarks.md, "Worst connection header".

#![allow(missing_docs)] // criterion_group! generates an undocumented fn

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use omsp::{Decoder, Event, Header, Limits, Schema};

/// The `n`-th shortest valid field name (`[A-Za-z_][A-Za-z0-9_]*`).
fn name(mut n: usize) -> String {
    const FIRST: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_";
    const REST: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789";
    let mut out = vec![FIRST[n % FIRST.len()]];
    n /= FIRST.len();
    while n > 0 {
        n -= 1;
        out.push(REST[n % REST.len()]);
        n /= REST.len();
    }
    String::from_utf8(out).expect("ASCII")
}

/// The largest header of full-width schemas that stays within `limits`.
fn worst_header(limits: &Limits) -> Vec<u8> {
    let mut fields = String::new();
    for i in 0..limits.max_fields {
        fields.push(' ');
        fields.push_str(&name(i));
        fields.push_str(":bool");
    }
    let mut out = b"protocol: 5\ndomain: worst\nsender-id: s\napp-name: a\n".to_vec();
    let end = b"content: text\n\n";
    for index in 1..=limits.max_index {
        let line = format!("schema: {index} s{index}{fields}\n");
        let lines = out.iter().filter(|&&b| b == b'\n').count();
        if out.len() + line.len() + end.len() > limits.max_header
            || lines + 2 > limits.max_header_lines
        {
            break;
        }
        out.extend_from_slice(line.as_bytes());
    }
    out.extend_from_slice(end);
    out
}

/// Decodes the header as the server does (one decoder, default limits).
fn decode(input: &[u8], limits: Limits) -> Header {
    let mut d = Decoder::with_limits(limits);
    d.feed(input);
    match d.next_event() {
        Some(Ok(Event::Header(h))) => h,
        other => panic!("worst header must be accepted, got {other:?}"),
    }
}

/// The check this bench replaced: each field compared with every earlier one.
fn pairwise_duplicates(schemas: &[Schema]) -> bool {
    schemas.iter().any(|s| {
        s.fields
            .iter()
            .enumerate()
            .any(|(i, f)| s.fields[..i].iter().any(|g| g.name == f.name))
    })
}

fn bench(c: &mut Criterion) {
    let limits = Limits::default();
    let input = worst_header(&limits);
    let header = decode(&input, limits);
    eprintln!(
        "worst header: {} bytes, {} schemas of {} fields",
        input.len(),
        header.schemas.len(),
        limits.max_fields
    );
    let mut g = c.benchmark_group("header");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Bytes(input.len() as u64));
    g.bench_function("decode", |b| {
        b.iter(|| black_box(decode(black_box(&input), limits).schemas.len()))
    });
    g.bench_function("pairwise_duplicate_check", |b| {
        b.iter(|| assert!(!pairwise_duplicates(black_box(&header.schemas))))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
