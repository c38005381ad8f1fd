use super::*;

fn rec(i: u64, v6: bool) -> FlowRecord {
    FlowRecord {
        key: FlowKey {
            v6,
            src: if v6 {
                u128::MAX - u128::from(i)
            } else {
                u128::from(i)
            },
            dst: 0x0a00_0001,
            sport: i as u16,
            dport: 53,
            proto: 17,
        },
        start_ns: 1_700_000_000_000_000_000 + i,
        end_ns: 1_700_000_001_000_000_000 + i,
        packets: i + 1,
        octets: 100 * (i + 1),
        tcp_flags: 0x12,
        rev_packets: i,
        rev_octets: 7 * i,
        rev_tcp_flags: 0x10,
        end_reason: EndReason::Idle,
    }
}

#[test]
fn round_trip_and_damaged_files_are_errors() {
    let a: Vec<FlowRecord> = (0..50).map(|i| rec(i, i % 4 == 0)).collect();
    let b: Vec<FlowRecord> = Vec::new();
    let file = PathBuf::from("/data/s1/flows.1.ipfix");
    let mut buf = Vec::new();
    Checkpoint::encode(
        &mut buf,
        [
            (1u32, Some(file.as_path()), 4242u64, a.iter()),
            (2, None, 0, b.iter()),
        ],
    );
    let back = Checkpoint::decode(&buf).unwrap();
    assert_eq!(back.outputs.len(), 2);
    assert_eq!(back.outputs[0].file.as_deref(), Some(file.as_path()));
    assert_eq!(
        (back.outputs[0].domain, back.outputs[0].file_len),
        (1, 4242)
    );
    assert_eq!(back.outputs[0].flows, a);
    assert_eq!((back.outputs[1].file.clone(), back.flows()), (None, 50));
    // Every cut and every extra byte is refused, never a panic.
    for n in 0..buf.len() {
        assert!(Checkpoint::decode(&buf[..n]).is_err(), "cut at {n}");
    }
    let mut long = buf.clone();
    long.push(0);
    assert!(Checkpoint::decode(&long).is_err());
    let mut bad = buf.clone();
    bad[0] = b'X';
    assert!(Checkpoint::decode(&bad).is_err());
}

#[test]
fn write_read_remove_and_cut() {
    let t = tempfile::tempdir().unwrap();
    let ck = t.path().join("s.flows");
    assert_eq!(Checkpoint::read(&ck).unwrap(), None);
    let open = t.path().join("flows.ipfix");
    let closed = t.path().join("flows.1.ipfix");
    std::fs::write(&open, [1u8; 300]).unwrap();
    std::fs::write(&closed, [1u8; 300]).unwrap();
    std::fs::write(t.path().join("flows.1.ipfix.json"), b"{}").unwrap();
    let f = [rec(1, false)];
    let mut buf = Vec::new();
    Checkpoint::encode(
        &mut buf,
        [
            (1u32, Some(open.as_path()), 100u64, f.iter()),
            (2, Some(closed.as_path()), 100, f.iter()),
        ],
    );
    write_atomic(&ck, &buf).unwrap();
    let back = Checkpoint::read(&ck).unwrap().unwrap();
    let lines = back.cut_open_files().unwrap();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(std::fs::metadata(&open).unwrap().len(), 100);
    // A closed file (metadata written) is never cut.
    assert_eq!(std::fs::metadata(&closed).unwrap().len(), 300);
    // Cutting again changes nothing.
    assert!(back.cut_open_files().unwrap().is_empty());
    remove(&ck).unwrap();
    remove(&ck).unwrap();
    assert_eq!(Checkpoint::read(&ck).unwrap(), None);
    std::fs::write(&ck, b"SGFLOWC1\0\0").unwrap();
    assert!(matches!(
        Checkpoint::read(&ck),
        Err(CheckpointError::Corrupt { .. })
    ));
}
