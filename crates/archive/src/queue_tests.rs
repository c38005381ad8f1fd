//! Unit tests of the queue (beside it, split off to keep the file short).

use super::*;

use std::time::Duration;

#[test]
fn a_second_queue_on_the_same_dir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let q = Queue::open(dir.path(), Duration::from_secs(1)).unwrap();
    let e = Queue::open(dir.path(), Duration::from_millis(100))
        .err()
        .unwrap();
    assert!(e.to_string().contains("locked"), "{e}");
    drop(q);
    Queue::open(dir.path(), Duration::from_millis(100)).unwrap();
}

#[test]
fn survives_reopen_and_dedups() {
    let dir = tempfile::tempdir().unwrap();
    let targets = vec!["a".to_string(), "b".to_string()];
    {
        let q = Queue::open(dir.path(), Duration::from_secs(1)).unwrap();
        let (id, new) = q
            .add(Path::new("/cap/1.pcap"), "1.pcap", "i1", &targets)
            .unwrap();
        assert!(new);
        q.set_done(id, "a").unwrap();
        q.set_failed_attempt(id, "b", 1, i64::MAX, false, "refused")
            .unwrap();
        assert!(q.due(0, 10, |_, _| false).unwrap().is_empty());
    }
    let q = Queue::open(dir.path(), Duration::from_secs(1)).unwrap();
    let (_, new) = q
        .add(Path::new("/cap/1.pcap"), "1.pcap", "i1", &targets)
        .unwrap();
    assert!(!new);
    let due = q.due(0, 10, |_, _| false).unwrap();
    assert_eq!(due.len(), 1, "reopen makes b due, a stays done");
    assert_eq!((due[0].target.as_str(), due[0].attempts), ("b", 1));
    assert_eq!(
        q.counts().unwrap(),
        JobCounts {
            pending: 1,
            done: 1,
            failed: 0
        }
    );
    assert!(!q.file_complete(due[0].file_id).unwrap());
    q.set_done(due[0].file_id, "b").unwrap();
    assert_eq!(q.completed_undeleted().unwrap().len(), 1);
    q.set_local_deleted(due[0].file_id).unwrap();
    assert!(q.completed_undeleted().unwrap().is_empty());
    // the same file found again (crash recovery, keep_local) is done
    let (_, new) = q
        .add(Path::new("/cap/1.pcap"), "1.pcap", "i1", &targets)
        .unwrap();
    assert!(!new);
    assert!(q.due(0, 10, |_, _| false).unwrap().is_empty());
    // a new file reusing an archived path is queued afresh, under a
    // remote name of its own
    let (_, new) = q
        .add(Path::new("/cap/1.pcap"), "1.pcap", "i2", &targets)
        .unwrap();
    assert!(new);
    let due = q.due(0, 10, |_, _| false).unwrap();
    assert_eq!(due.len(), 2);
    assert_eq!(due[0].remote_name, "1~2.pcap");
    // a remote conflict moves one job to the next free variant
    let n = q.rename_job(due[0].file_id, "a", "1~2.pcap").unwrap();
    assert_eq!(n, "1~3.pcap");
    let st = q.status(Path::new("/cap/1.pcap")).unwrap();
    assert_eq!(
        (st[0].remote_name.as_str(), st[1].remote_name.as_str()),
        ("1~3.pcap", "1~2.pcap")
    );
}

#[test]
fn a_file_replaced_before_its_deletion_was_recorded_is_a_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let q = Queue::open(dir.path(), Duration::from_secs(1)).unwrap();
    let t = vec!["a".to_string()];
    let (id, _) = q.add(Path::new("/cap/f"), "f", "i1", &t).unwrap();
    q.set_done(id, "a").unwrap();
    // killed after deleting the file, before recording it: the next
    // file at that path must be uploaded, not deleted as done
    let (_, new) = q.add(Path::new("/cap/f"), "f", "i2", &t).unwrap();
    assert!(new);
    assert!(q.completed_undeleted().unwrap().is_empty());
    assert_eq!(q.due(0, 10, |_, _| false).unwrap()[0].remote_name, "f~2");
}

#[test]
fn failed_jobs_keep_reason_and_can_be_retried() {
    let dir = tempfile::tempdir().unwrap();
    let q = Queue::open(dir.path(), Duration::from_secs(1)).unwrap();
    let (id, _) = q
        .add(Path::new("/cap/2.pcap"), "2.pcap", "i", &["s".into()])
        .unwrap();
    q.set_failed_attempt(id, "s", 3, 0, true, "host key mismatch")
        .unwrap();
    let st = q.status(Path::new("/cap/2.pcap")).unwrap();
    assert_eq!(st[0].state, JobState::Failed);
    assert_eq!(st[0].last_error.as_deref(), Some("host key mismatch"));
    assert_eq!(q.retry_failed().unwrap(), 1);
    assert_eq!(q.due(0, 10, |_, _| false).unwrap().len(), 1);
}
