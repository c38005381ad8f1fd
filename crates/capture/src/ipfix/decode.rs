//! Sans-I/O IPFIX decoder for flow records (RFC 7011): template sets are
//! learnt per observation domain, data records are read field by field
//! through their template, and the information elements the encoder
//! writes become [`FlowRecord`]s again. Other elements are skipped, so a
//! record of another exporter decodes to what it shares with ours.
//!
//! Used to read IPFIX files back (tests, recovery checks); it never panics
//! on input, a short buffer is [`DecodeError::Incomplete`].
//!
//! ```
//! use capture::ipfix::{decode, Encoder, TimeResolution};
//! let enc = Encoder::new(1, 65535, TimeResolution::Milliseconds);
//! let msg = enc.templates(0);
//! assert!(decode::read_all(&msg).unwrap().is_empty());
//! ```

use super::encode::REVERSE_PEN;
use crate::flow::{EndReason, FlowKey, FlowRecord};
use std::collections::HashMap;

/// Why a message could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The buffer ends inside a message: more bytes are needed.
    #[error("incomplete IPFIX message: {need} bytes needed")]
    Incomplete {
        /// Bytes of the whole message.
        need: usize,
    },
    /// The bytes are not valid IPFIX.
    #[error("invalid IPFIX at byte {at}: {why}")]
    Invalid {
        /// Offset in the message.
        at: usize,
        /// What is wrong.
        why: String,
    },
}

/// One template field: (element id, length, enterprise number).
type Field = (u16, u16, Option<u32>);

/// Template-aware decoder; templates persist across messages.
#[derive(Debug, Default, Clone)]
pub struct Decoder {
    /// Templates by (observation domain, template id).
    templates: HashMap<(u32, u16), Vec<Field>>,
}

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x))
}

fn be128(b: &[u8]) -> u128 {
    b.iter().fold(0u128, |a, &x| (a << 8) | u128::from(x))
}

/// ns since the Unix epoch of an NTP timestamp.
fn from_ntp(v: u64) -> u64 {
    let secs = (v >> 32).saturating_sub(2_208_988_800);
    let frac = ((v & 0xffff_ffff) * 1_000_000_000) >> 32;
    secs * 1_000_000_000 + frac
}

fn invalid(at: usize, why: impl Into<String>) -> DecodeError {
    DecodeError::Invalid {
        at,
        why: why.into(),
    }
}

impl Decoder {
    /// A decoder knowing no template.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Decodes the message at the start of `b`: its data records and the
    /// bytes it took. Data sets of unknown templates are skipped.
    pub fn message(&mut self, b: &[u8]) -> Result<(Vec<FlowRecord>, usize), DecodeError> {
        if b.len() < 16 {
            return Err(DecodeError::Incomplete { need: 16 });
        }
        if b[0..2] != [0, 10] {
            return Err(invalid(0, "version is not 10"));
        }
        let len = usize::from(u16::from_be_bytes([b[2], b[3]]));
        if len < 16 {
            return Err(invalid(2, "message length below 16"));
        }
        if b.len() < len {
            return Err(DecodeError::Incomplete { need: len });
        }
        let domain = be(&b[12..16]) as u32;
        let mut out = Vec::new();
        let mut at = 16;
        while at < len {
            let h = b
                .get(at..at + 4)
                .filter(|_| at + 4 <= len)
                .ok_or_else(|| invalid(at, "set header past the message end"))?;
            let id = u16::from_be_bytes([h[0], h[1]]);
            let set_len = usize::from(u16::from_be_bytes([h[2], h[3]]));
            if set_len < 4 || at + set_len > len {
                return Err(invalid(at, "bad set length"));
            }
            let body = &b[at + 4..at + set_len];
            match id {
                2 => self.templates_set(domain, body, at + 4)?,
                256.. => {
                    if let Some(t) = self.templates.get(&(domain, id)) {
                        decode_data(t, body, at + 4, &mut out)?;
                    }
                }
                _ => {} // options templates and reserved ids: not flow records
            }
            at += set_len;
        }
        Ok((out, len))
    }

    fn templates_set(&mut self, domain: u32, mut b: &[u8], base: usize) -> Result<(), DecodeError> {
        let start = b.len();
        while b.len() >= 4 {
            let at = base + start - b.len();
            let id = u16::from_be_bytes([b[0], b[1]]);
            let n = usize::from(u16::from_be_bytes([b[2], b[3]]));
            b = &b[4..];
            let mut fields = Vec::with_capacity(n);
            for _ in 0..n {
                let f = b
                    .get(..4)
                    .ok_or_else(|| invalid(at, "template cut short"))?;
                let (ie, flen) = (
                    u16::from_be_bytes([f[0], f[1]]),
                    u16::from_be_bytes([f[2], f[3]]),
                );
                b = &b[4..];
                let pen = if ie & 0x8000 != 0 {
                    let p = b
                        .get(..4)
                        .ok_or_else(|| invalid(at, "template cut short"))?;
                    b = &b[4..];
                    Some(be(p) as u32)
                } else {
                    None
                };
                fields.push((ie & 0x7fff, flen, pen));
            }
            if id < 256 {
                return Err(invalid(at, format!("template id {id} below 256")));
            }
            self.templates.insert((domain, id), fields);
        }
        Ok(())
    }
}

fn decode_data(
    t: &[Field],
    mut b: &[u8],
    base: usize,
    out: &mut Vec<FlowRecord>,
) -> Result<(), DecodeError> {
    let fixed: Option<usize> = t
        .iter()
        .map(|f| (f.1 != 0xffff).then_some(usize::from(f.1)))
        .sum();
    // Trailing bytes shorter than a record are padding (RFC 7011 §3.3.1).
    while !b.is_empty() && fixed.is_none_or(|l| l > 0 && b.len() >= l) {
        let at = base;
        let mut r = FlowRecord {
            key: FlowKey {
                v6: false,
                src: 0,
                dst: 0,
                sport: 0,
                dport: 0,
                proto: 0,
            },
            start_ns: 0,
            end_ns: 0,
            packets: 0,
            octets: 0,
            tcp_flags: 0,
            rev_packets: 0,
            rev_octets: 0,
            rev_tcp_flags: 0,
            end_reason: EndReason::Forced,
        };
        for &(ie, flen, pen) in t {
            let mut n = usize::from(flen);
            if flen == 0xffff {
                let l = *b.first().ok_or_else(|| invalid(at, "record cut short"))?;
                b = &b[1..];
                n = usize::from(l);
                if l == 255 {
                    let l2 = b.get(..2).ok_or_else(|| invalid(at, "record cut short"))?;
                    n = be(l2) as usize;
                    b = &b[2..];
                }
            }
            let v = b.get(..n).ok_or_else(|| invalid(at, "record cut short"))?;
            b = &b[n..];
            match (pen, ie) {
                (None, 152) | (None, 153) => {
                    let ns = be(v).saturating_mul(1_000_000);
                    *(if ie == 152 {
                        &mut r.start_ns
                    } else {
                        &mut r.end_ns
                    }) = ns;
                }
                (None, 156) | (None, 157) => {
                    let ns = from_ntp(be(v));
                    *(if ie == 156 {
                        &mut r.start_ns
                    } else {
                        &mut r.end_ns
                    }) = ns;
                }
                (None, 1) => r.octets = be(v),
                (None, 2) => r.packets = be(v),
                (None, 7) => r.key.sport = be(v) as u16,
                (None, 11) => r.key.dport = be(v) as u16,
                (None, 8) => r.key.src = be128(v),
                (None, 12) => r.key.dst = be128(v),
                (None, 27) | (None, 28) => {
                    r.key.v6 = true;
                    *(if ie == 27 {
                        &mut r.key.src
                    } else {
                        &mut r.key.dst
                    }) = be128(v);
                }
                (None, 4) => r.key.proto = be(v) as u8,
                (None, 6) => r.tcp_flags = be(v) as u8,
                (None, 136) => {
                    r.end_reason = EndReason::from_code(be(v) as u8).unwrap_or(EndReason::Forced)
                }
                (Some(REVERSE_PEN), 1) => r.rev_octets = be(v),
                (Some(REVERSE_PEN), 2) => r.rev_packets = be(v),
                (Some(REVERSE_PEN), 6) => r.rev_tcp_flags = be(v) as u8,
                _ => {}
            }
        }
        out.push(r);
    }
    Ok(())
}

/// Decodes every message of an IPFIX file (RFC 5655: messages back to
/// back); a partial message at the end is [`DecodeError::Incomplete`].
pub fn read_all(mut b: &[u8]) -> Result<Vec<FlowRecord>, DecodeError> {
    let mut d = Decoder::new();
    let mut out = Vec::new();
    while !b.is_empty() {
        let (recs, n) = d.message(b)?;
        out.extend(recs);
        b = &b[n..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipfix::{Encoder, TimeResolution};

    fn rec(i: u64, v6: bool) -> FlowRecord {
        FlowRecord {
            key: FlowKey {
                v6,
                src: if v6 {
                    u128::MAX - u128::from(i)
                } else {
                    u128::from(i) + 1
                },
                dst: 0x0a00_0002,
                sport: 1000 + i as u16,
                dport: 53,
                proto: 17,
            },
            start_ns: 1_700_000_000_123_000_000 + i * 1_000_000,
            end_ns: 1_700_000_002_456_000_000,
            packets: i + 1,
            octets: 60 * (i + 1),
            tcp_flags: 0x1b,
            rev_packets: i,
            rev_octets: 40 * i,
            rev_tcp_flags: 0x12,
            end_reason: EndReason::Active,
        }
    }

    #[test]
    fn encoder_output_decodes_to_the_same_records() {
        for (res, biflow) in [
            (TimeResolution::Milliseconds, false),
            (TimeResolution::Milliseconds, true),
            (TimeResolution::Nanoseconds, true),
        ] {
            let mut enc = Encoder::new(9, 600, res);
            let recs: Vec<FlowRecord> = (0..30).map(|i| rec(i, i % 3 == 0)).collect();
            let mut file = enc.templates(5);
            let mut ends = vec![file.len()];
            for m in enc.data(5, &recs, biflow) {
                file.extend(m);
                ends.push(file.len());
            }
            let mut back = read_all(&file).unwrap();
            let mut want = recs.clone();
            if !biflow {
                for w in &mut want {
                    (w.rev_packets, w.rev_octets, w.rev_tcp_flags) = (0, 0, 0);
                }
            }
            back.sort_by_key(|r| r.key.sport);
            want.sort_by_key(|r| r.key.sport);
            if res == TimeResolution::Nanoseconds {
                // NTP fractions round to within a nanosecond.
                for (b, w) in back.iter_mut().zip(&want) {
                    assert!(b.start_ns.abs_diff(w.start_ns) <= 1);
                    (b.start_ns, b.end_ns) = (w.start_ns, w.end_ns);
                }
            }
            assert_eq!(back, want, "{res:?} biflow {biflow}");
            // A cut inside a message is Incomplete, never a panic.
            for n in 1..file.len() {
                let r = read_all(&file[..n]);
                assert_eq!(r.is_ok(), ends.contains(&n), "cut at {n}");
                if let Err(e) = r {
                    assert!(matches!(e, DecodeError::Incomplete { .. }), "{e}");
                }
            }
        }
    }
}
