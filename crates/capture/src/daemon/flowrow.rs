//! The row schema of the measurement stream `capture_flow`: one row per
//! flow record a session's IPFIX output metered, in the session's
//! experiment domain (documented in spec/capture-api.md).

use crate::flow::{EndReason, FlowRecord};
use omsp::{OmlType, ValueRef};
use std::net::{Ipv4Addr, Ipv6Addr};

/// Columns of `capture_flow`, in order, with their types.
pub const FLOW_COLUMNS: [(&str, OmlType); 18] = [
    ("session", OmlType::String),
    ("interface", OmlType::String),
    ("domain", OmlType::UInt32),
    ("start_unix_ns", OmlType::UInt64),
    ("end_unix_ns", OmlType::UInt64),
    ("ip_version", OmlType::UInt32),
    ("src", OmlType::String),
    ("dst", OmlType::String),
    ("src_port", OmlType::UInt32),
    ("dst_port", OmlType::UInt32),
    ("protocol", OmlType::UInt32),
    ("packets", OmlType::UInt64),
    ("octets", OmlType::UInt64),
    ("tcp_flags", OmlType::UInt32),
    ("rev_packets", OmlType::UInt64),
    ("rev_octets", OmlType::UInt64),
    ("rev_tcp_flags", OmlType::UInt32),
    ("end_reason", OmlType::String),
];

/// Text of an address of a flow key (IPv4 in the low 32 bits).
fn addr(v6: bool, a: u128) -> String {
    if v6 {
        Ipv6Addr::from(a).to_string()
    } else {
        Ipv4Addr::from(a as u32).to_string()
    }
}

/// `idle`, `active` or `end` (flushed when the session stopped).
pub fn end_reason(r: EndReason) -> &'static str {
    match r {
        EndReason::Idle => "idle",
        EndReason::Active => "active",
        EndReason::Forced => "end",
    }
}

/// The owned text fields of one row (borrowed by [`row`]).
pub struct RowText {
    /// Source address.
    src: String,
    /// Destination address.
    dst: String,
}

impl RowText {
    /// The addresses of `r` as text.
    pub fn of(r: &FlowRecord) -> RowText {
        RowText {
            src: addr(r.key.v6, r.key.src),
            dst: addr(r.key.v6, r.key.dst),
        }
    }
}

/// One row of `capture_flow`, in [`FLOW_COLUMNS`] order.
pub fn row<'a>(
    session: &'a str,
    interface: &'a str,
    domain: u32,
    r: &FlowRecord,
    t: &'a RowText,
) -> [ValueRef<'a>; 18] {
    let k = &r.key;
    [
        ValueRef::String(session),
        ValueRef::String(interface),
        ValueRef::UInt32(domain),
        ValueRef::UInt64(r.start_ns),
        ValueRef::UInt64(r.end_ns),
        ValueRef::UInt32(if k.v6 { 6 } else { 4 }),
        ValueRef::String(&t.src),
        ValueRef::String(&t.dst),
        ValueRef::UInt32(u32::from(k.sport)),
        ValueRef::UInt32(u32::from(k.dport)),
        ValueRef::UInt32(u32::from(k.proto)),
        ValueRef::UInt64(r.packets),
        ValueRef::UInt64(r.octets),
        ValueRef::UInt32(u32::from(r.tcp_flags)),
        ValueRef::UInt64(r.rev_packets),
        ValueRef::UInt64(r.rev_octets),
        ValueRef::UInt32(u32::from(r.rev_tcp_flags)),
        ValueRef::String(end_reason(r.end_reason)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::FlowKey;

    #[test]
    fn rows_follow_the_columns() {
        let r = FlowRecord {
            key: FlowKey {
                v6: false,
                src: 0x0a00_0001,
                dst: 0x0a00_0002,
                sport: 1000,
                dport: 53,
                proto: 17,
            },
            start_ns: 1,
            end_ns: 2,
            packets: 3,
            octets: 4,
            tcp_flags: 0,
            rev_packets: 5,
            rev_octets: 6,
            rev_tcp_flags: 0,
            end_reason: EndReason::Forced,
        };
        let t = RowText::of(&r);
        let v = row("s", "eth0", 7, &r, &t);
        assert_eq!(v.len(), FLOW_COLUMNS.len());
        assert!(matches!(v[6], ValueRef::String("10.0.0.1")));
        assert!(matches!(v[17], ValueRef::String("end")));
        let mut k6 = r;
        k6.key.v6 = true;
        k6.key.src = 1;
        assert_eq!(RowText::of(&k6).src, "::1");
    }
}
