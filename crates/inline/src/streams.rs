//! Measurement streams: records, per-flow summaries and program counters
//! injected through the client library (`crates/client`).
//!
//! | MP | fields |
//! |---|---|
//! | `inline_delay` | flow, seq, src_ts, dst_ts, delay (seconds; timestamps as Unix seconds) |
//! | `inline_loss` | flow, seq |
//! | `inline_flow` | flow, received, lost, loss_rate, delay_count, delay_min, delay_avg, delay_max, jitter |
//! | `inline_counters` | iface, role, then one `uint64` per counter of [`inline_common::Counter`] |
//!
//! Client-side filters and windows configured for these MPs (client
//! configuration file) apply as to any other MP.

use client::{Client, ClientError, Mp};
use inline_common::Counter;
use omsp::{OmlType, ValueRef};

use crate::maps::Counters;
use crate::program::Role;
use crate::record::Measurement;
use crate::summary::FlowSummary;

/// The agent's MPs on one client.
#[derive(Debug)]
pub struct Streams {
    delay: Mp,
    loss: Mp,
    flow: Mp,
    counters: Mp,
}

impl Streams {
    /// Declare the MPs on `client` (before `client.start()`).
    pub fn declare(client: &Client) -> Result<Streams, ClientError> {
        use OmlType::{Double, Int64, String as Str, UInt32, UInt64};
        let mut counter_fields: Vec<(&str, OmlType)> = vec![("iface", Str), ("role", Str)];
        counter_fields.extend(Counter::ALL.iter().map(|c| (c.name(), UInt64)));
        let streams = Streams {
            delay: client.add_mp(
                "inline_delay",
                &[
                    ("flow", Str),
                    ("seq", UInt32),
                    ("src_ts", Double),
                    ("dst_ts", Double),
                    ("delay", Double),
                ],
            )?,
            loss: client.add_mp("inline_loss", &[("flow", Str), ("seq", UInt32)])?,
            flow: client.add_mp(
                "inline_flow",
                &[
                    ("flow", Str),
                    ("received", UInt64),
                    ("lost", Int64),
                    ("loss_rate", Double),
                    ("delay_count", UInt64),
                    ("delay_min", Double),
                    ("delay_avg", Double),
                    ("delay_max", Double),
                    ("jitter", Double),
                ],
            )?,
            counters: client.add_mp("inline_counters", &counter_fields)?,
        };
        // Times are seconds: declared, so the query API reports the unit
        // and plots label a 42 µs delay "42 µs".
        for (mp, fields) in [
            (&streams.delay, &["src_ts", "dst_ts", "delay"][..]),
            (
                &streams.flow,
                &["delay_min", "delay_avg", "delay_max", "jitter"][..],
            ),
        ] {
            for field in fields {
                mp.inject_metadata("unit", "s", Some(field))?;
            }
        }
        // The program counters only grow (until the program is reloaded):
        // declared, so the query API can give their rates (`derive=rate`).
        for c in Counter::ALL {
            streams
                .counters
                .inject_metadata("kind", "counter", Some(c.name()))?;
        }
        Ok(streams)
    }

    /// Inject one measured packet (into `inline_delay` and/or `inline_loss`).
    pub fn record(&self, m: &Measurement) -> Result<(), ClientError> {
        let flow = m.flow.to_string();
        if let (Some(src), Some(delay)) = (m.src_ts, m.delay_ns()) {
            self.delay.inject(&[
                ValueRef::String(&flow),
                ValueRef::UInt32(m.seq.unwrap_or(0)),
                ValueRef::Double(src.unix_secs()),
                ValueRef::Double(m.dst_ts.unix_secs()),
                ValueRef::Double(delay as f64 / 1e9),
            ])?;
        }
        if let Some(seq) = m.seq {
            self.loss
                .inject(&[ValueRef::String(&flow), ValueRef::UInt32(seq)])?;
        }
        Ok(())
    }

    /// Inject one interval's per-flow summaries.
    pub fn summaries(&self, list: &[FlowSummary]) -> Result<(), ClientError> {
        for s in list {
            let flow = s.flow.to_string();
            self.flow.inject(&[
                ValueRef::String(&flow),
                ValueRef::UInt64(s.received),
                ValueRef::Int64(s.lost),
                ValueRef::Double(s.loss_rate),
                ValueRef::UInt64(s.delay_count),
                ValueRef::Double(s.delay_min),
                ValueRef::Double(s.delay_avg),
                ValueRef::Double(s.delay_max),
                ValueRef::Double(s.jitter),
            ])?;
        }
        Ok(())
    }

    /// Inject a snapshot of a program's counters.
    pub fn counters(&self, iface: &str, role: Role, c: &Counters) -> Result<(), ClientError> {
        let role = match role {
            Role::Source => "source",
            Role::Sink => "sink",
        };
        let mut row = vec![ValueRef::String(iface), ValueRef::String(role)];
        row.extend(Counter::ALL.iter().map(|k| ValueRef::UInt64(c.get(*k))));
        self.counters.inject(&row)
    }
}
