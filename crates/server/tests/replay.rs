//! Reference captures replayed over TCP: the stored tables must equal what
//! the reference server stored, except where the reference is wrong — and
//! exactly there, each difference asserted on its own.

mod common;

use common::reference::{alltypes_fixes, assert_matches, onemp_fixes, sqlite_u64, Fix};

async fn check(capture: (&str, &str), rows: (&str, &str), fixes: Vec<Fix>) {
    let t = common::start().await;
    common::replay_async(t.addr, common::vector(capture.0, capture.1)).await;
    t.server.shutdown().await;

    let expected = common::vector_json(rows.0, rows.1);
    let expected = expected["vecdomain"].as_object().unwrap().clone();
    let got = common::dump(&common::open_db(t.dir.path(), "vecdomain"));
    assert_matches(expected, &got, &fixes, |_, want| {
        want["column_types"].clone()
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alltypes_binary_matches_reference() {
    check(
        ("0001-ref-alltypes.bin", "ref-alltypes.bin"),
        ("0001-ref-alltypes.rows.json", "ref-alltypes.rows.json"),
        alltypes_fixes(sqlite_u64),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alltypes_text_matches_reference() {
    check(
        ("0001-ref-alltypes.txt", "ref-alltypes.txt"),
        (
            "0001-ref-alltypes.rows-text.json",
            "ref-alltypes.rows-text.json",
        ),
        alltypes_fixes(sqlite_u64),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn onemp_binary_matches_reference() {
    check(
        ("0002-ref-onemp.bin", "ref-onemp.bin"),
        ("0002-ref-onemp.rows.json", "ref-onemp.rows.json"),
        onemp_fixes(sqlite_u64),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn onemp_text_matches_reference() {
    check(
        ("0002-ref-onemp.txt", "ref-onemp.txt"),
        ("0002-ref-onemp.rows-text.json", "ref-onemp.rows-text.json"),
        onemp_fixes(sqlite_u64),
    )
    .await;
}
