//! Crypto-PAn prefix-preserving address anonymisation (Xu, Fan, Ammar, Moon 2002).
//!
//! With a 32-byte key, the first 16 bytes are the AES-128 key and the last 16
//! bytes, encrypted with it, form the *pad*. Output bit `i` of an address is
//! its input bit `i` XOR the most significant bit of
//! `AES(first i bits of the address ‖ remaining bits of the pad)`. Two
//! addresses sharing a k-bit prefix therefore share a k-bit anonymised prefix.
//! IPv6 uses the same construction over 128 bits.
//!
//! Every output bit needs one AES block; [`CryptoPan`] caches the flip bits
//! of IPv4 /16 prefixes (a flat table), of /24 prefixes and of the last
//! octet (a map of /24 entries), and of IPv6 /64 prefixes, so that repeated
//! addresses cost a couple of table look-ups. The AES blocks of one address
//! are independent and are encrypted as a batch (pipelined AES-NI).

use aes::cipher::{Array, BlockCipherEncrypt, KeyInit};
use aes::Aes128;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

/// A 32-byte Crypto-PAn key. Its `Debug` output never shows the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Key([u8; 32]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(<redacted>)")
    }
}

/// Why a key could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The key file could not be read.
    #[error("cannot read key file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Its group or others may read it (`chmod 600` fixes it): the key
    /// undoes the anonymisation.
    #[error("anonymisation key {0}")]
    Exposed(#[from] httpkit::secret::SecretFileError),
    /// Neither 32 raw bytes nor 64 hex characters (plus optional newline).
    #[error("key must be 32 raw bytes or 64 hex characters, got {len} bytes")]
    Format {
        /// Length of what was read.
        len: usize,
    },
}

impl Key {
    /// A key from its 32 bytes.
    pub fn from_bytes(b: [u8; 32]) -> Key {
        Key(b)
    }

    /// Parses 32 raw bytes, or 64 hex characters with an optional trailing newline.
    pub fn parse(data: &[u8]) -> Result<Key, KeyError> {
        if data.len() == 32 {
            let mut k = [0u8; 32];
            k.copy_from_slice(data);
            return Ok(Key(k));
        }
        let trimmed = data.strip_suffix(b"\n").unwrap_or(data);
        let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
        let err = KeyError::Format { len: data.len() };
        if trimmed.len() != 64 {
            return Err(err);
        }
        let mut k = [0u8; 32];
        for (i, pair) in trimmed.chunks_exact(2).enumerate() {
            let s = std::str::from_utf8(pair).map_err(|_| KeyError::Format { len: data.len() })?;
            k[i] = u8::from_str_radix(s, 16).map_err(|_| KeyError::Format { len: data.len() })?;
        }
        Ok(Key(k))
    }

    /// Reads a key file (32 raw bytes or 64 hex characters).
    pub fn from_file(path: &Path) -> Result<Key, KeyError> {
        let data = std::fs::read(path).map_err(|source| KeyError::Read {
            path: path.display().to_string(),
            source,
        })?;
        httpkit::secret::check_private(path)?;
        Key::parse(&data)
    }
}

/// Minimal multiplicative hasher for integer keys of the caches.
#[derive(Default)]
struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = (u64::from(n) ^ self.0).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ self.0).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// Flip bits for positions `from..to` of the MSB-aligned `addr`.
fn flips(aes: &Aes128, pad: u128, addr: u128, from: u32, to: u32) -> u128 {
    let mut blocks = [Array([0u8; 16]); 32];
    let mut out = 0u128;
    let mut pos = from;
    while pos < to {
        let n = (to - pos).min(32) as usize;
        for (j, b) in blocks[..n].iter_mut().enumerate() {
            let p = pos + j as u32;
            let mask = if p == 0 { 0 } else { !0u128 << (128 - p) };
            b.0 = ((addr & mask) | (pad & !mask)).to_be_bytes();
        }
        aes.encrypt_blocks(&mut blocks[..n]);
        for (j, b) in blocks[..n].iter().enumerate() {
            out |= u128::from(b.0[0] >> 7) << (127 - (pos + j as u32));
        }
        pos += n as u32;
    }
    out
}

/// Cached flips of one IPv4 /24: bits 16..24 and, per last octet, bits 24..32.
struct Slash24 {
    /// Flip bits 16..24 of this /24 (as the low byte of the third octet).
    mid: u8,
    /// Flip bits 24..32 per last octet; valid where `known` has the bit set.
    last: [u8; 256],
    /// Bitmap of computed entries of `last`.
    known: [u64; 4],
}

/// Upper bound of cached /24 (and IPv6 /64) entries before the cache is reset.
const MAX_ENTRIES: usize = 1 << 16;

/// A Crypto-PAn anonymiser with its prefix caches.
pub struct CryptoPan {
    /// AES-128 keyed with the first half of the key.
    aes: Aes128,
    /// The encrypted second half of the key, big-endian.
    pad: u128,
    /// IPv4 /16 flip bits, 65536 entries (128 KiB), allocated on first IPv4 use.
    top16: Vec<u16>,
    /// Which `top16` entries are computed (one bit per /16).
    top16_known: Vec<u64>,
    /// IPv4 /24 entries.
    v4: IntMap<u32, Box<Slash24>>,
    /// IPv6 flip bits of the first 64 bits, by /64 prefix.
    v6: IntMap<u64, u64>,
}

impl std::fmt::Debug for CryptoPan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CryptoPan")
            .field("key", &"<redacted>")
            .finish()
    }
}

impl CryptoPan {
    /// Builds the anonymiser for `key`.
    pub fn new(key: &Key) -> CryptoPan {
        let aes = Aes128::new(&Array(
            <[u8; 16]>::try_from(&key.0[..16]).unwrap_or_default(),
        ));
        let mut pad = Array(<[u8; 16]>::try_from(&key.0[16..]).unwrap_or_default());
        aes.encrypt_block(&mut pad);
        CryptoPan {
            aes,
            pad: u128::from_be_bytes(pad.0),
            top16: Vec::new(),
            top16_known: Vec::new(),
            v4: IntMap::default(),
            v6: IntMap::default(),
        }
    }

    /// Flip bits for positions `from..to` of `addr` (MSB-aligned), placed at
    /// their bit positions in the returned value. Uncached.
    pub fn flips(&self, addr: u128, from: u32, to: u32) -> u128 {
        flips(&self.aes, self.pad, addr, from, to)
    }

    /// Anonymises an IPv4 address without touching the caches.
    pub fn anonymize_v4_uncached(&self, a: u32) -> u32 {
        let addr = u128::from(a) << 96;
        a ^ (self.flips(addr, 0, 32) >> 96) as u32
    }

    /// Anonymises an IPv4 address (host order value), using the caches.
    pub fn anonymize_v4(&mut self, a: u32) -> u32 {
        let addr = u128::from(a) << 96;
        let t = (a >> 16) as usize;
        if self.top16.is_empty() {
            self.top16 = vec![0; 1 << 16];
            self.top16_known = vec![0; 1 << 10];
        }
        if self.top16_known[t / 64] & (1 << (t % 64)) == 0 {
            self.top16[t] = (self.flips(addr, 0, 16) >> 112) as u16;
            self.top16_known[t / 64] |= 1 << (t % 64);
        }
        let top = u32::from(self.top16[t]);
        if self.v4.len() >= MAX_ENTRIES && !self.v4.contains_key(&(a >> 8)) {
            self.v4.clear();
        }
        let (aes, pad) = (&self.aes, self.pad);
        let e = self.v4.entry(a >> 8).or_insert_with(|| {
            Box::new(Slash24 {
                mid: (flips(aes, pad, addr, 16, 24) >> 104) as u8,
                last: [0; 256],
                known: [0; 4],
            })
        });
        let lo = (a & 0xff) as usize;
        if e.known[lo / 64] & (1 << (lo % 64)) == 0 {
            e.last[lo] = (flips(aes, pad, addr, 24, 32) >> 96) as u8;
            e.known[lo / 64] |= 1 << (lo % 64);
        }
        let flips = (top << 16) | (u32::from(e.mid) << 8) | u32::from(e.last[lo]);
        a ^ flips
    }

    /// Anonymises an IPv6 address (as a big-endian u128), caching /64 prefixes.
    pub fn anonymize_v6(&mut self, a: u128) -> u128 {
        let hi = (a >> 64) as u64;
        let top = match self.v6.get(&hi) {
            Some(&t) => t,
            None => {
                let t = (self.flips(a, 0, 64) >> 64) as u64;
                if self.v6.len() >= MAX_ENTRIES {
                    self.v6.clear();
                }
                self.v6.insert(hi, t);
                t
            }
        };
        let low = self.flips(a, 64, 128);
        a ^ ((u128::from(top) << 64) | low)
    }

    /// Anonymises an [`Ipv4Addr`].
    pub fn ipv4(&mut self, a: Ipv4Addr) -> Ipv4Addr {
        Ipv4Addr::from(self.anonymize_v4(u32::from(a)))
    }

    /// Anonymises an [`Ipv6Addr`].
    pub fn ipv6(&mut self, a: Ipv6Addr) -> Ipv6Addr {
        Ipv6Addr::from(self.anonymize_v6(u128::from(a)))
    }

    /// Anonymises an address stored in `bytes` (4 or 16 bytes) in place.
    pub fn in_place(&mut self, bytes: &mut [u8]) {
        if let Ok(b) = <[u8; 4]>::try_from(&*bytes) {
            let v = self.anonymize_v4(u32::from_be_bytes(b));
            bytes.copy_from_slice(&v.to_be_bytes());
        } else if let Ok(b) = <[u8; 16]>::try_from(&*bytes) {
            let v = self.anonymize_v6(u128::from_be_bytes(b));
            bytes.copy_from_slice(&v.to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "1522178d33a4cf80130a5b1649907d10d8988f837979652762574c2d2a842202";

    #[test]
    fn key_formats_and_redaction() {
        let k = Key::parse(format!("{KEY}\n").as_bytes()).unwrap();
        assert_eq!(Key::parse(&k.0).unwrap(), k);
        assert!(Key::parse(b"abc").is_err());
        assert!(!format!("{k:?}").contains("15"));
        assert!(!format!("{:?}", CryptoPan::new(&k)).contains("1522"));
    }

    #[test]
    fn key_files() {
        let t = tempfile::tempdir().unwrap();
        let raw = t.path().join("raw");
        httpkit::secret::write_private(&raw, [0x15u8; 32]).unwrap();
        assert_eq!(Key::from_file(&raw).unwrap(), Key::from_bytes([0x15; 32]));
        let hex = t.path().join("hex");
        httpkit::secret::write_private(&hex, format!("{KEY}\r\n")).unwrap();
        assert_eq!(
            Key::from_file(&hex).unwrap(),
            Key::parse(KEY.as_bytes()).unwrap()
        );
        std::fs::write(&hex, &KEY[..63]).unwrap();
        assert!(matches!(
            Key::from_file(&hex),
            Err(KeyError::Format { len: 63 })
        ));
        assert!(matches!(
            Key::from_file(&t.path().join("none")),
            Err(KeyError::Read { .. })
        ));
    }

    #[test]
    fn cached_equals_uncached_and_preserves_prefixes() {
        let mut c = CryptoPan::new(&Key::parse(KEY.as_bytes()).unwrap());
        let mut x = 0x1234_5678u32;
        for _ in 0..2000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let a = x & 0xffff_0f0f;
            assert_eq!(c.anonymize_v4(a), c.anonymize_v4_uncached(a));
            let b = a ^ 0x10;
            let (ea, eb) = (c.anonymize_v4(a), c.anonymize_v4(b));
            assert_eq!(ea >> 5, eb >> 5);
            assert_ne!(ea, eb);
        }
    }
}
