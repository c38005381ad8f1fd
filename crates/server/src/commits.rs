//! Commit notifications per domain, for readers that follow a stream live
//! (the query API's tail and tiles): each writer bumps its domain's
//! counter after every commit, and a reader waits on a change instead of
//! polling. On PostgreSQL the writer also publishes, while someone
//! listens, the highest `oml_tuple_id` each commit left in each table it
//! wrote to, so readers can stop their scans there instead of walking
//! through the rows of the writer's next, still open, transaction, and
//! the rows themselves where it can tell their ids, so a live tail need
//! not read them back (see [`store::postgres::committed`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use store::postgres::CommittedRows;
use tokio::sync::watch;

/// How long a published end stays usable, counted for each table from the
/// commit that last published its end. Another server writing the same
/// PostgreSQL database commits rows beyond it without telling us: past
/// this, readers look beyond it again (as with no end at all).
const FRESH: Duration = Duration::from_secs(1);

/// Bytes of committed rows kept per domain: a tail woken by a commit
/// takes its rows at once, so a few commits' worth is plenty; one that
/// fell further behind reads from the table.
const KEPT_BYTES: usize = 32 << 20;

/// Commit counters by domain.
#[derive(Debug, Default)]
pub struct Commits {
    /// Domain → its counter and ends. Entries stay for the server's life
    /// (one per domain ever opened or watched).
    domains: Mutex<HashMap<String, Domain>>,
}

#[derive(Debug)]
struct Domain {
    /// Number of commits seen since the server started.
    count: watch::Sender<u64>,
    /// Table → highest committed `oml_tuple_id`, and when it was
    /// published: each table's own time, since a commit that wrote to
    /// other tables says nothing of rows another server added to this one.
    ends: HashMap<String, (i64, Instant)>,
    /// Recent commits' rows, oldest first, each batch of one table.
    rows: VecDeque<Arc<CommittedRows>>,
}

impl Domain {
    fn new(count: u64) -> Domain {
        Domain {
            count: watch::Sender::new(count),
            ends: HashMap::new(),
            rows: VecDeque::new(),
        }
    }
}

impl Commits {
    /// Called by a writer after a commit of `domain`, with the tables'
    /// committed ends if it knows them (`None`: it does not; any published
    /// before are forgotten, since rows may now lie beyond them). The ends
    /// are in place before the counter changes.
    ///
    /// `rows` are the commit's rows whose ids the writer could tell; they
    /// are kept (within [`KEPT_BYTES`]) for [`Commits::rows`].
    pub fn bump(&self, domain: &str, ends: Option<Vec<(String, i64)>>, rows: Vec<CommittedRows>) {
        let mut map = self.lock();
        let d = map
            .entry(domain.to_owned())
            .or_insert_with(|| Domain::new(0));
        match ends {
            Some(ends) => {
                let now = Instant::now();
                d.ends
                    .extend(ends.into_iter().map(|(t, end)| (t, (end, now))));
            }
            None => {
                d.ends.clear();
                d.rows.clear();
            }
        }
        d.rows.extend(rows.into_iter().map(Arc::new));
        let mut bytes: usize = d.rows.iter().map(|r| r.bytes()).sum();
        while bytes > KEPT_BYTES {
            let Some(old) = d.rows.pop_front() else { break };
            bytes -= old.bytes();
        }
        d.count.send_modify(|n| *n += 1);
    }

    /// Called by a writer after it closed `domain`'s database: its ends
    /// are forgotten (nobody publishes them now; another server may go on
    /// writing) and readers are woken. The kept rows stay while someone
    /// follows the domain (readers at idle priority may not have taken the
    /// last commit's yet; their ids stay true) and go with the domain's
    /// next commit nobody follows; with nobody following they go now.
    pub fn closed(&self, domain: &str) {
        let mut map = self.lock();
        let d = map
            .entry(domain.to_owned())
            .or_insert_with(|| Domain::new(0));
        d.ends.clear();
        if d.count.receiver_count() == 0 {
            d.rows.clear();
        }
        d.count.send_modify(|n| *n += 1);
    }

    /// The kept batch of `table` that holds the row right after `after`
    /// (the latest, should two), or else the earliest kept batch after it:
    /// the rows in between are in the table, committed before it.
    pub fn rows(&self, domain: &str, table: &str, after: i64) -> Option<Arc<CommittedRows>> {
        let map = self.lock();
        let d = map.get(domain)?;
        let later = d
            .rows
            .iter()
            .filter(|r| r.table == table && after < r.last());
        later
            .clone()
            .rev()
            .find(|r| r.first <= after + 1)
            .or_else(|| later.min_by_key(|r| r.first))
            .cloned()
    }

    /// True if someone waits on `domain`'s commits (then the writer
    /// publishes its ends).
    pub fn watched(&self, domain: &str) -> bool {
        self.lock()
            .get(domain)
            .is_some_and(|d| d.count.receiver_count() > 0)
    }

    /// A receiver that changes after each commit of `domain`.
    pub fn subscribe(&self, domain: &str) -> watch::Receiver<u64> {
        self.lock()
            .entry(domain.to_owned())
            .or_insert_with(|| Domain::new(0))
            .count
            .subscribe()
    }

    /// The highest committed `oml_tuple_id` of `table`, if published within
    /// [`FRESH`].
    pub fn end(&self, domain: &str, table: &str) -> Option<i64> {
        let map = self.lock();
        let &(end, at) = map.get(domain)?.ends.get(table)?;
        (at.elapsed() <= FRESH).then_some(end)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Domain>> {
        self.domains.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl query::CommitFeed for Commits {
    fn subscribe(&self, domain: &str) -> watch::Receiver<u64> {
        Commits::subscribe(self, domain)
    }

    fn committed_end(&self, domain: &str, table: &str) -> Option<i64> {
        self.end(domain, table)
    }

    fn committed_rows(&self, domain: &str, table: &str, after: i64) -> Option<Arc<CommittedRows>> {
        self.rows(domain, table, after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn subscribers_see_later_commits() {
        let c = Commits::default();
        let mut rx = c.subscribe("d");
        c.bump("d", None, Vec::new());
        rx.changed().await.unwrap();
        assert_eq!(*rx.borrow_and_update(), 1);
        c.bump("other", None, Vec::new());
        c.bump("d", None, Vec::new());
        rx.changed().await.unwrap();
        assert_eq!(*rx.borrow(), 2);
    }

    #[test]
    fn ends_are_published_forgotten_and_go_stale() {
        let c = Commits::default();
        assert!(!c.watched("d"));
        let rx = c.subscribe("d");
        assert!(c.watched("d"));
        c.bump(
            "d",
            Some(vec![("a".into(), 10), ("b".into(), 3)]),
            Vec::new(),
        );
        assert_eq!(c.end("d", "a"), Some(10));
        // A commit that touched only `a` keeps `b`'s end.
        c.bump("d", Some(vec![("a".into(), 20)]), Vec::new());
        assert_eq!((c.end("d", "a"), c.end("d", "b")), (Some(20), Some(3)));
        assert_eq!(c.end("other", "a"), None);
        // A commit whose ends are unknown forgets them all.
        c.bump("d", None, Vec::new());
        assert_eq!(c.end("d", "a"), None);
        c.bump("d", Some(vec![("a".into(), 30)]), Vec::new());
        c.lock().get_mut("d").unwrap().ends.get_mut("a").unwrap().1 -= FRESH * 2;
        assert_eq!(c.end("d", "a"), None, "an old end is not used");
        // A later commit to another table does not make `a`'s end new:
        // another server may have added rows to `a` since.
        c.bump("d", Some(vec![("b".into(), 4)]), Vec::new());
        assert_eq!((c.end("d", "a"), c.end("d", "b")), (None, Some(4)));
        drop(rx);
        assert!(!c.watched("d"));
    }

    #[test]
    fn rows_are_the_batch_holding_the_next_id_or_the_first_after_it() {
        let batch = |table: &str, first: i64, n: usize| {
            CommittedRows::new(table.into(), first, (Vec::new(), vec![0; n]), Arc::from([]))
        };
        let c = Commits::default();
        assert!(c.rows("d", "a", 0).is_none());
        // Ids 11..=20 and 31..=40 of `a` handed over, 21..=30 not.
        c.bump(
            "d",
            Some(vec![("a".into(), 20)]),
            vec![batch("a", 11, 10), batch("b", 1, 5)],
        );
        c.bump("d", Some(vec![("a".into(), 40)]), vec![batch("a", 31, 10)]);
        let first = |after| c.rows("d", "a", after).map(|r| r.first);
        assert_eq!(first(10), Some(11));
        assert_eq!(first(15), Some(11));
        assert_eq!(first(20), Some(31), "the next batch, after a gap");
        assert_eq!(first(0), Some(11), "the earliest one after a gap");
        assert_eq!(first(39), Some(31));
        assert_eq!(first(40), None, "nothing after the last");
        assert_eq!(c.rows("d", "b", 0).map(|r| r.last()), Some(5));
        // A close forgets the ends, and keeps the rows while followed.
        let rx = c.subscribe("d");
        c.closed("d");
        assert_eq!((c.end("d", "a"), first(10)), (None, Some(11)));
        drop(rx);
        c.closed("d");
        assert_eq!(first(10), None, "nobody follows: the rows go");
        c.bump("d", Some(vec![("a".into(), 40)]), vec![batch("a", 31, 10)]);
        // Unknown ends forget the rows.
        c.bump("d", None, Vec::new());
        assert_eq!(first(39), None);
    }
}
