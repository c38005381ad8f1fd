//! Helpers shared by the vector and reference tests.

use serde_json::Value as Json;

// Exact JSON: serde_json's default float parsing may be off by one ulp, so
// every number is kept as its text ({"#": "<token>"}) and parsed here with
// Rust's exact `str::parse`.

pub fn exact_json(text: &str) -> Json {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() * 2);
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            let start = i;
            i += 1;
            while b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str(&text[start..i]);
        } else if b[i] == b'-' || b[i].is_ascii_digit() {
            let start = i;
            while i < b.len() && matches!(b[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                i += 1;
            }
            out.push_str("{\"#\":\"");
            out.push_str(&text[start..i]);
            out.push_str("\"}");
        } else {
            out.push(char::from(b[i]));
            i += 1;
        }
    }
    serde_json::from_str(&out).expect("valid JSON")
}
