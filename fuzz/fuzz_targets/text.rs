//! Input: `[header selector, chunking control, body...]`. A fixed valid text
//! header, then the body, decoded in chunks; every decoded sample must
//! re-encode in text and decode back to the same values.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| omsp_fuzz::check_body(data, omsp::Content::Text));
