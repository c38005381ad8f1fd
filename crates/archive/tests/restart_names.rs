//! A capture session restarted again and again with `keep_local = false`
//! writes files under names it used before (the first `flows.ipfix` was
//! archived and deleted, so the name is free on disk again; the packet file
//! sequence starts from zero in an empty directory). Against a real sshd and
//! a real S3 server (moto) on loopback, every file ever closed must end up
//! exactly once on each target, byte-identical — nothing replaced — with a
//! file and its metadata under matching names.
//!
//! Each round does what the capture daemon does at a start: a new
//! `Archiver` on the same state directory, the files found on disk enqueued
//! again (crash recovery), then the session's new files written beside them
//! (never over them: `stem.N.ext` when the name is still taken, as the
//! daemon's IPFIX output does) and enqueued. Rounds end by a clean shutdown
//! after the uploads, or by dropping the archiver with uploads queued and
//! in flight — the library-level equivalent of a SIGKILL used by the other
//! tests here.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use archive::{Archiver, ArchiverConfig};
use common::{random_file, wait_for, Moto, Sshd};
use futures_util::TryStreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::ObjectStore;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);
const BUCKET: &str = "restarts";

/// The data files a session writes at each start, by the name it asks for;
/// the IPFIX file has its metadata beside it (`<file>.json`, `<file>.xml`).
const PCAP: &str = "s1_000000_20260101T000000Z.pcapng";
const IPFIX: &str = "flows.ipfix";

/// Files written per round.
const PER_ROUND: u64 = 4;

fn config(s: &Sshd, m: &Moto, work: &Path) -> ArchiverConfig {
    let creds = work.join("s3.cred");
    std::fs::write(
        &creds,
        "access_key_id = testing\nsecret_access_key = testing-secret\n",
    )
    .unwrap();
    serde_json::from_value(json!({
        "state_dir": work.join("state"),
        "targets": {
            "sftp": {"kind": "sftp", "host": "127.0.0.1", "port": s.port, "user": s.user,
                "private_key_file": s.client_key, "known_hosts_file": s.known_hosts,
                "remote_dir": s.root.join("archive")},
            "s3": {"kind": "s3", "endpoint": m.endpoint(), "region": "us-east-1",
                "bucket": BUCKET, "credentials": {"file": creds}},
        },
        "keep_local": false,
        "backoff": {"initial_ms": 100, "max_ms": 400}, "attempt_timeout_secs": 20,
    }))
    .unwrap()
}

/// `p` if it and its metadata names are free, else `stem.N.ext` with the
/// smallest free N (the daemon's rule for an output file whose previous run
/// — or only that run's metadata — is still on disk, waiting for upload).
fn free_path(p: &Path) -> PathBuf {
    let free = |c: &Path| {
        ["", ".json", ".xml"]
            .iter()
            .all(|m| !PathBuf::from(format!("{}{m}", c.display())).exists())
    };
    if free(p) {
        return p.to_path_buf();
    }
    let name = p.file_name().unwrap().to_str().unwrap();
    let (stem, ext) = name.split_once('.').unwrap();
    (1..)
        .map(|n| p.with_file_name(format!("{stem}.{n}.{ext}")))
        .find(|c| free(c))
        .unwrap()
}

fn enqueue(a: &Archiver, path: &Path) {
    let name = path.file_name().unwrap().to_str().unwrap();
    a.enqueue(path, &format!("exp/s1/{name}"), &["sftp", "s3"])
        .unwrap();
}

fn on_disk(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// Every object of the S3 target: key → bytes.
async fn s3_objects(m: &Moto) -> BTreeMap<String, Vec<u8>> {
    let store: Arc<dyn ObjectStore> = Arc::new(
        AmazonS3Builder::new()
            .with_endpoint(m.endpoint())
            .with_region("us-east-1")
            .with_bucket_name(BUCKET)
            .with_allow_http(true)
            .with_access_key_id("testing")
            .with_secret_access_key("testing-secret")
            .build()
            .unwrap(),
    );
    let metas: Vec<_> = store.list(None).try_collect().await.unwrap();
    let mut out = BTreeMap::new();
    for meta in metas {
        let body = store.get(&meta.location).await.unwrap().bytes().await;
        out.insert(meta.location.to_string(), body.unwrap().to_vec());
    }
    out
}

/// Every file of the sftp target: relative name → bytes.
fn sftp_files(s: &Sshd) -> BTreeMap<String, Vec<u8>> {
    s.files()
        .into_iter()
        .filter_map(|f| {
            let name = f.strip_prefix("archive/")?.to_string();
            Some((name, std::fs::read(s.root.join(&f)).unwrap()))
        })
        .collect()
}

/// Each content of `closed` exactly once among `remote`'s values, nothing
/// else, and every IPFIX file with its two metadata files under the same
/// stem.
fn assert_each_once(what: &str, remote: &BTreeMap<String, Vec<u8>>, closed: &[Vec<u8>]) {
    let mut want: Vec<&Vec<u8>> = closed.iter().collect();
    let mut got: Vec<&Vec<u8>> = remote.values().collect();
    want.sort();
    got.sort();
    assert_eq!(
        got.len(),
        want.len(),
        "{what}: {} files closed, {} remote: {:?}",
        want.len(),
        got.len(),
        remote.keys().collect::<Vec<_>>()
    );
    assert!(
        got == want,
        "{what}: remote contents differ from the files closed"
    );
    for name in remote.keys().filter(|n| n.ends_with(".ipfix")) {
        for ext in ["json", "xml"] {
            assert!(
                remote.contains_key(&format!("{name}.{ext}")),
                "{what}: {name} has no .{ext} beside it: {:?}",
                remote.keys().collect::<Vec<_>>()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_session_never_replaces_archived_files() {
    let Some(s) = Sshd::start_new() else { return };
    let Some(m) = Moto::start_new() else { return };
    m.create_bucket(BUCKET);
    let work = tempfile::tempdir().unwrap();
    let session = work.path().join("cap/s1");
    std::fs::create_dir_all(&session).unwrap();
    let mut closed: Vec<Vec<u8>> = Vec::new();
    let rounds = 5u64;
    for round in 0..rounds {
        let archiver = Archiver::open(config(&s, &m, work.path())).await.unwrap();
        // crash recovery: whatever is still on disk goes again
        for p in on_disk(&session) {
            enqueue(&archiver, &p);
        }
        // the session starts again into new files
        let pcap = free_path(&session.join(PCAP));
        let ipfix = free_path(&session.join(IPFIX));
        let meta = |ext: &str| PathBuf::from(format!("{}.{ext}", ipfix.display()));
        let files = [
            (pcap, 300_000),
            (ipfix.clone(), 5_000),
            (meta("json"), 700),
            (meta("xml"), 900),
        ];
        for (i, (p, len)) in files.iter().enumerate() {
            closed.push(random_file(p, *len, round * 10 + i as u64));
            enqueue(&archiver, p);
        }
        match round % 3 {
            // clean stop once everything is archived
            0 => {
                wait_for("every local file archived and deleted", WAIT, || {
                    on_disk(&session).is_empty()
                })
                .await;
                archiver.shutdown().await;
            }
            // killed at once, uploads queued
            1 => drop(archiver),
            // killed with some of the files done and some in flight
            _ => {
                wait_for("a first local file deleted", WAIT, || {
                    archiver.stats().unwrap().local_deleted >= 1
                })
                .await;
                drop(archiver);
            }
        }
    }
    let archiver = Archiver::open(config(&s, &m, work.path())).await.unwrap();
    for p in on_disk(&session) {
        enqueue(&archiver, &p);
    }
    wait_for("every local file archived and deleted", WAIT, || {
        on_disk(&session).is_empty() && archiver.stats().unwrap().queued == 0
    })
    .await;
    assert_eq!(closed.len() as u64, rounds * PER_ROUND);
    assert_each_once("sftp", &sftp_files(&s), &closed);
    assert_each_once("s3", &s3_objects(&m).await, &closed);
    // the second file asking for `flows.ipfix` got the first free variant
    assert!(sftp_files(&s).contains_key("exp/s1/flows~2.ipfix"));
}
