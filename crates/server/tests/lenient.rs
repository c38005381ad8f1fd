//! Data of stock clients is never dropped for how the reference reads text
//! values: booleans other than prefixes of true/false, and
//! values cut at a NUL byte, are stored as the reference stores them.

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lenient_text_values_are_stored_as_the_reference_stores_them() {
    let t = common::start().await;
    common::replay_async(t.addr, common::vector("0040-txt-lenient-reads.txt", "-")).await;
    t.server.shutdown().await;
    let db = common::open_db(t.dir.path(), "vectors");
    let rows: Vec<(i64, f64, i64, Vec<u8>)> = db
        .prepare("SELECT oml_seq, d, b, CAST(s AS BLOB) FROM gen_lenient ORDER BY oml_seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        rows,
        vec![
            (1, -41.56221, 1, b"ab\0c".to_vec()),
            (2, 3.5, 1, b"plain".to_vec()),
            (3, 0.25, 1, Vec::new()),
        ],
        "every row kept, values as the reference reads them"
    );
}
