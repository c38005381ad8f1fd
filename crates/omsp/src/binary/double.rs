//! DOUBLE_T: the reference's 32-bit mantissa / 8-bit exponent double.
//!
//! `v = M · 2^(x − 30)` with `M` a signed 32-bit and `x` a signed 8-bit
//! integer. The encoder follows liboml2 bit for bit: `frexp(v) = (f, x)` with
//! `0.5 ≤ |f| < 1`, then `M = trunc(f · 2^30)`. Values it cannot represent
//! (NaN, ±Inf, |v| < 2^−129 except zero, |v| ≥ 2^127) become DOUBLE_NAN.

/// Exactly `2^e` for `-1022 <= e <= 1023`.
fn pow2(e: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&e));
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// `frexp` for finite non-zero normal doubles: (f, x) with v = f·2^x, 0.5 ≤ |f| < 1.
/// Returns `None` for subnormals (whose exponent is far outside int8 anyway).
fn frexp(v: f64) -> Option<(f64, i32)> {
    let biased = ((v.to_bits() >> 52) & 0x7ff) as i32;
    if biased == 0 || biased == 0x7ff {
        return None;
    }
    let x = biased - 1022;
    // Replace the exponent with the one of [0.5, 1).
    let f = f64::from_bits((v.to_bits() & !(0x7ff << 52)) | (1022 << 52));
    Some((f, x))
}

/// Encodes `v` as DOUBLE_T `(M, x)`, or `None` when liboml2 would send DOUBLE_NAN.
pub fn encode(v: f64) -> Option<(i32, i8)> {
    if v == 0.0 {
        return Some((0, 0));
    }
    let (f, x) = frexp(v)?;
    let x = i8::try_from(x).ok()?;
    // |f·2^30| < 2^30: exact in f64, truncation toward zero as C's cast.
    Some(((f * pow2(30)).trunc() as i32, x))
}

/// Decodes any `(M, x)` pair, normalised or not; exact (no rounding happens:
/// the result is an integer times a power of two well inside f64's range).
pub fn decode(m: i32, x: i8) -> f64 {
    f64::from(m) * pow2(i32::from(x) - 30)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(v: f64) -> Option<[u8; 5]> {
        encode(v).map(|(m, x)| {
            let mut b = [0u8; 5];
            b[..4].copy_from_slice(&m.to_be_bytes());
            b[4] = x as u8;
            b
        })
    }

    #[test]
    fn captured_values_match_the_reference_bytes() {
        assert_eq!(
            bytes(std::f64::consts::PI),
            Some([0x32, 0x43, 0xF6, 0xA8, 0x02])
        );
        assert_eq!(bytes(100.125), Some([0x32, 0x10, 0x00, 0x00, 0x07]));
        assert_eq!(bytes(-0.5), Some([0xE0, 0x00, 0x00, 0x00, 0x00]));
        assert_eq!(bytes(0.25), Some([0x20, 0x00, 0x00, 0x00, 0xFF]));
        assert_eq!(bytes(0.0), Some([0; 5]));
        assert_eq!(bytes(-0.0), Some([0; 5]));
        assert_eq!(bytes(1e-300), None);
        assert_eq!(bytes(f64::NAN), None);
        assert_eq!(bytes(f64::INFINITY), None);
        assert_eq!(bytes(f64::NEG_INFINITY), None);
        assert_eq!(decode(843314856, 2), 3.141592651605606);
    }

    #[test]
    fn range_edges() {
        // 2^127 has frexp exponent 128: out of int8.
        assert_eq!(encode(2f64.powi(127)), None);
        assert!(encode(2f64.powi(127) * 0.999).is_some());
        // 2^-129 has exponent -128: the smallest that fits.
        assert_eq!(encode(2f64.powi(-129)), Some((1 << 29, -128)));
        assert_eq!(encode(2f64.powi(-130)), None);
        assert_eq!(encode(f64::MIN_POSITIVE / 4.0), None);
    }

    #[test]
    fn decode_accepts_unnormalised_and_extreme_pairs() {
        assert_eq!(decode(1, 30), 1.0);
        assert_eq!(decode(i32::MIN, 0), -2.0);
        assert_eq!(decode(i32::MAX, 127), f64::from(i32::MAX) * 2f64.powi(97));
        assert_eq!(decode(1, -128), 2f64.powi(-158));
    }

    #[test]
    fn encode_is_truncation_of_the_normalised_mantissa() {
        for &v in &[1.0, -1.0, 0.1, -123456.789, 1e38, -3e-38, 6.02e23] {
            let (m, x) = encode(v).unwrap();
            let back = decode(m, x);
            assert!(
                (back - v).abs() <= v.abs() * 2f64.powi(-29),
                "{v} -> {back}"
            );
            assert!(back.abs() <= v.abs(), "truncation never rounds up");
            assert_eq!(
                encode(back),
                Some((m, x)),
                "re-encoding a decoded value is stable"
            );
        }
    }
}
