//! The journal against an in-memory model (proptest): random sequences of
//! appends, acknowledgements, syncs, reloads (a process crash: what was
//! written survives, in-memory state does not) and torn writes (a partial
//! tuple at the end of the last segment) must keep exactly the model's
//! unacknowledged bytes, readable in order, and never lose a declaration.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use proptest::prelude::*;
use proxy::journal::schemas::Declaration;
use proxy::journal::{Journal, JournalOptions};
use proxy::FsyncPolicy;

const HEADER: &[u8] = b"protocol: 5\ndomain: d\nsender-id: s\nschema: 0 _experiment_metadata subject:string key:string value:string\nschema: 1 t_m i:int32 s:string\ncontent: text\n\n";

#[derive(Debug, Clone)]
enum Op {
    /// Tuples with these value lengths; `true`: a declaration first.
    Append(Vec<usize>, bool),
    /// Acknowledge this fraction (per mille) of the written data.
    Ack(u16),
    Sync,
    Reload,
    /// Append this many bytes of a tuple without its end, then reload.
    Torn(usize),
    /// Quota policy drop-oldest: delete the oldest segment.
    DropOldest,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (proptest::collection::vec(0usize..60, 1..20), proptest::bool::weighted(0.1))
            .prop_map(|(v, d)| Op::Append(v, d)),
        2 => (0u16..=1000).prop_map(Op::Ack),
        1 => Just(Op::Sync),
        1 => Just(Op::Reload),
        1 => (1usize..30).prop_map(Op::Torn),
        1 => Just(Op::DropOldest),
    ]
}

fn opts(policy: FsyncPolicy) -> JournalOptions {
    JournalOptions {
        fsync: policy,
        segment_size: 256,
        usage: Arc::new(AtomicU64::new(0)),
    }
}

fn tuple(seq: usize, len: usize) -> Vec<u8> {
    format!("0.5\t1\t{seq}\t{seq}\t{}\n", "v".repeat(len)).into_bytes()
}

/// Reads everything from `from` to the end.
fn read_all(j: &mut Journal, from: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 97];
    let mut at = from;
    loop {
        let n = j.read_at(at, &mut buf).unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&buf[..n]);
        at += n as u64;
    }
}

fn run(ops: Vec<Op>, policy: FsyncPolicy) -> Result<(), TestCaseError> {
    let root = tempfile::tempdir().unwrap();
    let mut j = Journal::create(root.path(), 1, HEADER, Some("c-1"), opts(policy)).unwrap();
    let dir = root.path().join("00000001");
    // The model: every byte ever appended, the acknowledged offset, the
    // declared schema indexes with their end offsets.
    let mut data: Vec<u8> = Vec::new();
    let mut acked = 0u64;
    // Highest offset ever acknowledged (survives the simulated crashes).
    let mut upstream_acked = 0u64;
    // Offset below which drop-oldest gave data up.
    let mut dropped_to = 0u64;
    let mut decls: Vec<u64> = Vec::new();
    let mut seq = 0;
    for op in ops {
        match op {
            Op::Append(lens, declare) => {
                let mut bytes = Vec::new();
                let mut new_decls = Vec::new();
                if declare {
                    let index = 2 + decls.len();
                    bytes.extend_from_slice(
                        format!("0.5\t0\t{seq}\t.\tschema\t{index} t_x{index} x:int32\n")
                            .as_bytes(),
                    );
                    let end = (data.len() + bytes.len()) as u64;
                    new_decls.push(Declaration {
                        end,
                        schema: omsp::Schema::parse(&format!("{index} t_x{index} x:int32"))
                            .unwrap(),
                    });
                    decls.push(end);
                }
                for len in lens {
                    bytes.extend(tuple(seq, len));
                    seq += 1;
                }
                j.append(&bytes, new_decls).unwrap();
                data.extend(bytes);
            }
            Op::Ack(permille) => {
                let at = data.len() as u64 * u64::from(permille) / 1000;
                j.ack(at).unwrap();
                acked = acked.max(at);
                upstream_acked = upstream_acked.max(at);
            }
            Op::Sync => j.sync().unwrap(),
            Op::DropOldest => {
                let (start, before) = (j.start(), j.lost());
                if let Some(lost) = j.drop_oldest().unwrap() {
                    // What was not acknowledged below the new start is lost,
                    // counted exactly.
                    let expected = j.start().saturating_sub(start.max(acked));
                    prop_assert_eq!(lost, expected);
                    prop_assert_eq!(j.lost(), before + lost);
                    dropped_to = j.start();
                    acked = acked.max(j.acked());
                }
            }
            Op::Reload => {
                drop(j);
                j = Journal::open(&dir, opts(policy)).unwrap();
                // Acks are stored lazily: after a crash the journal may
                // know an older one (the upstream then resumes further on).
                prop_assert!(j.acked() <= acked);
                acked = j.acked();
            }
            Op::Torn(n) => {
                let t = tuple(seq, 40);
                let segs = proxy::journal::segment::list(&dir).unwrap();
                if let Some(last) = segs.last() {
                    use std::io::Write;
                    let mut f = std::fs::OpenOptions::new()
                        .append(true)
                        .open(proxy::journal::segment::path(&dir, last.start))
                        .unwrap();
                    f.write_all(&t[..n.min(t.len() - 1)]).unwrap();
                }
                drop(j);
                j = Journal::open(&dir, opts(policy)).unwrap();
                prop_assert!(j.acked() <= acked);
                acked = j.acked();
            }
        }
        prop_assert_eq!(j.end(), data.len() as u64);
        // Nothing the upstream did not acknowledge was freed.
        prop_assert!(j.start() == 0 || j.start() <= upstream_acked.max(dropped_to));
        let from = j.start();
        let held = read_all(&mut j, from);
        prop_assert_eq!(&held[..], &data[from as usize..]);
        // Every declaration is in the header the journal would resume with.
        let h = j.header_at(j.end());
        let text = String::from_utf8(h).unwrap();
        for i in 0..decls.len() {
            let wanted = format!("schema: {} t_x{} x:int32", i + 2, i + 2);
            prop_assert!(text.contains(&wanted), "{} missing from {}", wanted, text);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn journal_matches_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        run(ops, FsyncPolicy::Never)?;
    }

    #[test]
    fn journal_matches_the_model_with_fsync(ops in proptest::collection::vec(op(), 1..15)) {
        run(ops, FsyncPolicy::Always)?;
    }
}
