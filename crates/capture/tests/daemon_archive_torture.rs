//! Restart torture of the archive path, as root: the capture daemon (a
//! process, see `common::daemon_proc`) captures on a veth in a namespace
//! this test creates into rolling pcap files and an IPFIX file, archived
//! with `keep_local = false` to a real sshd and a real S3 server (moto),
//! both on loopback. The daemon itself is SIGKILLed and SIGTERMed again
//! and again, twice while one target is frozen with SIGSTOP.
//!
//! Checked: every file the daemon closed (seen locally with its metadata)
//! is on both targets exactly once, byte-identical, with its `.json` and
//! `.xml`; no packet is in two files; nothing is left locally; while one
//! target is frozen, files keep reaching the other.

mod common;

#[path = "../../archive/tests/common/mod.rs"]
mod archive_common;

use archive_common::{Moto, Sshd};
use capture::daemon::ctl::CtlClient;
use common::daemon_proc::{child_main, wait_for, DaemonProc};
use common::netns::{in_netns, pair, root_or_skip, wait_reachable};
use std::collections::{BTreeMap, BTreeSet};
use std::net::UdpSocket;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[test]
fn child_daemon() {
    child_main();
}

const BUCKET: &str = "torture";

/// How a daemon run ends.
#[derive(Debug, Clone, Copy, PartialEq)]
enum End {
    Kill,
    Term,
    /// SIGKILL while S3 is frozen (after files reached sftp meanwhile).
    KillS3Frozen,
    /// SIGKILL while sshd is frozen.
    KillSftpFrozen,
}

/// A closed file as its three parts: data, `.json`, `.xml`.
type Entry = [Vec<u8>; 3];

/// Local files seen closed (their `.json` written), with their name.
type Seen = Arc<Mutex<BTreeSet<(Entry, String)>>>;

/// Copies every closed file of `dir` (data file, `.json`, `.xml`) until
/// `stop`, before the archiver deletes it. The `.json` appears last and
/// whole (renamed into place), so the three are complete once it is there;
/// a file already deleted when first seen is counted as missed.
fn watch(dir: PathBuf, seen: Seen, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut missed = 0;
        let mut done = BTreeSet::new();
        while !stop.load(Ordering::Relaxed) {
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(data) = name.strip_suffix(".json") else {
                    continue;
                };
                // A name comes back in a later run (the earlier file was
                // archived and deleted): the metadata's inode tells them apart.
                let ino = e.metadata().map(|m| m.ino()).unwrap_or(0);
                let key = (name.clone(), ino);
                if done.contains(&key) {
                    continue;
                }
                done.insert(key);
                let read = |n: &str| std::fs::read(dir.join(n));
                match (read(data), read(&name), read(&format!("{data}.xml"))) {
                    (Ok(d), Ok(j), Ok(x)) => {
                        seen.lock().unwrap().insert(([d, j, x], data.to_string()));
                    }
                    _ => missed += 1,
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        missed
    })
}

/// Data files (not metadata) among remote names.
fn data_files(names: &BTreeMap<String, Vec<u8>>) -> usize {
    names
        .keys()
        .filter(|n| !n.ends_with(".json") && !n.ends_with(".xml"))
        .count()
}

fn sftp_files(s: &Sshd) -> BTreeMap<String, Vec<u8>> {
    s.files()
        .into_iter()
        .filter(|f| f.starts_with("lab1/t1/") && !f.contains(".part"))
        .map(|f| {
            let b = std::fs::read(s.root.join(&f)).unwrap_or_default();
            (f, b)
        })
        .collect()
}

/// The sender's counters in a pcap file (nanosecond pcap, Ethernet + IPv4 + UDP).
fn counters(pcap: &[u8]) -> Vec<u64> {
    let mut out = Vec::new();
    let mut at = 24;
    while let Some(h) = pcap.get(at..at + 16) {
        let caplen = u32::from_le_bytes(h[8..12].try_into().unwrap()) as usize;
        if let Some(c) = pcap.get(at + 16 + 42..at + 16 + 50) {
            out.push(u64::from_be_bytes(c.try_into().unwrap()));
        }
        at += 16 + caplen;
    }
    out
}

#[test]
fn daemon_killed_and_restarted_archives_every_file_once() {
    let t0 = Instant::now();
    if !root_or_skip("archive restart torture") || !common::have("ip") {
        return;
    }
    let Some(sshd) = Sshd::start_new() else {
        return;
    };
    let Some(moto) = Moto::start_new() else {
        return;
    };
    moto.create_bucket(BUCKET);
    let (a, b, _guard) = pair("sgt", &[("va", "vb", "10.87.0")]);
    wait_reachable(&b, "10.87.0.1");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let tokens = dir.path().join("tokens");
    httpkit::secret::write_private(&tokens, "* tk read,control\n").unwrap();
    let creds = dir.path().join("s3.cred");
    httpkit::secret::write_private(
        &creds,
        "access_key_id = testing\nsecret_access_key = testing-secret\n",
    )
    .unwrap();
    // The shared [archive] section (sftp target `lab`) with our keys added.
    let archive = sshd
        .daemon_archive_toml(&dir.path().join("state"))
        .replacen(
            "[archive]\n",
            "[archive]\nkeep_local = false\nattempt_timeout_secs = 30\n",
            1,
        );
    let config = dir.path().join("capture.toml");
    std::fs::write(
        &config,
        format!(
            r#"interfaces = ["va"]
data_dir = "{data}"
listen = "127.0.0.1:0"
plain_http = true
token_file = "{tokens}"
netns = "{a}"
{archive}
[archive.targets.store]
kind = "s3"
endpoint = "{endpoint}"
region = "us-east-1"
bucket = "{BUCKET}"
credentials = {{ file = "{creds}" }}
"#,
            data = data.display(),
            tokens = tokens.display(),
            endpoint = moto.endpoint(),
            creds = creds.display(),
        ),
    )
    .unwrap();

    // Steady numbered datagrams from B for the whole test.
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let (b, stop) = (b.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            in_netns(&b, move || {
                let s = UdpSocket::bind("10.87.0.2:0").unwrap();
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let _ = s.send_to(&i.to_be_bytes().repeat(25), "10.87.0.1:7300");
                    i += 1;
                    std::thread::sleep(Duration::from_millis(4));
                }
            })
        })
    };
    let seen: Seen = Arc::default();
    let watching = Arc::new(AtomicBool::new(false));
    std::fs::create_dir_all(data.join("t1")).unwrap();
    let watcher = watch(data.join("t1"), Arc::clone(&seen), Arc::clone(&watching));
    let closed = || seen.lock().unwrap().len();

    let rounds = [
        End::Kill,
        End::Term,
        End::KillS3Frozen,
        End::Kill,
        End::KillSftpFrozen,
        End::Term,
        End::Kill,
    ];
    let mut frozen_ms = Vec::new();
    for (r, end) in rounds.iter().enumerate() {
        let d = DaemonProc::start(&config);
        let c = CtlClient::new(&d.addr, Some("tk".into()));
        if r == 0 {
            c.post(
                "/api/v1/sessions?experiment=lab1&archive=lab,store",
                r#"{"name":"t1","interface":"va","filter":"udp dst port 7300",
                    "outputs":[{"type":"pcap"},
                               {"type":"ipfix","target":{"transport":"file","path":"flows.ipfix"}}],
                    "rollover":{"bytes":40000}}"#,
            )
            .unwrap();
            c.post("/api/v1/sessions/t1/start", "{}").unwrap();
        }
        let before = closed();
        wait_for("two files closed in this run", 15, || {
            closed() >= before + 2
        });
        let mut freeze = |stopped: &dyn Fn(&str), other: &dyn Fn() -> usize| {
            let (n0, t) = (other(), Instant::now());
            stopped("STOP");
            // Files closed while one target hangs still reach the other
            // (attempts there would wait 30 s for their timeout).
            wait_for("uploads to the other target go on", 10, || {
                other() >= n0 + 3
            });
            frozen_ms.push(t.elapsed().as_millis());
            d.signal("-KILL");
            stopped("CONT");
        };
        match end {
            End::Kill => d.kill(),
            End::Term => d.terminate(20),
            End::KillS3Frozen => freeze(&|s| moto.signal(s), &|| data_files(&sftp_files(&sshd))),
            End::KillSftpFrozen => {
                freeze(&|s| sshd.signal(s), &|| data_files(&moto.objects(BUCKET)))
            }
        }
    }
    // A last run: the session stops cleanly, everything is archived.
    let d = DaemonProc::start(&config);
    let c = CtlClient::new(&d.addr, Some("tk".into()));
    c.post("/api/v1/sessions/t1/stop", "{}").unwrap();
    stop.store(true, Ordering::Relaxed);
    sender.join().unwrap();
    wait_for("every local file archived and deleted", 30, || {
        std::fs::read_dir(data.join("t1"))
            .unwrap()
            .flatten()
            .all(|e| e.file_name().to_string_lossy().starts_with('.'))
    });
    watching.store(true, Ordering::Relaxed);
    let missed = watcher.join().unwrap();
    d.terminate(20);

    let sftp = sftp_files(&sshd);
    let s3 = moto.objects(BUCKET);
    // Each remote data file with its metadata documents beside it.
    let entries = |m: &BTreeMap<String, Vec<u8>>| -> Vec<(Entry, String)> {
        let mut v: Vec<(Entry, String)> = m
            .iter()
            .filter(|(n, _)| !n.ends_with(".json") && !n.ends_with(".xml"))
            .map(|(n, d)| {
                let part = |ext: &str| {
                    m.get(&format!("{n}.{ext}"))
                        .unwrap_or_else(|| panic!("{n}.{ext} missing"))
                        .clone()
                };
                ([d.clone(), part("json"), part("xml")], n.clone())
            })
            .collect();
        v.sort();
        v
    };
    let (on_sftp, on_s3) = (entries(&sftp), entries(&s3));
    let bytes = |v: &[(Entry, String)]| v.iter().map(|e| e.0.clone()).collect::<Vec<_>>();
    assert!(
        bytes(&on_sftp) == bytes(&on_s3),
        "the same files on both targets"
    );
    assert_eq!(
        sftp.len(),
        3 * on_sftp.len(),
        "only files and their metadata"
    );
    let twice: Vec<_> = on_sftp
        .windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| (&w[0].1, &w[1].1))
        .collect();
    assert!(twice.is_empty(), "a file archived twice: {twice:?}");
    let seen = seen.lock().unwrap();
    for (e, name) in seen.iter() {
        assert!(
            on_sftp.iter().any(|r| &r.0 == e),
            "{name}, closed locally, is not on the targets byte for byte"
        );
    }
    // Two local files with the same bytes under the same name (an IPFIX
    // file of a run killed before its first tick is empty, its recovered
    // metadata the same) are one remote file: the second finds the first.
    let distinct: BTreeSet<&Entry> = seen.iter().map(|(e, _)| e).collect();
    assert!(
        distinct.len() <= on_sftp.len() && on_sftp.len() <= distinct.len() + missed,
        "{} distinct files closed ({missed} missed), {} on the targets",
        distinct.len(),
        on_sftp.len()
    );
    // Packets: none in two files; gaps only where the daemon was down.
    let mut all: Vec<u64> = sftp
        .iter()
        .filter(|(n, _)| n.ends_with(".pcap"))
        .flat_map(|(_, b)| counters(b))
        .collect();
    all.sort();
    let n = all.len();
    all.dedup();
    assert_eq!(all.len(), n, "a packet is in two files");
    let gaps = all.windows(2).filter(|w| w[1] != w[0] + 1).count();
    assert!(gaps <= rounds.len(), "{gaps} gaps in the packet numbers");
    eprintln!(
        "{} files closed ({} seen before deletion, {missed} missed), {} remote files per target, \
         {n} packets; other target's 3 uploads while one was frozen: {frozen_ms:?} ms; {:?}",
        data_files(&sftp),
        seen.len(),
        sftp.len(),
        t0.elapsed()
    );
}
