//! Packet file outputs: pcap/pcapng encoding, rolling files, crash repair.

pub mod format;
pub mod rotate;

pub use format::{repair, FileFormat, RepairError, RepairReport};
pub use rotate::{
    sequence_of, ClosedFile, Quota, QuotaPolicy, Rollover, RotatingWriter, WriteError,
    WriterConfig, Written,
};

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn cfg(dir: &std::path::Path, format: FileFormat) -> WriterConfig {
        WriterConfig {
            dir: dir.join("s"),
            session: "exp1".into(),
            format,
            snaplen: 65535,
            linktype: format::LINKTYPE_ETHERNET,
            interface: "eth0".into(),
            rollover: Rollover {
                seconds: Some(10),
                bytes: Some(1000),
            },
            quota: None,
        }
    }

    #[test]
    fn rollover_by_size_and_time_with_permissions() {
        let t = tempfile::tempdir().unwrap();
        for format in [FileFormat::Pcap, FileFormat::Pcapng] {
            let mut w = RotatingWriter::new(cfg(t.path(), format)).unwrap();
            let frame = [0xabu8; 100];
            for i in 0..20u64 {
                w.write(1_700_000_000_000_000_000 + i * 1_000_000_000, &frame, 100)
                    .unwrap();
            }
            w.close().unwrap();
            let closed = w.take_closed();
            assert!(closed.len() >= 3, "{closed:?}");
            assert_eq!(closed.iter().map(|c| c.packets).sum::<u64>(), 20);
            for c in &closed {
                assert!(c.bytes <= 1000);
                let m = std::fs::metadata(&c.path).unwrap();
                assert_eq!(m.len(), c.bytes);
                assert_eq!(m.permissions().mode() & 0o777, 0o600);
                let name = c.path.file_name().unwrap().to_str().unwrap();
                assert!(
                    name.starts_with(&format!("exp1_{:06}_2023", c.seq)),
                    "{name}"
                );
                assert_eq!(repair(&c.path).unwrap().records, c.packets);
            }
            let dm = std::fs::metadata(t.path().join("s")).unwrap();
            assert_eq!(dm.permissions().mode() & 0o777, 0o700);
            std::fs::remove_dir_all(t.path().join("s")).unwrap();
        }
    }

    #[test]
    fn headers_carry_the_link_type() {
        for format in [FileFormat::Pcap, FileFormat::Pcapng] {
            let h = format.header(65535, "tun0", 101);
            assert_eq!(format::header_linktype(&h), Some(101), "{format:?}");
            assert_eq!(format::header_linktype(&h[..20]), None);
        }
    }

    #[test]
    fn a_new_writer_numbers_after_existing_files() {
        let t = tempfile::tempdir().unwrap();
        let c = cfg(t.path(), FileFormat::Pcap);
        let c2 = c.clone();
        let mut w = RotatingWriter::new(c.clone()).unwrap();
        w.write(1_700_000_000_000_000_000, &[1u8; 60], 60).unwrap();
        w.close().unwrap();
        let first = w.take_closed();
        drop(w);
        let mut w = RotatingWriter::new(c).unwrap();
        w.write(1_700_000_000_000_000_000, &[1u8; 60], 60).unwrap();
        w.close().unwrap();
        let second = w.take_closed();
        assert_eq!((first[0].seq, second[0].seq), (0, 1));
        let name = second[0].path.file_name().unwrap().to_str().unwrap();
        assert_eq!(sequence_of("exp1", name), Some(1));
        assert!(first[0].path.exists());
        // the files were archived and deleted, one metadata document of the
        // last is still waiting: its sequence is not used again
        let meta = format!("{}.json", second[0].path.display());
        std::fs::write(&meta, b"{}").unwrap();
        std::fs::remove_file(&first[0].path).unwrap();
        std::fs::remove_file(&second[0].path).unwrap();
        let mut w = RotatingWriter::new(c2).unwrap();
        w.write(1_700_000_000_000_000_000, &[1u8; 60], 60).unwrap();
        w.close().unwrap();
        assert_eq!(w.take_closed()[0].seq, 2);
        assert_eq!(std::fs::read(&meta).unwrap(), b"{}");
    }

    #[test]
    fn quota_stop_and_delete_oldest() {
        let t = tempfile::tempdir().unwrap();
        let mut c = cfg(t.path(), FileFormat::Pcap);
        c.rollover = Rollover {
            seconds: None,
            bytes: Some(500),
        };
        c.quota = Some(Quota {
            bytes: 1200,
            policy: QuotaPolicy::Stop,
        });
        let mut w = RotatingWriter::new(c.clone()).unwrap();
        let results: Vec<Written> = (0..20)
            .map(|i| w.write(i, &[1u8; 100], 100).unwrap())
            .collect();
        assert!(results.contains(&Written::QuotaFull));
        w.close().unwrap();
        let total: u64 = w.take_closed().iter().map(|f| f.bytes).sum();
        assert!(total <= 1200);

        c.dir = t.path().join("d");
        c.quota = Some(Quota {
            bytes: 1200,
            policy: QuotaPolicy::DeleteOldest,
        });
        let mut w = RotatingWriter::new(c).unwrap();
        for i in 0..50 {
            assert_eq!(w.write(i, &[1u8; 100], 100).unwrap(), Written::Stored);
        }
        w.close().unwrap();
        let on_disk: u64 = std::fs::read_dir(t.path().join("d"))
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum();
        assert!(on_disk <= 1200, "{on_disk}");
    }

    #[test]
    fn repair_truncates_partial_record() {
        let t = tempfile::tempdir().unwrap();
        for format in [FileFormat::Pcap, FileFormat::Pcapng] {
            let p = t.path().join(format.extension());
            let mut b = format.header(65535, "x", format::LINKTYPE_ETHERNET);
            for i in 0..3 {
                format.record(1_700_000_000_000_000_000 + i, &[9u8; 61], 61, &mut b);
            }
            let good = b.len() as u64;
            format.record(9, &[9u8; 61], 61, &mut b);
            b.truncate(b.len() - 7);
            std::fs::write(&p, &b).unwrap();
            let r = repair(&p).unwrap();
            assert_eq!((r.records, r.new_len), (3, good));
            assert_eq!(
                (r.first_ns, r.last_ns),
                (1_700_000_000_000_000_000, 1_700_000_000_000_000_002)
            );
            assert_eq!(std::fs::metadata(&p).unwrap().len(), good);
        }
    }
}
