//! Packet sampling: count-based, uniform random, and hash-based flow sampling.

use crate::packet::Parsed;
use serde::{Deserialize, Serialize};
use siphasher::sip::SipHasher13;
use std::hash::Hasher;

/// Sampling configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
pub enum Sampling {
    /// Keep every packet.
    All,
    /// Keep the 1st, (n+1)th, (2n+1)th ... packet.
    OneInN {
        /// Period (>= 1).
        n: u64,
    },
    /// Keep each packet independently with probability `p`.
    Probability {
        /// Probability in [0, 1].
        p: f64,
        /// RNG seed, for reproducible offline runs.
        #[serde(default)]
        seed: u64,
    },
    /// Keep whole flows with probability `p`: a keyed hash of the canonical
    /// (direction-independent) 5-tuple decides, so both directions of a flow
    /// are kept or dropped together.
    Flow {
        /// Fraction of flows kept, in [0, 1].
        p: f64,
        /// Hash key; the same key gives the same flows on every node.
        #[serde(default)]
        seed: u64,
    },
}

impl Sampling {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            Sampling::OneInN { n: 0 } => Err("one_in_n: n must be >= 1".into()),
            Sampling::Probability { p, .. } | Sampling::Flow { p, .. }
                if !(0.0..=1.0).contains(&p) =>
            {
                Err(format!("sampling probability {p} not in [0, 1]"))
            }
            _ => Ok(()),
        }
    }
}

/// Running state of a [`Sampling`].
#[derive(Debug, Clone)]
pub struct Sampler {
    /// The configuration.
    cfg: Sampling,
    /// Packets offered so far (count-based sampling).
    count: u64,
    /// xorshift64* state (probability sampling).
    rng: u64,
    /// Keep threshold on a u64 draw or hash.
    threshold: u64,
}

fn threshold(p: f64) -> u64 {
    if p >= 1.0 {
        u64::MAX
    } else {
        (p * u64::MAX as f64) as u64
    }
}

/// Canonical 5-tuple key: the (address, port) pairs in sorted order.
pub fn canonical_tuple(p: &Parsed, f: &[u8], out: &mut [u8; 37]) -> usize {
    let Some(l3) = p.l3 else { return 0 };
    let n = l3.addr_len();
    let (so, dp) = (l3.src_offset(), l3.dst_offset());
    let (Some(s), Some(d)) = (f.get(so..so + n), f.get(dp..dp + n)) else {
        return 0;
    };
    let (sp, dpt) = p.ports(f);
    let a = (s, sp);
    let b = (d, dpt);
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    out[..n].copy_from_slice(lo.0);
    out[n..2 * n].copy_from_slice(hi.0);
    out[2 * n..2 * n + 2].copy_from_slice(&lo.1.to_be_bytes());
    out[2 * n + 2..2 * n + 4].copy_from_slice(&hi.1.to_be_bytes());
    out[2 * n + 4] = l3.proto;
    2 * n + 5
}

impl Sampler {
    /// A sampler in its initial state.
    pub fn new(cfg: Sampling) -> Sampler {
        let (t, seed) = match cfg {
            Sampling::Probability { p, seed } | Sampling::Flow { p, seed } => (threshold(p), seed),
            _ => (u64::MAX, 0),
        };
        Sampler {
            cfg,
            count: 0,
            rng: seed ^ 0x9e37_79b9_7f4a_7c15 | 1,
            threshold: t,
        }
    }

    /// True when the packet is kept.
    pub fn keep(&mut self, p: &Parsed, frame: &[u8]) -> bool {
        match self.cfg {
            Sampling::All => true,
            Sampling::OneInN { n } => {
                let k = self.count.is_multiple_of(n.max(1));
                self.count += 1;
                k
            }
            Sampling::Probability { .. } => {
                self.rng ^= self.rng >> 12;
                self.rng ^= self.rng << 25;
                self.rng ^= self.rng >> 27;
                let draw = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d);
                self.threshold == u64::MAX || draw < self.threshold
            }
            Sampling::Flow { seed, .. } => {
                let mut key = [0u8; 37];
                let n = canonical_tuple(p, frame, &mut key);
                let mut h =
                    SipHasher13::new_with_keys(seed, seed.rotate_left(32) ^ 0x5347_5f46_4c4f_5753);
                h.write(&key[..n]);
                self.threshold == u64::MAX || h.finish() < self.threshold
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::tests::udp4;

    #[test]
    fn one_in_n_and_probability() {
        let f = udp4([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, b"");
        let p = Parsed::ethernet(&f);
        let mut s = Sampler::new(Sampling::OneInN { n: 10 });
        assert_eq!((0..100).filter(|_| s.keep(&p, &f)).count(), 10);
        let mut s = Sampler::new(Sampling::Probability { p: 0.25, seed: 3 });
        let kept = (0..100_000).filter(|_| s.keep(&p, &f)).count();
        assert!((23_000..27_000).contains(&kept), "{kept}");
    }

    #[test]
    fn flow_sampling_keeps_both_directions() {
        let mut s = Sampler::new(Sampling::Flow { p: 0.5, seed: 42 });
        let mut kept = 0;
        for i in 0..2000u16 {
            let a = udp4(
                [10, 0, (i >> 8) as u8, i as u8],
                [10, 9, 9, 9],
                1000 + i,
                53,
                b"",
            );
            let b = udp4(
                [10, 9, 9, 9],
                [10, 0, (i >> 8) as u8, i as u8],
                53,
                1000 + i,
                b"",
            );
            let (pa, pb) = (Parsed::ethernet(&a), Parsed::ethernet(&b));
            let ka = s.keep(&pa, &a);
            assert_eq!(ka, s.keep(&pb, &b));
            kept += usize::from(ka);
        }
        assert!((850..1150).contains(&kept), "{kept}");
    }
}
