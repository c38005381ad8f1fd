//! `Header::parse` and the decoder fed only header bytes: no panic, the same
//! verdict from both, and a parsed header writes back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| omsp_fuzz::check_header(data));
