//! The client reproduces the stream structure of the reference capture
//! `spec/vectors/0002-ref-onemp.{bin,txt}` (liboml2: app `vec`, one MP with
//! all fifteen types, two injects): the header byte for byte except
//! `start-time`, then the first tuple, the first `_client_instrumentation`
//! report, the second tuple. Binary data frames are byte-identical except
//! their timestamp. (streamgauge adds one last report at close.)

mod common;

use std::path::Path;

use client::spec::Encoding;
use client::Client;
use common::{decode, file, spec};
use omsp::{OmlType, Value, ValueRef};

fn vector(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../spec/vectors")
        .join(name);
    std::fs::read(p).unwrap()
}

/// Replaces the value of the `start-time` line.
fn with_start_time(header: &[u8], t: i64) -> Vec<u8> {
    let text = String::from_utf8(header.to_vec()).unwrap();
    text.lines()
        .map(|l| {
            if l.starts_with("start-time: ") {
                format!("start-time: {t}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect::<String>()
        .into_bytes()
}

/// The header's length (up to and including the empty line).
fn header_len(b: &[u8]) -> usize {
    b.windows(2).position(|w| w == b"\n\n").unwrap() + 2
}

/// Binary frames after the header, each with its timestamp bytes zeroed.
fn frames_without_ts(b: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = header_len(b);
    while at < b.len() {
        assert_eq!(&b[at..at + 3], [0xAA, 0xAA, 0x01]);
        let len = u16::from_be_bytes([b[at + 3], b[at + 4]]) as usize;
        let mut f = b[at..at + 5 + len].to_vec();
        // sync(2) type(1) len(2) n(1) idx(1) seq(5) | ts(6)
        f[12..18].fill(0);
        out.push(f);
        at += 5 + len;
    }
    out
}

#[test]
fn reproduces_0002_ref_onemp() {
    for (enc, name) in [
        (Encoding::Binary, "0002-ref-onemp.bin"),
        (Encoding::Text, "0002-ref-onemp.txt"),
    ] {
        let reference = vector(name);
        let want = decode(&reference);
        let header = want.header.clone().unwrap();
        let vec_all = &header.schemas[2];
        let rows = want.stream(2);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let mut s = spec("vec", vec![file(&path, enc)]);
        s.id = Some("vec-sender".into());
        s.domain = Some("vecdomain".into());
        let client = Client::new(s).unwrap();
        let fields: Vec<(&str, OmlType)> = vec_all
            .fields
            .iter()
            .map(|f| (f.name.as_str(), f.ty))
            .collect();
        let mp = client.add_mp("all", &fields).unwrap();
        client.start().unwrap();
        for r in &rows {
            let values: Vec<ValueRef<'_>> = r.values.iter().map(Value::as_value_ref).collect();
            mp.inject(&values).unwrap();
        }
        client.close().unwrap();
        let ours = std::fs::read(&path).unwrap();

        // The header, byte for byte, except start-time.
        let ref_header = with_start_time(
            &reference[..header_len(&reference)],
            client.start_time().unwrap(),
        );
        assert_eq!(
            String::from_utf8_lossy(&ours[..header_len(&ours)]),
            String::from_utf8_lossy(&ref_header),
            "{enc:?}"
        );

        // The same tuples in the same order, then our closing report.
        let got = decode(&ours);
        assert!(got.errors.is_empty(), "{:?}", got.errors);
        let shape = |d: &common::Decoded| {
            d.samples
                .iter()
                .map(|s| (s.stream, s.seq))
                .collect::<Vec<_>>()
        };
        let mut expected = shape(&want);
        expected.push((1, 2));
        assert_eq!(shape(&got), expected, "{enc:?}");
        for (g, w) in got.samples.iter().zip(&want.samples) {
            if g.stream == 2 {
                assert!(
                    g.values.iter().zip(&w.values).all(|(a, b)| a.same_as(b)),
                    "{enc:?}: {g:?}"
                );
            } else {
                // measurements_injected and measurements_dropped agree; the
                // memory figures are the implementation's own.
                assert_eq!(g.values[..2], w.values[..2], "{enc:?}");
            }
        }
        if enc == Encoding::Binary {
            let (g, w) = (frames_without_ts(&ours), frames_without_ts(&reference));
            assert_eq!(g[0], w[0], "first vec_all frame");
            assert_eq!(g[2], w[2], "second vec_all frame");
            assert_eq!(g[1][..29], w[1][..29], "report frame up to bytes_allocated");
        }
    }
}
