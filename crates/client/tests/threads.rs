//! Several threads injecting into one measurement point.

mod common;

use std::thread;

use client::Client;
use common::{decode, file, spec, ENCODINGS};
use omsp::{OmlType, Value, ValueRef};

const THREADS: i32 = 4;
const PER_THREAD: i32 = 100_000;

#[test]
fn four_threads_into_one_mp_lose_nothing_and_seq_increases() {
    for enc in ENCODINGS {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let client = Client::new(spec("app", vec![file(&path, enc)])).unwrap();
        let mp = client
            .add_mp(
                "m",
                &[
                    ("thread", OmlType::Int32),
                    ("n", OmlType::Int32),
                    ("s", OmlType::String),
                ],
            )
            .unwrap();
        client.start().unwrap();
        thread::scope(|s| {
            for t in 0..THREADS {
                let mp = mp.clone();
                s.spawn(move || {
                    for n in 0..PER_THREAD {
                        mp.inject(&[
                            ValueRef::Int32(t),
                            ValueRef::Int32(n),
                            ValueRef::String("sixteen-chars..!"),
                        ])
                        .unwrap();
                    }
                });
            }
        });
        client.close().unwrap();

        let d = decode(&std::fs::read(&path).unwrap());
        assert!(
            d.errors.is_empty(),
            "{:?}",
            &d.errors[..d.errors.len().min(3)]
        );
        let rows = d.stream(2);
        assert_eq!(rows.len(), (THREADS * PER_THREAD) as usize, "{enc:?}");
        let mut next = vec![0; THREADS as usize];
        for (i, r) in rows.iter().enumerate() {
            assert_eq!(r.seq, i as i64 + 1, "seq strictly increasing without gaps");
            let [Value::Int32(t), Value::Int32(n), _] = r.values[..] else {
                panic!("{r:?}")
            };
            assert_eq!(n, next[t as usize], "thread {t} keeps its order");
            next[t as usize] += 1;
        }
        let st = client.stats();
        assert_eq!(st.injected, (THREADS * PER_THREAD) as u64);
        assert_eq!(st.dropped_at_inject, 0);
        assert_eq!(
            st.destinations[0].source("m").written,
            (THREADS * PER_THREAD) as u64
        );
        assert_eq!(st.destinations[0].dropped, 0);
    }
}

#[test]
fn handles_are_shareable_between_threads() {
    fn shareable<T: Send + Sync>() {}
    fn cloneable<T: Clone>() {}
    shareable::<client::Mp>();
    cloneable::<client::Mp>();
    shareable::<Client>();
}
