//! The whole session pipeline never panics on arbitrary frames, whatever
//! the cut, field selection, anonymisation and sampling.

mod common;

use capture::config::SessionConfig;
use capture::cryptopan::Key;
use capture::demux::Demux;
use capture::session::{Session, SessionEnv};
use common::*;
use proptest::prelude::*;

fn frame() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..200),
        (
            any::<[u8; 4]>(),
            any::<u16>(),
            0usize..64,
            any::<u8>(),
            proptest::collection::vec((any::<u8>(), any::<u8>()), 0..6),
            0usize..100
        )
            .prop_map(|(a, p, n, kind, edits, cut)| {
                let mut f = match kind % 4 {
                    0 => frame4(a, [10, 0, 0, 1], 17, p, 53, 0, &vec![7; n]),
                    1 => frame4(a, [10, 0, 0, 1], 6, p, 80, kind, &vec![7; n]),
                    2 => frame4(a, [10, 0, 0, 1], 1, 0, 0, 0, &vec![7; n]),
                    _ => frame6([a[0]; 16], [a[1]; 16], p, 53, &vec![7; n]),
                };
                for (at, v) in edits {
                    let i = usize::from(at) % f.len();
                    f[i] = v;
                }
                f.truncate(f.len().min(cut.max(1) * 2));
                f
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn pipeline_never_panics(frames in proptest::collection::vec(frame(), 1..40), snaplen in 14u32..200) {
        let t = tempfile::tempdir().unwrap();
        let env = SessionEnv {
            data_dir: t.path().into(),
            source: "fuzz".into(),
            key: Some(Key::from_bytes([9; 32])),
            closed: None,
            flows: None,
        };
        let mut d = Demux::new();
        let configs = [
            format!(r#"{{"name":"a","snaplen":{snaplen},"anonymization":{{"key":"k"}},"outputs":[{{"type":"pcapng"}},{{"type":"ipfix","target":{{"transport":"file","path":"a.ipfix"}},"flows":{{"biflow":true}}}}]}}"#),
            format!(r#"{{"name":"b","snaplen":{snaplen},"header_only":true,"fields":["ip.src","ports","tcp.flags"],"anonymization":{{"key":"k","fields":"dst"}},"sampling":{{"mode":"flow","p":0.5}},"outputs":[{{"type":"pcap"}}]}}"#),
            r#"{"name":"c","filter":"ip or ip6","fields":[],"sampling":{"mode":"probability","p":0.7,"seed":1},"outputs":[{"type":"pcap"},{"type":"ipfix","target":{"transport":"file","path":"c.ipfix"},"resolution":"nanoseconds"}]}"#.to_string(),
        ];
        for c in &configs {
            d.add(Session::new(SessionConfig::from_json(c).unwrap(), &env).unwrap());
        }
        for (i, f) in frames.iter().enumerate() {
            d.process(i as u64 * 1_000_000_000, f, f.len() as u32 + (i as u32 % 3));
        }
        for (_, r) in d.stop_all(1 << 40) {
            let c = r.unwrap();
            prop_assert_eq!(c.seen, frames.len() as u64);
            prop_assert!(c.stored <= c.matched);
        }
    }
}
