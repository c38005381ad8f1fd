//! A [`Sink`] wrapper that counts what the writer stores and commits.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use omsp::Schema;
use store::{CommitPolicy, Row, Sink, StoreError, TableId};

use super::DomainMetrics;

/// Counts rows stored and rejected, commits and rows per commit of the
/// sink it wraps; everything else is passed through.
#[derive(Debug)]
pub struct Metered<S> {
    /// The real store.
    inner: S,
    /// Where the counts go.
    metrics: Arc<DomainMetrics>,
    /// Rows written since the last commit.
    pending: u64,
}

impl<S: Sink> Metered<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, metrics: Arc<DomainMetrics>) -> Metered<S> {
        Metered {
            inner,
            metrics,
            pending: 0,
        }
    }

    /// After a commit attempt (`done`: it committed).
    fn committed(&mut self, done: bool) {
        // Accepted rows that the database refused at the commit: not stored.
        let refused = self.inner.refused();
        if refused > 0 {
            self.pending = self.pending.saturating_sub(refused);
            self.metrics.stored.fetch_sub(refused, Ordering::Relaxed);
            self.metrics
                .rejected_store
                .fetch_add(refused, Ordering::Relaxed);
        }
        if done && self.pending > 0 {
            self.metrics.commit(self.pending);
            self.pending = 0;
        }
    }

    /// Passes `r` on; after a storage failure (the store rolled back,
    /// [`StoreError::is_unavailable`]) the rows written since the last
    /// commit are no longer counted as stored: the writer writes them again.
    fn check<T>(&mut self, r: Result<T, StoreError>) -> Result<T, StoreError> {
        if matches!(&r, Err(e) if e.is_unavailable()) {
            self.metrics
                .stored
                .fetch_sub(self.pending, Ordering::Relaxed);
            self.pending = 0;
        }
        r
    }
}

impl<S: Sink> Sink for Metered<S> {
    fn description(&self) -> String {
        self.inner.description()
    }

    fn uri(&self) -> String {
        self.inner.uri()
    }

    fn is_new(&self) -> bool {
        self.inner.is_new()
    }

    fn ensure_start_time(&mut self, client_start: i64) -> Result<i64, StoreError> {
        let r = self.inner.ensure_start_time(client_start);
        self.check(r)
    }

    fn sender_id(&mut self, name: &str) -> Result<i64, StoreError> {
        let r = self.inner.sender_id(name);
        self.check(r)
    }

    fn register_schema(&mut self, schema: &Schema) -> Result<TableId, StoreError> {
        let r = self.inner.register_schema(schema);
        self.check(r)
    }

    fn table_name(&self, id: TableId) -> Option<&str> {
        self.inner.table_name(id)
    }

    fn insert(&mut self, row: &Row) -> Result<(), StoreError> {
        let r = self.inner.insert(row);
        match &r {
            Ok(()) => {
                self.pending += 1;
                self.metrics.stored.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) if e.is_unavailable() => {}
            Err(_) => {
                self.metrics.rejected_store.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.check(r)
    }

    fn insert_batch(
        &mut self,
        rows: &[Row],
        failed: &mut dyn FnMut(&Row, StoreError),
    ) -> Result<(), StoreError> {
        let mut bad = 0u64;
        let r = self.inner.insert_batch(rows, &mut |row, e| {
            bad += 1;
            failed(row, e);
        });
        if r.is_err() {
            return self.check(r);
        }
        let good = rows.len() as u64 - bad;
        self.pending += good;
        self.metrics.stored.fetch_add(good, Ordering::Relaxed);
        self.metrics
            .rejected_store
            .fetch_add(bad, Ordering::Relaxed);
        Ok(())
    }

    fn session_offset(&mut self, id: &str) -> Result<u64, StoreError> {
        self.inner.session_offset(id)
    }

    fn set_session_offset(&mut self, id: &str, sender: i64, offset: u64) -> Result<(), StoreError> {
        let r = self.inner.set_session_offset(id, sender, offset);
        self.check(r)
    }

    fn record_clock_estimate(&mut self, e: &store::ClockEstimate) -> Result<(), StoreError> {
        let r = self.inner.record_clock_estimate(e);
        self.check(r)
    }

    fn record_clock_report(&mut self, r: &store::ClockReport) -> Result<(), StoreError> {
        let r = self.inner.record_clock_report(r);
        self.check(r)
    }

    fn commit_if_due(&mut self, policy: &CommitPolicy, idle: bool) -> Result<bool, StoreError> {
        let res = self.inner.commit_if_due(policy, idle);
        self.committed(matches!(res, Ok(true)));
        self.check(res)
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        let res = self.inner.commit();
        self.committed(res.is_ok());
        self.check(res)
    }

    fn refused(&mut self) -> u64 {
        self.inner.refused()
    }

    fn committed_ends(&mut self) -> Option<Vec<(String, i64)>> {
        self.inner.committed_ends()
    }

    fn keep_committed(&mut self, on: bool) {
        self.inner.keep_committed(on);
    }

    fn keep_due(&self, policy: &store::CommitPolicy, idle: bool) -> bool {
        self.inner.keep_due(policy, idle)
    }

    fn committed_rows(&mut self) -> Vec<store::postgres::CommittedRows> {
        self.inner.committed_rows()
    }

    fn close(mut self) -> Result<(), StoreError> {
        let res = self.inner.commit();
        self.committed(res.is_ok());
        res?;
        self.inner.close()
    }
}
