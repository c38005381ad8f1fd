//! Client configuration front ends. Input: `[selector, bytes...]`.
//!
//! - selector % 4 = 0, 1, 2: the bytes are a configuration file named
//!   `f.xml`, `f.toml` or `f.conf` (format sniffed). No panic; an error
//!   displays and its line lies inside the input; an accepted configuration
//!   has a destination, writes back as XML that parses to the same value, and
//!   writing is then a fixed point.
//! - selector % 4 = 3: the bytes, split on NUL, are an argv for
//!   `config::args::extract`. No panic; on success the remaining arguments are
//!   a subsequence of the input with no `--oml-*` left after `argv[0]`; on
//!   error argv is unchanged.
//! - Always: if the bytes are UTF-8 and a URI, it writes back to itself.
//!
//! Seeds (`fuzz/seeds/client_config/`): the samples of
//! `crates/client/tests/data/config/` behind each selector, and a few argvs.
#![no_main]

use client::config::{self, args, uri, xml};
use libfuzzer_sys::fuzz_target;

fn check_file(body: &[u8], name: &str) {
    match config::parse_bytes(body, name) {
        Ok(cfg) => {
            assert!(!cfg.destinations.is_empty(), "accepted without destination");
            let written = xml::to_string(&cfg);
            let again = xml::parse(&written, "rt.xml")
                .unwrap_or_else(|e| panic!("written config rejected: {e}\n{written}"));
            assert_eq!(again, cfg, "XML round trip\n{written}");
            assert_eq!(
                xml::to_string(&again),
                written,
                "writing is not a fixed point"
            );
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            if let Some(line) = e.location().and_then(|l| l.line) {
                let lines = body.iter().filter(|&&b| b == b'\n').count() + 1;
                assert!(line >= 1 && line <= lines, "line {line} of {lines}: {e}");
            }
        }
    }
}

fn check_argv(body: &[u8]) {
    let original: Vec<String> = body
        .split(|&b| b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let mut argv = original.clone();
    match args::extract(&mut argv, &|_| None) {
        Ok(opts) => {
            let _ = format!("{opts:?}");
            let mut it = original.iter();
            for a in &argv {
                assert!(it.any(|o| o == a), "{a:?} is not from the input, in order");
            }
            assert!(
                argv.iter().skip(1).all(|a| !a.starts_with("--oml-")),
                "--oml-* left in {argv:?}"
            );
            assert_eq!(argv.first(), original.first(), "argv[0] changed");
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            assert_eq!(argv, original, "argv changed on error");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    match sel % 4 {
        0 => check_file(body, "f.xml"),
        1 => check_file(body, "f.toml"),
        2 => check_file(body, "f.conf"),
        _ => check_argv(body),
    }
    if let Ok(text) = std::str::from_utf8(body) {
        match uri::parse(text) {
            Ok(u) => assert_eq!(uri::parse(&uri::to_string(&u)).ok(), Some(u), "{text:?}"),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
});
