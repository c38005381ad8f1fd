//! Filters: libpcap expressions compiled to cBPF, plus the GIMS shortcuts.
//!
//! The expression is compiled once by libpcap (`pcap_compile` on a dead
//! handle of the source's link type, snap length 65535, optimiser on) and
//! the resulting program runs in our own interpreter ([`crate::bpf`]) for
//! every packet. Compiling for the source's link type is what makes `udp`
//! match UDP datagrams on a tun device (raw IP) or in an 802.11 capture:
//! libpcap knows where each link type keeps the network protocol, and an
//! expression a link type cannot express (`ether host` on raw IP) is
//! refused with libpcap's message.
//!
//! The GIMS capture form offered typed shortcuts instead of an expression;
//! [`Shortcuts::to_expression`] translates them as follows, joining the
//! parts with `and` (the VLAN term comes first because libpcap's `vlan`
//! shifts the offsets of every later term):
//!
//! | shortcut         | expression                         |
//! |------------------|------------------------------------|
//! | `vlan: 42`       | `vlan 42`                          |
//! | `host: A`        | `host A` (`net A/L` for a prefix)  |
//! | `src: A`/`dst: A`| `src host A` / `dst net A/L`       |
//! | `port: P`        | `port P`                           |
//! | `src_port: P`    | `src port P` (same for `dst_port`) |
//! | `proto: tcp`     | `tcp`, `udp`, `(icmp or icmp6)`, or `(ip proto N or ip6 proto N)` |
//!
//! A free `expression` given together with shortcuts is appended in
//! parentheses.

use crate::bpf::{Insn, Program, ValidateError};
use crate::linktype::LinkType;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// Why a filter could not be built.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    /// libpcap refused the expression; `message` is libpcap's own text.
    #[error("invalid filter expression {expression:?} for link type {link}: {message}")]
    Syntax {
        /// The expression given to libpcap.
        expression: String,
        /// The link type it was compiled for.
        link: LinkType,
        /// libpcap's error message.
        message: String,
    },
    /// libpcap produced a program our interpreter refuses.
    #[error("compiled filter rejected: {0}")]
    Program(#[from] ValidateError),
    /// A shortcut value is malformed.
    #[error("invalid filter shortcut {field}: {reason}")]
    Shortcut {
        /// Which shortcut.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// Transport protocol shortcut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProtoShortcut {
    /// TCP over IPv4 or IPv6.
    Tcp,
    /// UDP over IPv4 or IPv6.
    Udp,
    /// ICMP or ICMPv6.
    Icmp,
    /// Any IP protocol number.
    #[serde(untagged)]
    Number(u8),
}

/// The GIMS typed filter options; all present options must match.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shortcuts {
    /// 802.1Q VLAN ID (0..=4095).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<u16>,
    /// Address or prefix (`A` or `A/L`) seen as source or destination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Source address or prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<String>,
    /// Destination address or prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst: Option<String>,
    /// Port seen as source or destination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Source port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_port: Option<u16>,
    /// Destination port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_port: Option<u16>,
    /// Transport protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto: Option<ProtoShortcut>,
}

fn addr_term(field: &'static str, dir: &str, v: &str) -> Result<String, FilterError> {
    let bad = |reason: String| FilterError::Shortcut { field, reason };
    let (addr, len) = match v.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (v, None),
    };
    let ip: IpAddr = addr
        .parse()
        .map_err(|e| bad(format!("{v:?} is not an IP address: {e}")))?;
    match len {
        None => Ok(format!("{dir}host {ip}")),
        Some(l) => {
            let max = if ip.is_ipv4() { 32 } else { 128 };
            match l.parse::<u8>() {
                Ok(n) if n <= max => Ok(format!("{dir}net {ip}/{n}")),
                _ => Err(bad(format!("prefix length {l:?} not in 0..={max}"))),
            }
        }
    }
}

impl Shortcuts {
    /// True when no shortcut is set.
    pub fn is_empty(&self) -> bool {
        *self == Shortcuts::default()
    }

    /// Translates the shortcuts into a libpcap expression (see module docs).
    pub fn to_expression(&self) -> Result<String, FilterError> {
        let mut parts = Vec::new();
        if let Some(v) = self.vlan {
            if v > 4095 {
                return Err(FilterError::Shortcut {
                    field: "vlan",
                    reason: format!("{v} is not in 0..=4095"),
                });
            }
            parts.push(format!("vlan {v}"));
        }
        if let Some(h) = &self.host {
            parts.push(addr_term("host", "", h)?);
        }
        if let Some(h) = &self.src {
            parts.push(addr_term("src", "src ", h)?);
        }
        if let Some(h) = &self.dst {
            parts.push(addr_term("dst", "dst ", h)?);
        }
        if let Some(p) = self.port {
            parts.push(format!("port {p}"));
        }
        if let Some(p) = self.src_port {
            parts.push(format!("src port {p}"));
        }
        if let Some(p) = self.dst_port {
            parts.push(format!("dst port {p}"));
        }
        match self.proto {
            Some(ProtoShortcut::Tcp) => parts.push("tcp".into()),
            Some(ProtoShortcut::Udp) => parts.push("udp".into()),
            Some(ProtoShortcut::Icmp) => parts.push("(icmp or icmp6)".into()),
            Some(ProtoShortcut::Number(n)) => {
                parts.push(format!("(ip proto {n} or ip6 proto {n})"))
            }
            None => {}
        }
        Ok(parts.join(" and "))
    }
}

/// Joins shortcuts and a free expression into the expression libpcap compiles.
pub fn combine(shortcuts: &Shortcuts, expression: Option<&str>) -> Result<String, FilterError> {
    let s = shortcuts.to_expression()?;
    let e = expression.map(str::trim).filter(|e| !e.is_empty());
    Ok(match (s.is_empty(), e) {
        (true, None) => String::new(),
        (true, Some(e)) => e.to_string(),
        (false, None) => s,
        (false, Some(e)) => format!("{s} and ({e})"),
    })
}

/// A compiled filter.
#[derive(Debug, Clone)]
pub struct Filter {
    /// The libpcap expression ("" = accept all).
    expression: String,
    /// The compiled program; `None` accepts every packet.
    program: Option<Program>,
    /// The link type of the frames the program reads.
    link: LinkType,
}

impl Filter {
    /// A filter accepting every packet (of an Ethernet source).
    pub fn accept_all() -> Filter {
        Filter {
            expression: String::new(),
            program: None,
            link: LinkType::Ethernet,
        }
    }

    /// Compiles a libpcap expression for Ethernet frames.
    pub fn compile(expression: &str) -> Result<Filter, FilterError> {
        Filter::compile_for(expression, LinkType::Ethernet)
    }

    /// Compiles a libpcap expression for frames of link type `link`.
    pub fn compile_for(expression: &str, link: LinkType) -> Result<Filter, FilterError> {
        let dead =
            pcap::Capture::dead(pcap::Linktype(link.dlt())).map_err(|e| FilterError::Syntax {
                expression: expression.trim().to_string(),
                link,
                message: e.to_string(),
            })?;
        Filter::compile_on(expression, link, &dead)
    }

    /// Compiles a libpcap expression on an open handle of link type
    /// `link`. A capture file's own handle compiles exactly as tcpdump
    /// reading it does: for BSD loopback files, libpcap matches every
    /// system's IPv6 family number and the file's byte order, where a
    /// handle without a file uses this host's.
    pub fn compile_on<T: pcap::Activated + ?Sized>(
        expression: &str,
        link: LinkType,
        handle: &pcap::Capture<T>,
    ) -> Result<Filter, FilterError> {
        let expression = expression.trim();
        if expression.is_empty() {
            return Ok(Filter {
                link,
                ..Filter::accept_all()
            });
        }
        let syntax = |message: String| FilterError::Syntax {
            expression: expression.to_string(),
            link,
            message,
        };
        let prog = handle
            .compile(expression, true)
            .map_err(|e| syntax(e.to_string()))?;
        let mut insns = Vec::new();
        for i in prog.get_instructions() {
            // The pcap crate exposes instructions only through Display: "code jt jf k".
            let text = i.to_string();
            let f: Vec<u32> = text.split(' ').filter_map(|s| s.parse().ok()).collect();
            let [code, jt, jf, k] = f[..] else {
                return Err(syntax(format!("unreadable instruction {text:?}")));
            };
            insns.push(Insn {
                code: code as u16,
                jt: jt as u8,
                jf: jf as u8,
                k,
            });
        }
        Ok(Filter {
            expression: expression.to_string(),
            program: Some(Program::new(insns)?),
            link,
        })
    }

    /// The link type the filter was compiled for.
    pub fn link(&self) -> LinkType {
        self.link
    }

    /// The expression this filter was compiled from ("" accepts all).
    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// The compiled program, if any.
    pub fn program(&self) -> Option<&Program> {
        self.program.as_ref()
    }

    /// True when the frame matches.
    pub fn matches(&self, frame: &[u8], wire_len: u32) -> bool {
        match &self.program {
            None => true,
            Some(p) => p.run(frame, wire_len) > 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::tests::udp4;

    #[test]
    fn udp_port_filter() {
        let f = Filter::compile("udp and dst port 53").unwrap();
        let a = udp4([10, 0, 0, 1], [10, 0, 0, 2], 1000, 53, b"x");
        let b = udp4([10, 0, 0, 1], [10, 0, 0, 2], 1000, 54, b"x");
        assert!(f.matches(&a, a.len() as u32));
        assert!(!f.matches(&b, b.len() as u32));
        assert!(!f.matches(&a[..20], a.len() as u32));
    }

    #[test]
    fn net_and_vlan_filters() {
        let f = Filter::compile("vlan 42 and net 10.0.0.0/8").unwrap();
        let mut a = udp4([10, 0, 0, 1], [192, 0, 2, 2], 1, 2, b"");
        assert!(!f.matches(&a, a.len() as u32));
        a.splice(12..12, [0x81, 0x00, 0x00, 42]);
        assert!(f.matches(&a, a.len() as u32));
    }

    #[test]
    fn syntax_error_carries_libpcap_message() {
        let e = Filter::compile("tcp and and").unwrap_err();
        assert!(matches!(e, FilterError::Syntax { .. }));
        assert!(e.to_string().contains("syntax error"), "{e}");
    }

    #[test]
    fn shortcuts_translate() {
        let s = Shortcuts {
            vlan: Some(7),
            src: Some("10.1.0.0/16".into()),
            dst_port: Some(443),
            proto: Some(ProtoShortcut::Tcp),
            ..Default::default()
        };
        assert_eq!(
            s.to_expression().unwrap(),
            "vlan 7 and src net 10.1.0.0/16 and dst port 443 and tcp"
        );
        assert_eq!(
            combine(&s, Some("len > 60")).unwrap().matches('(').count(),
            1
        );
        Filter::compile(&combine(&s, Some("len > 60")).unwrap()).unwrap();
        let bad = Shortcuts {
            host: Some("10.0.0.1; rm".into()),
            ..Default::default()
        };
        assert!(bad.to_expression().is_err());
    }
}
