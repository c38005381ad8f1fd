//! Input bounds of `rows` requests: too many columns,
//! conditions or senders, and instants outside the years 1970–9999 or with
//! an impossible UTC offset, are refused with a 400 naming the parameter,
//! before any SQL runs; the largest allowed request still answers.

mod common;

use common::*;
use query::request::{MAX_FIELDS, MAX_PREDICATES, MAX_SENDERS};
use serde_json::Value;

const ROWS: &str = "/api/v1/domains/lab1/streams/m_all/rows";

/// `n` copies of `item`, comma-separated.
fn list(item: &str, n: usize) -> String {
    vec![item; n].join(",")
}

/// Asserts a 400 `bad_parameter` naming `param`, whose message contains `says`.
fn assert_refused(srv: &Server, query: &str, param: &str, says: &str) {
    let (s, v) = srv.json(&format!("{ROWS}?{query}"));
    // Queries and answers run to megabytes: a failure shows their start.
    let short: String = query.chars().take(80).collect();
    let body: String = v.to_string().chars().take(300).collect();
    assert_eq!(s, 400, "{short}: {body}");
    assert_eq!(v["error"]["code"], "bad_parameter", "{short}: {body}");
    assert_eq!(v["error"]["details"]["parameter"], param, "{short}: {body}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(says),
        "{short}: {message:?} lacks {says:?}"
    );
}

fn rows(srv: &Server, query: &str) -> Vec<Value> {
    let (s, v) = srv.json(&format!("{ROWS}?{query}"));
    assert_eq!(s, 200, "{query}: {v}");
    v["rows"].as_array().cloned().unwrap_or_default()
}

#[test]
fn fields_are_capped_with_a_clear_error() {
    let (dir, _db) = sqlite("lab1");
    let srv = Server::start(sqlite_state(dir.path()));
    let full = rows(&srv, &format!("fields={}&limit=1", list("i32", MAX_FIELDS)));
    assert_eq!(full[0].as_array().map(Vec::len), Some(MAX_FIELDS));
    // 2001 columns used to be a 500 (SQLite's limit), 5000 a 200 cut off.
    for n in [MAX_FIELDS + 1, 2001, 5000] {
        assert_refused(
            &srv,
            &format!("fields={}", list("i32", n)),
            "fields",
            &format!("{n} fields requested, at most {MAX_FIELDS}"),
        );
    }
}

#[test]
fn conditions_and_senders_are_capped() {
    let (dir, _db) = sqlite("lab1");
    let srv = Server::start(sqlite_state(dir.path()));
    let most = format!(
        "where={}&sender={}",
        list("i32>-5", MAX_PREDICATES),
        list("node-a", MAX_SENDERS)
    );
    assert!(!rows(&srv, &most).is_empty());
    assert_refused(
        &srv,
        &format!("where={}", list("i32>-5", MAX_PREDICATES + 1)),
        "where",
        &format!("more than {MAX_PREDICATES} conditions"),
    );
    assert_refused(
        &srv,
        &format!("sender={}", list("node-a", MAX_SENDERS + 1)),
        "sender",
        &format!("more than {MAX_SENDERS} senders"),
    );
}

#[test]
fn instants_outside_the_years_and_offsets_are_refused() {
    let (dir, _db) = sqlite("lab1");
    let srv = Server::start(sqlite_state(dir.path()));
    for (query, param, says) in [
        (
            "from=9223372036854775807-01-01T00:00:00Z",
            "from",
            "year 9223372036854775807 is outside 1970-9999",
        ),
        ("to=10000-01-01", "to", "year 10000"),
        ("from=1969-12-31T23:59:59Z", "from", "year 1969"),
        (
            "from=2026-11-22T00:00:00-99:99",
            "from",
            "UTC offset -99:99",
        ),
        ("to=2026-11-22T00:00:00%2B14:30", "to", "UTC offset +14:30"),
        ("from=1e300", "from", "outside the years"),
        ("from=2026-02-30", "from", "ISO 8601"),
    ] {
        assert_refused(&srv, query, param, says);
    }
    // The edges themselves are instants like any other.
    assert_eq!(
        rows(&srv, "from=1970-01-01T00:00:00Z&to=9999-12-31T23:59:59Z").len(),
        ALL_ROWS as usize
    );
    assert_eq!(
        rows(&srv, "from=2026-11-22T00:00:00%2B14:00").len(),
        ALL_ROWS as usize
    );
}
