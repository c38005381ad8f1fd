//! iputils ping's replies and summary as streams (`streamgauge wrap ping`).

use anyhow::Result;
use omsp::{OmlType, Value};
use regex::Regex;

use crate::session::{self, Output, Session};

/// One reply line.
#[derive(Debug, PartialEq)]
pub(crate) struct Reply {
    pub(crate) bytes: u32,
    pub(crate) addr: String,
    pub(crate) icmp_seq: u32,
    pub(crate) ttl: u32,
    pub(crate) rtt_ms: f64,
}

/// The patterns of ping's output (iputils, `LC_ALL=C`).
pub(crate) struct Parser {
    header: Regex,
    reply: Regex,
    counts: Regex,
    rtt: Regex,
}

impl Parser {
    pub(crate) fn new() -> Parser {
        let re = |s: &str| Regex::new(s).expect("a valid built-in pattern");
        Parser {
            header: re(r"^PING (\S+?) ?\(([^)]+)\)"),
            reply: re(
                r"^(\d+) bytes from (?:\S+ \(([^)]+)\)|(\S+)): icmp_seq=(\d+) ttl=(\d+) time=([0-9.]+) ms",
            ),
            counts: re(
                r"^(\d+) packets transmitted, (\d+) received(?:, \+(\d+) duplicates)?(?:, \+(\d+) errors)?, ([0-9.]+)% packet loss(?:, time (\d+)ms)?",
            ),
            rtt: re(
                r"^(?:rtt|round-trip) min/avg/max/(?:mdev|stddev) = ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+) ms",
            ),
        }
    }

    /// A reply line's fields.
    pub(crate) fn reply(&self, line: &str) -> Option<Reply> {
        let c = self.reply.captures(line)?;
        Some(Reply {
            bytes: c[1].parse().ok()?,
            addr: c.get(2).or(c.get(3))?.as_str().to_owned(),
            icmp_seq: c[4].parse().ok()?,
            ttl: c[5].parse().ok()?,
            rtt_ms: c[6].parse().ok()?,
        })
    }
}

/// Runs ping with `args` (its own arguments and any `--oml-*` options,
/// which are removed before ping sees them) and records its replies
/// (`rtt`) and summary (`summary`); returns ping's exit status.
pub fn run(args: &[String]) -> Result<i32> {
    let s = Session::open("ping", args)?;
    let rtt = s.mp(
        "rtt",
        &[
            ("dest", OmlType::String),
            ("addr", OmlType::String),
            ("bytes", OmlType::UInt32),
            ("icmp_seq", OmlType::UInt32),
            ("ttl", OmlType::UInt32),
            ("rtt_ms", OmlType::Double),
        ],
    )?;
    let summary = s.mp(
        "summary",
        &[
            ("dest", OmlType::String),
            ("transmitted", OmlType::UInt32),
            ("received", OmlType::UInt32),
            ("errors", OmlType::UInt32),
            ("loss_pct", OmlType::Double),
            ("time_ms", OmlType::Double),
            ("rtt_min_ms", OmlType::Double),
            ("rtt_avg_ms", OmlType::Double),
            ("rtt_max_ms", OmlType::Double),
            ("rtt_mdev_ms", OmlType::Double),
        ],
    )?;
    let mut command = vec!["ping".to_owned()];
    command.extend(s.tool_args.iter().cloned());
    s.start(&session::tool_version("ping", "-V"), &command)?;

    let p = Parser::new();
    let mut child = session::spawn("ping", &s.tool_args, Output::Stdout)?;
    let out = session::take_output(&mut child, Output::Stdout)?;
    let mut dest = String::new();
    // Counts wait for the rtt line (absent when nothing was received).
    let mut counts: Option<Vec<Value>> = None;
    session::tee_lines(out, Output::Stdout, |line| {
        if let Some(c) = p.header.captures(line) {
            dest = c[1].to_owned();
            s.metadata("dest_addr", &c[2]);
        } else if let Some(r) = p.reply(line) {
            session::inject(
                &rtt,
                &[
                    Value::String(dest.clone()),
                    Value::String(r.addr),
                    Value::UInt32(r.bytes),
                    Value::UInt32(r.icmp_seq),
                    Value::UInt32(r.ttl),
                    Value::Double(r.rtt_ms),
                ],
            );
        } else if let Some(c) = p.counts.captures(line) {
            let n = |i: usize| {
                c.get(i)
                    .and_then(|m| m.as_str().parse::<u32>().ok())
                    .unwrap_or(0)
            };
            let f = |i: usize| {
                c.get(i)
                    .and_then(|m| m.as_str().parse::<f64>().ok())
                    .unwrap_or(f64::NAN)
            };
            counts = Some(vec![
                Value::String(dest.clone()),
                Value::UInt32(n(1)),
                Value::UInt32(n(2)),
                Value::UInt32(n(4)),
                Value::Double(f(5)),
                Value::Double(f(6)),
            ]);
        } else if let Some(c) = p.rtt.captures(line) {
            if let Some(mut v) = counts.take() {
                for i in 1..=4 {
                    v.push(Value::Double(c[i].parse().unwrap_or(f64::NAN)));
                }
                session::inject(&summary, &v);
            }
        }
    })?;
    if let Some(mut v) = counts.take() {
        v.extend([f64::NAN; 4].map(Value::Double));
        session::inject(&summary, &v);
    }
    let status = child.wait()?;
    s.close();
    Ok(session::exit_code(status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies() {
        let p = Parser::new();
        let r = p
            .reply("64 bytes from 127.0.0.1: icmp_seq=1 ttl=64 time=0.045 ms")
            .unwrap();
        assert_eq!(r.addr, "127.0.0.1");
        assert_eq!((r.bytes, r.icmp_seq, r.ttl), (64, 1, 64));
        assert!((r.rtt_ms - 0.045).abs() < 1e-12);
        let r = p
            .reply("64 bytes from ::1: icmp_seq=2 ttl=64 time=0.1 ms")
            .unwrap();
        assert_eq!(r.addr, "::1");
        let r = p
            .reply("64 bytes from localhost (127.0.0.1): icmp_seq=3 ttl=64 time=0.05 ms")
            .unwrap();
        assert_eq!(r.addr, "127.0.0.1");
        let r = p
            .reply("64 bytes from localhost (::1): icmp_seq=3 ttl=64 time=0.05 ms")
            .unwrap();
        assert_eq!(r.addr, "::1");
        let c = p.header.captures("PING ::1(::1) 56 data bytes").unwrap();
        assert_eq!((&c[1], &c[2]), ("::1", "::1"));
        let c = p
            .header
            .captures("PING localhost (127.0.0.1) 56(84) bytes of data.")
            .unwrap();
        assert_eq!((&c[1], &c[2]), ("localhost", "127.0.0.1"));
        assert!(p
            .reply("From 10.0.0.1 icmp_seq=1 Destination Host Unreachable")
            .is_none());
    }

    #[test]
    fn summary() {
        let p = Parser::new();
        let c = p
            .counts
            .captures("3 packets transmitted, 3 received, 0% packet loss, time 2003ms")
            .unwrap();
        assert_eq!(&c[1], "3");
        assert_eq!(&c[6], "2003");
        let c = p
            .counts
            .captures("4 packets transmitted, 0 received, +4 errors, 100% packet loss, time 3050ms")
            .unwrap();
        assert_eq!(&c[4], "4");
        let c = p
            .rtt
            .captures("rtt min/avg/max/mdev = 0.031/0.040/0.050/0.008 ms")
            .unwrap();
        assert_eq!(&c[4], "0.008");
    }
}
