//! Per-flow loss accounting from sequence numbers.
//!
//! A gap counts its missing numbers as lost at once; a number that shows up
//! later (records from different CPUs can be slightly out of order) is taken
//! back from the lost count. Sequence 0 behind the expected number means the
//! source restarted the flow (inactivity timeout). Repeats of a number
//! (GSO segments carry copies of one header) are counted as duplicates.

use std::collections::BTreeSet;

/// Missing numbers remembered per flow for late arrivals.
const MAX_MISSING: usize = 65_536;

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
            self.next = Some(self.wrap(u64::from(seq) + 1));
            self.received += 1;
            return Seen::Start;
        };
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
        if seq == 0 {
            self.missing.clear();
            self.next = Some(1);
            self.received += 1;
            return Seen::Start;
        }
        self.duplicates += 1;
        Seen::Duplicate
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

    #[test]
    fn pdm_wraps_at_16_bits() {
        let mut t = LossTracker::new(true);
        t.observe(65_534);
        assert_eq!(t.observe(65_535), Seen::InOrder);
        assert_eq!(t.observe(1), Seen::Gap(1));
        assert_eq!(t.lost, 1);
    }
}
