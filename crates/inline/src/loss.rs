//! Per-flow loss accounting from sequence numbers.
//!
//! A gap counts its missing numbers as lost at once; a number that shows up
//! later (records from different CPUs can be slightly out of order) is taken
//! back from the lost count. The first records of a flow can be out of
//! order too (a batch from another CPU holding the flow's first packets
//! comes after one holding later ones): a number behind the first one seen,
//! while the flow is young, is such a late early packet, and the numbers
//! between it and the first one seen are missing until they come. Otherwise
//! sequence 0 behind the expected number means the source restarted the
//! flow (inactivity timeout). Repeats of a number (GSO segments carry copies
//! of one header) are counted as duplicates.

use std::collections::BTreeSet;

/// Missing numbers remembered per flow for late arrivals.
const MAX_MISSING: usize = 65_536;

/// How far behind the first number seen a late early packet may be, and
/// for how many packets after the flow's first one: far more than the
/// per-CPU record batches (16 records per CPU) reorder.
const REORDER_SPAN: u64 = 4096;

/// What one sequence number meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// First packet of the flow, or after a restart.
    Start,
    /// The expected number.
    InOrder,
    /// Ahead of the expected number: that many packets are missing.
    Gap(u32),
    /// A number that had been counted as lost.
    Late,
    /// A number already seen.
    Duplicate,
}

/// Loss state of one flow.
#[derive(Debug, Clone)]
pub struct LossTracker {
    modulus: u64,
    next: Option<u32>,
    /// The lowest number seen since the flow (re)started.
    first: u32,
    /// Packets received since the flow (re)started.
    since_start: u64,
    missing: BTreeSet<u32>,
    /// Packets received (duplicates excluded).
    pub received: u64,
    /// Packets currently counted as lost.
    pub lost: u64,
    /// Packets that arrived after a later one.
    pub late: u64,
    /// Repeated numbers.
    pub duplicates: u64,
}

impl LossTracker {
    /// A tracker for 32-bit sequence numbers (`pdm = false`) or PDM's 16-bit ones.
    pub fn new(pdm: bool) -> LossTracker {
        LossTracker {
            modulus: if pdm { 1 << 16 } else { 1 << 32 },
            next: None,
            first: 0,
            since_start: 0,
            missing: BTreeSet::new(),
            received: 0,
            lost: 0,
            late: 0,
            duplicates: 0,
        }
    }

    fn wrap(&self, v: u64) -> u32 {
        (v % self.modulus) as u32
    }

    /// Account for one received sequence number.
    pub fn observe(&mut self, seq: u32) -> Seen {
        let Some(next) = self.next else {
            self.restart(seq);
            return Seen::Start;
        };
        self.since_start += 1;
        let ahead = (u64::from(seq) + self.modulus - u64::from(next)) % self.modulus;
        if ahead == 0 {
            self.next = Some(self.wrap(u64::from(seq) + 1));
            self.received += 1;
            return Seen::InOrder;
        }
        if ahead < self.modulus / 2 {
            for i in 0..ahead.min(MAX_MISSING as u64) {
                self.missing.insert(self.wrap(u64::from(next) + i));
            }
            while self.missing.len() > MAX_MISSING {
                self.missing.pop_first();
            }
            self.lost += ahead;
            self.received += 1;
            self.next = Some(self.wrap(u64::from(seq) + 1));
            return Seen::Gap(ahead as u32);
        }
        if self.missing.remove(&seq) {
            self.lost -= 1;
            self.late += 1;
            self.received += 1;
            return Seen::Late;
        }
        let before = (u64::from(self.first) + self.modulus - u64::from(seq)) % self.modulus;
        if before > 0 && before <= REORDER_SPAN && self.since_start <= REORDER_SPAN {
            // Sent before the first one seen, delivered after it.
            for i in 1..before {
                self.missing.insert(self.wrap(u64::from(seq) + i));
            }
            self.lost += before - 1;
            self.first = seq;
            self.late += 1;
            self.received += 1;
            return Seen::Late;
        }
        if seq == 0 {
            self.missing.clear();
            self.restart(0);
            return Seen::Start;
        }
        self.duplicates += 1;
        Seen::Duplicate
    }

    /// The flow starts (again) at `seq`.
    fn restart(&mut self, seq: u32) {
        self.next = Some(self.wrap(u64::from(seq) + 1));
        self.first = seq;
        self.since_start = 1;
        self.received += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_late_duplicates_restart() {
        let mut t = LossTracker::new(false);
        assert_eq!(t.observe(0), Seen::Start);
        assert_eq!(t.observe(1), Seen::InOrder);
        assert_eq!(t.observe(4), Seen::Gap(2));
        assert_eq!(t.lost, 2);
        assert_eq!(t.observe(2), Seen::Late);
        assert_eq!(t.lost, 1);
        assert_eq!(t.observe(4), Seen::Duplicate);
        assert_eq!(t.observe(0), Seen::Start);
        assert_eq!(t.received, 5);
    }

    /// The flow's first packets in a batch delivered after a later batch:
    /// no loss, no restart; a packet really lost among them still counts.
    #[test]
    fn a_flow_whose_first_records_come_late_loses_nothing() {
        let mut t = LossTracker::new(false);
        assert_eq!(t.observe(16), Seen::Start);
        for s in 17..32 {
            assert_eq!(t.observe(s), Seen::InOrder);
        }
        assert_eq!(t.observe(0), Seen::Late);
        assert_eq!(t.lost, 15, "1 to 15 not seen yet");
        for s in (1..16).filter(|s| *s != 7) {
            assert_eq!(t.observe(s), Seen::Late, "{s}");
        }
        assert_eq!(t.observe(32), Seen::InOrder);
        assert_eq!((t.lost, t.received, t.duplicates), (1, 32, 0));
        // Once the flow has started at 0, a 0 again is a restart.
        assert_eq!(t.observe(0), Seen::Start);
        assert_eq!(t.observe(1), Seen::InOrder);
    }

    #[test]
    fn pdm_wraps_at_16_bits() {
        let mut t = LossTracker::new(true);
        t.observe(65_534);
        assert_eq!(t.observe(65_535), Seen::InOrder);
        assert_eq!(t.observe(1), Seen::Gap(1));
        assert_eq!(t.lost, 1);
    }
}
