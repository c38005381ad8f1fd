//! S3 archiving against a real `moto` server on 127.0.0.1.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use archive::{ArchiveEvent, Archiver, ArchiverConfig, JobState};
use common::{random_file, wait_for, Moto};
use object_store::aws::AmazonS3Builder;
use object_store::{path::Path as ObjectPath, ObjectStore};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);
const BUCKET: &str = "captures";
const PART: usize = 5 * 1024 * 1024;

fn creds_file(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("s3.cred");
    std::fs::write(
        &p,
        "# test credentials\naccess_key_id = testing\nsecret_access_key = testing-secret\n",
    )
    .unwrap();
    p
}

fn config(m: &Moto, work: &Path, bucket: &str, extra: serde_json::Value) -> ArchiverConfig {
    let mut c = json!({
        "state_dir": work.join("state"),
        "targets": {"s3": {
            "kind": "s3", "endpoint": m.endpoint(), "region": "us-east-1", "bucket": bucket,
            "prefix": "site-a/", "credentials": {"file": creds_file(work)}, "part_size": PART,
        }},
        "backoff": {"initial_ms": 100, "max_ms": 400}, "attempt_timeout_secs": 20,
    });
    for (k, v) in extra.as_object().unwrap() {
        c[k] = v.clone();
    }
    serde_json::from_value(c).unwrap()
}

/// An independent client to look at the bucket.
fn reader(m: &Moto, bucket: &str) -> Arc<dyn ObjectStore> {
    Arc::new(
        AmazonS3Builder::new()
            .with_endpoint(m.endpoint())
            .with_region("us-east-1")
            .with_bucket_name(bucket)
            .with_allow_http(true)
            .with_access_key_id("testing")
            .with_secret_access_key("testing-secret")
            .build()
            .unwrap(),
    )
}

async fn get(store: &Arc<dyn ObjectStore>, key: &str) -> Vec<u8> {
    store
        .get(&ObjectPath::from(key))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .to_vec()
}

async fn count(store: &Arc<dyn ObjectStore>) -> usize {
    use futures_util::TryStreamExt;
    let all: Vec<_> = store.list(None).try_collect().await.unwrap();
    all.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_identical_bytes_single_and_multipart() {
    let Some(m) = Moto::shared() else { return };
    m.create_bucket("t-identical");
    let work = tempfile::tempdir().unwrap();
    let archiver = Archiver::open(config(m, work.path(), "t-identical", json!({})))
        .await
        .unwrap();
    let sizes = [0usize, 10, 300_000, PART, 2 * PART + 12_345];
    let mut contents = Vec::new();
    for (i, len) in sizes.iter().enumerate() {
        let p = work.path().join(format!("f{i}.ipfix"));
        contents.push(random_file(&p, *len, i as u64));
        archiver
            .enqueue(&p, &format!("s1/f{i}.ipfix"), &["s3"])
            .unwrap();
    }
    wait_for("all confirmed", WAIT, || {
        archiver.stats().unwrap().done == sizes.len() as u64
    })
    .await;
    wait_for("local deletion", WAIT, || {
        archiver.stats().unwrap().local_deleted == sizes.len() as u64
    })
    .await;
    let store = reader(m, "t-identical");
    for (i, data) in contents.iter().enumerate() {
        assert!(
            get(&store, &format!("site-a/s1/f{i}.ipfix")).await == *data,
            "f{i} differs"
        );
        assert!(!work.path().join(format!("f{i}.ipfix")).exists());
    }
    assert_eq!(count(&store).await, sizes.len());
    let st = archiver.stats().unwrap();
    assert_eq!(
        (st.uploaded_files, st.failed_attempts),
        (sizes.len() as u64, 0)
    );
    assert_eq!(st.uploaded_bytes, sizes.iter().sum::<usize>() as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_down_at_first_then_started() {
    let Some(mut m) = Moto::prepare() else { return };
    let work = tempfile::tempdir().unwrap();
    let archiver = Archiver::open(config(&m, work.path(), BUCKET, json!({})))
        .await
        .unwrap();
    let p = work.path().join("early.pcap");
    let data = random_file(&p, 40_000, 3);
    archiver.enqueue(&p, "early.pcap", &["s3"]).unwrap();
    wait_for("failed attempts while down", WAIT, || {
        archiver.stats().unwrap().failed_attempts >= 2
    })
    .await;
    let st = archiver.status(&p).unwrap();
    assert_eq!(st[0].state, JobState::Pending);
    assert!(
        st[0]
            .last_error
            .as_deref()
            .unwrap_or("")
            .contains("s3: head"),
        "{st:?}"
    );
    assert!(p.exists());
    m.start();
    m.create_bucket(BUCKET);
    wait_for("upload after start", WAIT, || {
        archiver.stats().unwrap().done == 1
    })
    .await;
    assert_eq!(get(&reader(&m, BUCKET), "site-a/early.pcap").await, data);
    wait_for("local deletion", WAIT, || !p.exists()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_with_queued_and_in_flight_files_delivers_each_exactly_once() {
    let Some(m) = Moto::shared() else { return };
    m.create_bucket("t-restart");
    let work = tempfile::tempdir().unwrap();
    let n = 4u64;
    let mut contents = Vec::new();
    let uploaded_first;
    {
        let archiver = Archiver::open(config(m, work.path(), "t-restart", json!({})))
            .await
            .unwrap();
        let mut events = archiver.subscribe();
        for i in 0..n {
            let p = work.path().join(format!("q{i}.pcap"));
            // 6 MiB: two parts, so some uploads are mid-multipart at the drop
            contents.push(random_file(&p, PART + 256 * 1024 + i as usize, 50 + i));
            archiver
                .enqueue(&p, &format!("q{i}.pcap"), &["s3"])
                .unwrap();
        }
        loop {
            if let ArchiveEvent::Uploaded { .. } = events.recv().await.unwrap() {
                break;
            }
        }
        uploaded_first = archiver.stats().unwrap().done;
        assert!(uploaded_first < n);
        // simulated crash with the next uploads in flight
    }
    let archiver = Archiver::open(config(m, work.path(), "t-restart", json!({})))
        .await
        .unwrap();
    let done_at_open = archiver.stats().unwrap().done;
    wait_for("all done", WAIT, || archiver.stats().unwrap().done == n).await;
    wait_for("all local copies deleted", WAIT, || {
        (0..n).all(|i| !work.path().join(format!("q{i}.pcap")).exists())
    })
    .await;
    let store = reader(m, "t-restart");
    assert_eq!(count(&store).await as u64, n, "one object per file");
    for (i, data) in contents.iter().enumerate() {
        assert!(
            get(&store, &format!("site-a/q{i}.pcap")).await == *data,
            "q{i}"
        );
    }
    let st = archiver.stats().unwrap();
    assert_eq!(
        st.uploaded_files + st.already_present,
        n - done_at_open,
        "{st:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn already_present_object_is_not_sent_again() {
    let Some(m) = Moto::shared() else { return };
    m.create_bucket("t-already");
    let work = tempfile::tempdir().unwrap();
    let p = work.path().join("dup.pcap");
    let data = random_file(&p, 2 * PART + 1, 9);
    // the object completed remotely but the queue never heard (crash window)
    let store = reader(m, "t-already");
    let mut up = store
        .put_multipart(&ObjectPath::from("site-a/dup.pcap"))
        .await
        .unwrap();
    for chunk in data.chunks(PART) {
        up.put_part(chunk.to_vec().into()).await.unwrap();
    }
    up.complete().await.unwrap();
    let archiver = Archiver::open(config(m, work.path(), "t-already", json!({})))
        .await
        .unwrap();
    archiver.enqueue(&p, "dup.pcap", &["s3"]).unwrap();
    wait_for("done", WAIT, || archiver.stats().unwrap().done == 1).await;
    let st = archiver.stats().unwrap();
    assert_eq!((st.already_present, st.uploaded_files), (1, 0));
    wait_for("local deletion", WAIT, || !p.exists()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_bucket_is_reported_when_the_archiver_opens() {
    let Some(m) = Moto::shared() else { return };
    let work = tempfile::tempdir().unwrap();
    let cfg = config(m, work.path(), "no-such-bucket", json!({}));
    let e = Archiver::open(cfg).await.err().expect("open must fail");
    let msg = e.to_string();
    assert!(
        msg.contains("`s3`") && msg.contains("bucket `no-such-bucket` does not exist"),
        "{msg}"
    );
    assert!(msg.contains("create it"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_killed_mid_run_and_restarted() {
    let Some(mut m) = Moto::start_new() else {
        return;
    };
    m.create_bucket(BUCKET);
    let work = tempfile::tempdir().unwrap();
    let archiver = Archiver::open(config(
        &m,
        work.path(),
        BUCKET,
        json!({"max_concurrent_uploads": 1}),
    ))
    .await
    .unwrap();
    let n = 5u64;
    let mut contents = Vec::new();
    for i in 0..n {
        let p = work.path().join(format!("k{i}.pcap"));
        contents.push(random_file(&p, 2 * 1024 * 1024, 70 + i));
        archiver
            .enqueue(&p, &format!("k{i}.pcap"), &["s3"])
            .unwrap();
    }
    wait_for("first upload", WAIT, || archiver.stats().unwrap().done >= 1).await;
    m.kill();
    wait_for("failure while down", WAIT, || {
        archiver.stats().unwrap().failed_attempts >= 1
    })
    .await;
    let before = archiver.stats().unwrap().done;
    assert!(before < n, "the kill came too late to test anything");
    // moto keeps objects in memory: the restarted server starts empty
    m.start();
    m.create_bucket(BUCKET);
    wait_for("all uploads", WAIT, || archiver.stats().unwrap().done == n).await;
    let store = reader(&m, BUCKET);
    assert_eq!(count(&store).await as u64, n - before);
    for i in before..n {
        let data = &contents[i as usize];
        assert!(
            get(&store, &format!("site-a/k{i}.pcap")).await == *data,
            "k{i}"
        );
    }
    wait_for("local deletion", WAIT, || {
        archiver.stats().unwrap().local_deleted == n
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_credentials_are_used_and_never_shown() {
    let Some(m) = Moto::shared() else { return };
    let work = tempfile::tempdir().unwrap();
    std::env::set_var("ARCHIVE_TEST_AK", "testing");
    std::env::set_var("ARCHIVE_TEST_SK", "very-secret-value-42");
    m.create_bucket("env-creds");
    let mut cfg = config(m, work.path(), "env-creds", json!({"max_attempts": 1}));
    if let archive::TargetConfig::S3(c) = cfg.targets.get_mut("s3").unwrap() {
        c.credentials = archive::CredentialsSource::Env {
            access_key_id_var: "ARCHIVE_TEST_AK".into(),
            secret_access_key_var: "ARCHIVE_TEST_SK".into(),
        };
    }
    let archiver = Archiver::open(cfg.clone()).await.unwrap();
    let p = work.path().join("e.pcap");
    random_file(&p, 10, 1);
    archiver.enqueue(&p, "e.pcap", &["s3"]).unwrap();
    wait_for("uploaded", WAIT, || archiver.stats().unwrap().done == 1).await;
    let shown = format!("{cfg:?} {:?}", archiver.status(&p).unwrap());
    assert!(!shown.contains("very-secret-value-42"), "{shown}");
    // a missing variable is a clear setup error
    let mut bad = cfg.clone();
    bad.state_dir = work.path().join("state2");
    if let archive::TargetConfig::S3(c) = bad.targets.get_mut("s3").unwrap() {
        c.credentials = archive::CredentialsSource::Env {
            access_key_id_var: "ARCHIVE_TEST_UNSET_VAR".into(),
            secret_access_key_var: "ARCHIVE_TEST_SK".into(),
        };
    }
    let err = Archiver::open(bad).await.err().unwrap().to_string();
    assert!(err.contains("ARCHIVE_TEST_UNSET_VAR is not set"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_credentials_fail_with_reason_and_keep_file() {
    let Some(mut m) = Moto::prepare() else { return };
    m.enforce_auth = true;
    m.start();
    let work = tempfile::tempdir().unwrap();
    let archiver = Archiver::open(config(&m, work.path(), BUCKET, json!({"max_attempts": 2})))
        .await
        .unwrap();
    let p = work.path().join("kept.pcap");
    random_file(&p, 1000, 1);
    archiver.enqueue(&p, "kept.pcap", &["s3"]).unwrap();
    wait_for("failed", WAIT, || archiver.stats().unwrap().failed == 1).await;
    let st = archiver.status(&p).unwrap();
    assert_eq!((st[0].state, st[0].attempts), (JobState::Failed, 2));
    let reason = st[0].last_error.clone().unwrap();
    eprintln!("reason: {reason}");
    assert!(reason.contains("403"), "{reason}");
    assert!(p.exists());
}
