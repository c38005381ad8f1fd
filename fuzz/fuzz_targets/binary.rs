//! Input: `[header selector, chunking control, body...]`. A fixed valid binary
//! header, then the body, decoded in chunks; every decoded sample must
//! re-encode in binary and decode back to the same values (up to DOUBLE_T
//! quantisation of scalar doubles and timestamps).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| omsp_fuzz::check_body(data, omsp::Content::Binary));
