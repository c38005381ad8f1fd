//! The live-data relay lets go of what the browser lets go of: a live
//! tail whose reader went away is closed on the collector within a few
//! seconds (the collector sends a heartbeat at least every second, and
//! the relay stops at the first one nobody reads).

mod common;

use std::time::{Duration, Instant};

use common::{collection_server, start_on, wait_for, Api, Backend, ADMIN_PW};
use serde_json::json;

/// How soon an abandoned tail must be gone upstream: a heartbeat to find
/// the browser gone, one to find the relay gone, and slack for a loaded
/// machine.
const CLOSED_WITHIN: Duration = Duration::from_secs(6);

crate::on_both_backends!(an_abandoned_tail_is_closed_upstream);

fn an_abandoned_tail_is_closed_upstream(b: Backend) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // One tail at a time: the next is refused until the collector has
    // closed the previous one.
    let srv = collection_server(&rt, dir.path(), |c| c.query_max_tails = 1);
    let (collect, http) = (srv.local_addrs()[0], srv.http_addr().unwrap());
    let t = start_on(b, |_| {});
    let admin = Api::login(&t.base, "admin", ADMIN_PW);
    let coll = admin.ok(
        "/api/v1/devices",
        json!({"name": "coll", "kind": "collector", "hostname": "127.0.0.1",
               "port": http.port()}),
    )["id"]
        .clone();
    let e = admin.ok(
        "/api/v1/experiments",
        json!({"name": "tails", "domain": "dom_t", "collector": coll}),
    )["id"]
        .as_i64()
        .unwrap();
    common::feed(collect, http, "dom_t", "t_m", "first_row");
    let tail = format!("/api/v1/experiments/{e}/query/streams/t_m/tail");

    let first = admin.open(&tail, &[]);
    assert_eq!(first.status().as_u16(), 200);
    let second = admin.open(&tail, &[]);
    assert_eq!(
        second.status().as_u16(),
        503,
        "the collector's cap holds while the first tail is open"
    );
    drop(second);

    // The browser goes away without a word.
    drop(first);
    let gone = Instant::now();
    wait_for("a tail accepted again", || {
        admin.open(&tail, &[]).status().as_u16() == 200
    });
    assert!(
        gone.elapsed() < CLOSED_WITHIN,
        "the abandoned tail held the collector for {:?}",
        gone.elapsed()
    );
    drop(t);
    drop(srv);
}
