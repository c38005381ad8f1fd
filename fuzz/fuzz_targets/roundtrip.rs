//! Structured: schemas and matching tuples built from the input, encoded in
//! text and binary, decoded (in chunks and at once) and compared.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| omsp_fuzz::check_roundtrip(data));
