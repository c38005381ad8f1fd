//! One packet source, many sessions: each packet is parsed once, each
//! distinct filter is evaluated once, and the packet is handed to every
//! session whose filter matched.

use crate::counters::Counters;
use crate::filter::Filter;
use crate::linktype::LinkType;
use crate::packet::Parsed;
use crate::session::{Session, SessionError};
use std::collections::HashMap;

/// Sessions sharing one filter expression.
struct Group {
    /// The compiled filter (shared).
    filter: Filter,
    /// Indices into `Demux::sessions`.
    members: Vec<usize>,
}

/// Demultiplexes packets to sessions.
#[derive(Default)]
pub struct Demux {
    /// The sessions, in insertion order.
    sessions: Vec<Session>,
    /// Filter groups.
    groups: Vec<Group>,
    /// (link type, expression) -> group index.
    by_expr: HashMap<(LinkType, String), usize>,
    /// Packets read.
    packets: u64,
}

impl Demux {
    /// An empty demux.
    pub fn new() -> Demux {
        Demux::default()
    }

    /// Adds a session; sessions with the same filter expression share its evaluation.
    pub fn add(&mut self, s: Session) {
        let expr = (s.filter().link(), s.filter().expression().to_string());
        let idx = self.sessions.len();
        match self.by_expr.get(&expr) {
            Some(&g) => self.groups[g].members.push(idx),
            None => {
                self.by_expr.insert(expr, self.groups.len());
                self.groups.push(Group {
                    filter: s.filter().clone(),
                    members: vec![idx],
                });
            }
        }
        self.sessions.push(s);
    }

    /// Removes a session by name, returning it (stop it yourself).
    pub fn remove(&mut self, name: &str) -> Option<Session> {
        let idx = self.sessions.iter().position(|s| s.config().name == name)?;
        let s = self.sessions.remove(idx);
        let rest = std::mem::take(&mut self.sessions);
        self.groups.clear();
        self.by_expr.clear();
        for s in rest {
            self.add(s);
        }
        Some(s)
    }

    /// Number of distinct filters evaluated per packet.
    pub fn filter_groups(&self) -> usize {
        self.groups.len()
    }

    /// The sessions.
    pub fn sessions(&self) -> &[Session] {
        &self.sessions
    }

    /// Mutable access to the sessions (counters polling, ticks).
    pub fn sessions_mut(&mut self) -> &mut [Session] {
        &mut self.sessions
    }

    /// Packets read so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Hands one frame to every matching session.
    pub fn process(&mut self, ts_ns: u64, frame: &[u8], wire_len: u32) {
        self.packets += 1;
        // One source has one link type: the frame is parsed once.
        let mut parsed: Option<(LinkType, Parsed)> = None;
        for g in &self.groups {
            let hit = g.filter.matches(frame, wire_len);
            let link = g.filter.link();
            for &i in &g.members {
                let s = &mut self.sessions[i];
                s.count_seen();
                if hit {
                    let p = match &mut parsed {
                        Some((l, p)) if *l == link => p,
                        slot => &mut slot.insert((link, Parsed::parse(link, frame))).1,
                    };
                    s.process_matched(ts_ns, frame, wire_len, p);
                }
            }
        }
    }

    /// Counter snapshots of the sessions whose interval has elapsed at `now_ns`.
    pub fn poll_counters(&mut self, now_ns: u64) -> Vec<(String, Counters)> {
        self.sessions
            .iter_mut()
            .filter_map(|s| {
                s.poll_counters(now_ns)
                    .map(|c| (s.config().name.clone(), c))
            })
            .collect()
    }

    /// Sets the kernel drop counter of every session (shared source).
    pub fn set_kernel_drops(&mut self, n: u64) {
        for s in &mut self.sessions {
            s.set_kernel_drops(n);
        }
    }

    /// Periodic work for every session.
    pub fn tick(&mut self, now_ns: u64) -> Vec<(String, SessionError)> {
        let mut errs = Vec::new();
        for s in &mut self.sessions {
            if let Err(e) = s.tick(now_ns) {
                errs.push((s.config().name.clone(), e));
            }
        }
        errs
    }

    /// Stops every session, returning (name, final counters or error).
    pub fn stop_all(&mut self, now_ns: u64) -> Vec<(String, Result<Counters, SessionError>)> {
        self.sessions
            .iter_mut()
            .map(|s| (s.config().name.clone(), s.stop(now_ns)))
            .collect()
    }
}
