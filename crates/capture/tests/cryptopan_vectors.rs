//! Every vector of the shared Crypto-PAn file, through the public API.

use capture::cryptopan::{CryptoPan, Key};
use capture::text::anonymize_text;
use std::net::{Ipv4Addr, Ipv6Addr};

fn vectors() -> Vec<(String, String, String, String)> {
    let text = include_str!("data/cryptopan.tsv");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("set\t") && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 5, "bad vector line {l:?}");
            (f[1].into(), f[2].into(), f[3].into(), f[4].into())
        })
        .collect()
}

#[test]
fn all_vectors_cached_uncached_and_text() {
    let v = vectors();
    assert_eq!(v.len(), 75);
    for (key_hex, family, input, expected) in &v {
        let key = Key::parse(key_hex.as_bytes()).unwrap();
        let mut cp = CryptoPan::new(&key);
        match family.as_str() {
            "ipv4" => {
                let a: Ipv4Addr = input.parse().unwrap();
                assert_eq!(cp.ipv4(a).to_string(), *expected, "{input}");
                assert_eq!(
                    Ipv4Addr::from(cp.anonymize_v4_uncached(a.into())).to_string(),
                    *expected
                );
            }
            "ipv6" => {
                let a: Ipv6Addr = input.parse().unwrap();
                assert_eq!(cp.ipv6(a).to_string(), *expected, "{input}");
            }
            f => panic!("unknown family {f}"),
        }
        let out = anonymize_text(&key, [input.as_str()]);
        assert_eq!(out[0].as_deref(), Ok(expected.as_str()));
    }
    // One anonymiser over the whole sample: the caches must not change results.
    let key = Key::parse(v[0].0.as_bytes()).unwrap();
    let inputs: Vec<&str> = v.iter().map(|x| x.2.as_str()).collect();
    let out = anonymize_text(&key, inputs.iter().copied().chain(["not-an-ip"]));
    for (o, x) in out.iter().zip(&v) {
        assert_eq!(o.as_deref(), Ok(x.3.as_str()));
    }
    assert_eq!(out.last().unwrap().as_ref().unwrap_err().line, 76);
}
