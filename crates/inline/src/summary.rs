//! Per-flow, per-interval summaries: delay min/avg/max/jitter and loss.

use std::collections::HashMap;

use crate::loss::{LossTracker, Seen};
use crate::record::{Flow, Measurement};

/// One flow's figures over one reporting interval.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSummary {
    /// The flow.
    pub flow: Flow,
    /// Packets received in the interval.
    pub received: u64,
    /// Packets found missing in the interval (net of late arrivals).
    pub lost: i64,
    /// `lost / (received + lost)` for the interval (0 when nothing was expected).
    pub loss_rate: f64,
    /// Delay samples in the interval.
    pub delay_count: u64,
    /// Minimum one-way delay, seconds.
    pub delay_min: f64,
    /// Mean one-way delay, seconds.
    pub delay_avg: f64,
    /// Maximum one-way delay, seconds.
    pub delay_max: f64,
    /// Mean absolute difference between consecutive delays, seconds (RFC 3393 style IPDV).
    pub jitter: f64,
}

#[derive(Debug)]
struct FlowState {
    loss: LossTracker,
    lost_at_start: u64,
    received: u64,
    delays: u64,
    sum: f64,
    min: f64,
    max: f64,
    last_delay: Option<f64>,
    jitter_sum: f64,
    jitter_n: u64,
    idle: u32,
}

/// Intervals without packets after which a flow is forgotten.
const IDLE_INTERVALS: u32 = 30;

impl FlowState {
    fn new(pdm: bool) -> FlowState {
        FlowState {
            loss: LossTracker::new(pdm),
            lost_at_start: 0,
            received: 0,
            delays: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            last_delay: None,
            jitter_sum: 0.0,
            jitter_n: 0,
            idle: 0,
        }
    }
}

/// Accumulates measurements and hands out summaries per interval.
#[derive(Debug, Default)]
pub struct Summaries {
    flows: HashMap<Flow, FlowState>,
}

impl Summaries {
    /// Account for one measurement; returns what its sequence number meant.
    pub fn observe(&mut self, m: &Measurement) -> Option<Seen> {
        let st = self
            .flows
            .entry(m.flow)
            .or_insert_with(|| FlowState::new(m.pdm));
        let seen = m.seq.map(|s| st.loss.observe(s));
        if seen != Some(Seen::Duplicate) {
            st.received += 1;
        }
        if let Some(ns) = m.delay_ns() {
            let d = ns as f64 / 1e9;
            st.delays += 1;
            st.sum += d;
            st.min = st.min.min(d);
            st.max = st.max.max(d);
            if let Some(prev) = st.last_delay {
                st.jitter_sum += (d - prev).abs();
                st.jitter_n += 1;
            }
            st.last_delay = Some(d);
        }
        seen
    }

    /// Total packets currently counted lost for `flow`.
    pub fn lost(&self, flow: &Flow) -> Option<u64> {
        self.flows.get(flow).map(|s| s.loss.lost)
    }

    /// Summaries of the flows that had packets since the last call; a flow
    /// without packets for 30 intervals is forgotten.
    pub fn take(&mut self) -> Vec<FlowSummary> {
        let mut out = Vec::new();
        self.flows.retain(|flow, st| {
            if st.received == 0 {
                st.idle += 1;
                return st.idle < IDLE_INTERVALS;
            }
            st.idle = 0;
            let lost = st.loss.lost as i64 - st.lost_at_start as i64;
            let expected = st.received as f64 + lost as f64;
            let avg = if st.delays > 0 {
                st.sum / st.delays as f64
            } else {
                0.0
            };
            out.push(FlowSummary {
                flow: *flow,
                received: st.received,
                lost,
                loss_rate: if expected > 0.0 {
                    lost as f64 / expected
                } else {
                    0.0
                },
                delay_count: st.delays,
                delay_min: if st.delays > 0 { st.min } else { 0.0 },
                delay_avg: avg,
                delay_max: if st.delays > 0 { st.max } else { 0.0 },
                jitter: if st.jitter_n > 0 {
                    st.jitter_sum / st.jitter_n as f64
                } else {
                    0.0
                },
            });
            st.lost_at_start = st.loss.lost;
            st.received = 0;
            st.delays = 0;
            st.sum = 0.0;
            st.min = f64::INFINITY;
            st.max = f64::NEG_INFINITY;
            st.jitter_sum = 0.0;
            st.jitter_n = 0;
            true
        });
        out.sort_by_key(|s| s.flow);
        out
    }
}
