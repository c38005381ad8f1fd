//! Internet checksum (RFC 1071) and its incremental update (RFC 1624).

/// Adds `data` as big-endian 16-bit words to the running sum `acc`.
pub fn sum(data: &[u8], mut acc: u32) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u32::from(u16::from_be_bytes([c[0], c[1]]));
        acc = (acc & 0xffff) + (acc >> 16);
    }
    if let [last] = chunks.remainder() {
        acc += u32::from(*last) << 8;
    }
    acc
}

/// Folds the sum to 16 bits and complements it.
pub fn finish(mut acc: u32) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// RFC 1624 eqn. 3: the checksum after the bytes `old` became `new` (same
/// length, starting at an even offset of the checksummed data; an odd last
/// byte is the high half of its word, as in [`sum`]). Unchanged bytes leave
/// the checksum as it is.
pub fn update(check: u16, old: &[u8], new: &[u8]) -> u16 {
    if old == new {
        return check;
    }
    // HC' = ~(~HC + ~m + m')
    let word = |c: &[u8]| u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)]);
    let mut acc = u32::from(!check);
    for (o, n) in old.chunks(2).zip(new.chunks(2)) {
        acc += u32::from(!word(o));
        acc += u32::from(word(n));
        acc = (acc & 0xffff) + (acc >> 16);
    }
    finish(acc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn incremental_equals_full(mut data in proptest::collection::vec(any::<u8>(), 12..64), at in 0usize..4, new in any::<[u8; 4]>()) {
            let at = at * 2;
            if data.len() % 2 == 1 { data.pop(); }
            let before = finish(sum(&data, 0));
            let old: Vec<u8> = data[at..at + 4].to_vec();
            data[at..at + 4].copy_from_slice(&new);
            let full = finish(sum(&data, 0));
            let inc = update(before, &old, &new);
            // 0x0000 and 0xffff are both "zero" in one's complement.
            prop_assert!(inc == full || (inc == 0xffff && full == 0) || (inc == 0 && full == 0xffff));
        }
    }
}
