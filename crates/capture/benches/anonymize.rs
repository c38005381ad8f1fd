//! Crypto-PAn throughput.
//!
//! Machine: 2-core shared VM (other builds running); toolchain rustc 1.95.
//! Run: `CARGO_TARGET_DIR=/work/targets/capture cargo bench -p capture --bench anonymize`
//! Last results (2026-11-25): v4_cached 120 M addresses/s (114-131),
//! v4_uncached 4.6 M/s, v6_cached_prefix 1.9 M/s; also in docs/capture.md.
//!
//! - `v4_cached`: 1 M look-ups over a working set of 65 536 addresses in
//!   4 096 /24 prefixes, caches warm (typical of a link's address set).
//! - `v4_uncached`: 32 AES blocks per address, no cache.
//! - `v6_cached_prefix`: /64 cached, 64 AES blocks per address.

#![allow(missing_docs)] // criterion_group! generates undocumented items

use capture::cryptopan::{CryptoPan, Key};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;

fn addrs(n: usize) -> Vec<u32> {
    let mut x = 0x2545_f491u32;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            // 4096 /24s x 16 hosts
            ((x & 0x0fff) << 8) | ((x >> 12) & 0x0f) | 0x0a00_0000
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let key = Key::from_bytes(*b"0123456789abcdef0123456789abcdef");
    let mut cp = CryptoPan::new(&key);
    let set = addrs(1 << 20);
    for &a in &set {
        cp.anonymize_v4(a);
    }
    let mut g = c.benchmark_group("cryptopan");
    g.throughput(Throughput::Elements(set.len() as u64));
    g.bench_function("v4_cached", |b| {
        b.iter(|| {
            let mut acc = 0u32;
            for &a in &set {
                acc ^= cp.anonymize_v4(a);
            }
            black_box(acc)
        })
    });
    let small = &set[..10_000];
    g.throughput(Throughput::Elements(small.len() as u64));
    g.bench_function("v4_uncached", |b| {
        b.iter(|| {
            let mut acc = 0u32;
            for &a in small {
                acc ^= cp.anonymize_v4_uncached(a);
            }
            black_box(acc)
        })
    });
    let v6: Vec<u128> = small
        .iter()
        .map(|&a| (0x2001_0db8_u128 << 96) | u128::from(a))
        .collect();
    g.bench_function("v6_cached_prefix", |b| {
        b.iter(|| {
            let mut acc = 0u128;
            for &a in &v6 {
                acc ^= cp.anonymize_v6(a);
            }
            black_box(acc)
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
