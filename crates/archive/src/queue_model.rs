//! The queue checked against a simple in-memory model with proptest:
//! random enqueues, confirmations, failures, deletions, retries and reopens
//! (a restart) must leave exactly the due jobs, counts and deletable files
//! the model predicts — nothing forgotten, nothing done twice.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use proptest::prelude::*;

use crate::queue::{JobCounts, JobState, Queue};

const TARGETS: [&str; 2] = ["a", "b"];

#[derive(Debug, Clone)]
enum Op {
    /// File, targets, whether its content changed since the last add.
    Add(usize, Vec<usize>, bool),
    Done(usize, usize),
    Fail(usize, usize, bool),
    DeleteIfComplete(usize),
    RetryFailed,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (
            0..4usize,
            proptest::collection::vec(0..2usize, 1..3),
            any::<bool>()
        )
            .prop_map(|(f, t, c)| Op::Add(f, t, c)),
        (0..4usize, 0..2usize).prop_map(|(f, t)| Op::Done(f, t)),
        (0..4usize, 0..2usize, any::<bool>()).prop_map(|(f, t, g)| Op::Fail(f, t, g)),
        (0..4usize).prop_map(Op::DeleteIfComplete),
        Just(Op::RetryFailed),
        Just(Op::Reopen),
    ]
}

/// Model of one file: its jobs and whether the local copy was removed.
#[derive(Debug, Default, Clone)]
struct FileModel {
    jobs: BTreeMap<String, JobState>,
    deleted: bool,
    /// Identity recorded by the queue for the current file.
    identity: u32,
}

fn path(i: usize) -> PathBuf {
    PathBuf::from(format!("/cap/{i}.pcap"))
}

fn complete(f: &FileModel) -> bool {
    f.jobs.values().all(|s| *s == JobState::Done)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn queue_matches_model(ops in proptest::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let mut q = Queue::open(dir.path(), Duration::from_secs(1)).unwrap();
        let mut model: BTreeMap<usize, FileModel> = BTreeMap::new();
        let mut ids: BTreeMap<usize, i64> = BTreeMap::new();
        // Content generation of each local path (its identity).
        let mut generation: BTreeMap<usize, u32> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Add(f, ts, changed) => {
                    let names: Vec<String> = ts.iter().map(|t| TARGETS[*t].to_string()).collect();
                    let g = generation.entry(f).or_default();
                    *g += u32::from(changed);
                    let g = *g;
                    let (id, _) = q.add(&path(f), "r", &g.to_string(), &names).unwrap();
                    ids.insert(f, id);
                    let fresh = !model.contains_key(&f);
                    let m = model.entry(f).or_default();
                    if fresh {
                        m.identity = g;
                    }
                    if m.deleted && m.identity == g {
                        // the same file again: archived already
                        continue;
                    }
                    if m.deleted || m.identity != g {
                        // a new file under the same local name
                        *m = FileModel { identity: g, ..FileModel::default() };
                    }
                    for n in names {
                        m.jobs.entry(n).or_insert(JobState::Pending);
                    }
                }
                Op::Done(f, t) => {
                    if let (Some(id), Some(m)) = (ids.get(&f), model.get_mut(&f)) {
                        if let Some(s) = m.jobs.get_mut(TARGETS[t]) {
                            if *s == JobState::Pending {
                                q.set_done(*id, TARGETS[t]).unwrap();
                                *s = JobState::Done;
                            }
                        }
                    }
                }
                Op::Fail(f, t, give_up) => {
                    if let (Some(id), Some(m)) = (ids.get(&f), model.get_mut(&f)) {
                        if let Some(s) = m.jobs.get_mut(TARGETS[t]) {
                            if *s == JobState::Pending {
                                q.set_failed_attempt(*id, TARGETS[t], 1, 0, give_up, "x").unwrap();
                                if give_up {
                                    *s = JobState::Failed;
                                }
                            }
                        }
                    }
                }
                Op::DeleteIfComplete(f) => {
                    if let (Some(id), Some(m)) = (ids.get(&f), model.get_mut(&f)) {
                        prop_assert_eq!(q.file_complete(*id).unwrap(), complete(m));
                        if complete(m) && !m.deleted {
                            q.set_local_deleted(*id).unwrap();
                            m.deleted = true;
                        }
                    }
                }
                Op::RetryFailed => {
                    q.retry_failed().unwrap();
                    for m in model.values_mut() {
                        for s in m.jobs.values_mut() {
                            if *s == JobState::Failed {
                                *s = JobState::Pending;
                            }
                        }
                    }
                }
                Op::Reopen => {
                    drop(q);
                    q = Queue::open(dir.path(), Duration::from_secs(1)).unwrap();
                }
            }
            // due jobs == pending jobs of the model
            let mut due: Vec<(PathBuf, String)> = q
                .due(i64::MAX, usize::MAX, |_, _| false)
                .unwrap()
                .into_iter()
                .map(|j| (j.local_path, j.target))
                .collect();
            due.sort();
            let mut want: Vec<(PathBuf, String)> = model
                .iter()
                .flat_map(|(f, m)| {
                    m.jobs.iter().filter(|(_, s)| **s == JobState::Pending).map(move |(t, _)| (path(*f), t.clone()))
                })
                .collect();
            want.sort();
            prop_assert_eq!(due, want);
            let mut counts = JobCounts::default();
            for s in model.values().flat_map(|m| m.jobs.values()) {
                match s {
                    JobState::Pending => counts.pending += 1,
                    JobState::Done => counts.done += 1,
                    JobState::Failed => counts.failed += 1,
                }
            }
            prop_assert_eq!(q.counts().unwrap(), counts);
            let mut deletable: Vec<PathBuf> =
                q.completed_undeleted().unwrap().into_iter().map(|(_, p)| p).collect();
            deletable.sort();
            let want_del: Vec<PathBuf> = model
                .iter()
                .filter(|(_, m)| complete(m) && !m.deleted)
                .map(|(f, _)| path(*f))
                .collect();
            prop_assert_eq!(deletable, want_del);
            let mut remote = std::collections::BTreeSet::new();
            for (f, m) in &model {
                let st = q.status(Path::new(&path(*f))).unwrap();
                prop_assert_eq!(st.len(), m.jobs.len());
                // every file holds its own remote name
                if let Some(s) = st.first() {
                    prop_assert!(remote.insert(s.remote_name.clone()), "{:?}", s);
                }
            }
        }
    }
}
