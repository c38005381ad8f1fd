//! `_client_clock`: a client reports this host's clock state to a real
//! server, which stores it as a stream row and in `_streamgauge_clock`
//! beside its own estimate of the offset (≈ 0 here: one host, one clock).
//! File destinations never get the stream, and the indices of the
//! measurement points' streams stay those of liboml2.

mod common;

use std::process::Command;
use std::time::Duration;

use client::clocksync::{self, Source};
use client::spec::{Encoding, OverloadPolicy};
use client::Client;
use common::{decode, file, spec, tcp, TestServer};
use omsp::{OmlType, ValueRef};

#[test]
fn reports_reach_the_server_with_plausible_values() {
    let srv = TestServer::start();
    let mut s = spec(
        "app",
        vec![tcp(
            srv.addr,
            Encoding::Binary,
            OverloadPolicy::Block { stall_limit: None },
            1 << 20,
        )],
    );
    s.clock_interval = Some(Duration::from_secs(60));
    let client = Client::new(s).unwrap();
    let mp = client.add_mp("m", &[("i", OmlType::Int32)]).unwrap();
    client.start().unwrap();
    mp.inject(&[ValueRef::Int32(1)]).unwrap();
    client.close().unwrap();
    let st = client.stats();
    assert_eq!(st.destinations[0].source("_client_clock").written, 1);

    let n = srv.wait_count(
        "dom",
        "SELECT count(*) FROM _streamgauge_clock WHERE reported_at IS NOT NULL",
        1,
        Duration::from_secs(10),
    );
    assert_eq!(n, 1);
    let db = srv.db("dom");
    let (source, synced, maxerror, esterror): (String, i32, f64, f64) = db
        .query_row(
            "SELECT source, synchronized, maxerror, esterror FROM _client_clock",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    let here = clocksync::read().unwrap();
    assert_eq!(source, here.source.name());
    assert_eq!(synced, i32::from(here.synchronized));
    assert!(maxerror >= 0.0 && esterror >= 0.0, "{maxerror} {esterror}");
    if here.source != Source::None {
        // A synchronised kernel bounds its error (16 s is the kernel's cap).
        assert!(maxerror <= 16.0, "{maxerror}");
    }
    let (offset, stored_source): (f64, String) = db
        .query_row(
            "SELECT clock_offset, source FROM _streamgauge_clock",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(offset.abs() < 0.2, "same host, same clock: {offset}");
    // A lower bound: the delay is not subtracted (a few µs of slack for the
    // client's counter-based time base).
    assert!(offset <= 1e-3, "{offset}");
    assert_eq!(stored_source, source);
    // The stream's index comes after the MP's (2), so MP indices are liboml2's.
    let decl: String = db
        .query_row(
            "SELECT value FROM _experiment_metadata WHERE key = 'table__client_clock'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(decl.starts_with("3 _client_clock "), "{decl}");
    chrony_agrees(here.synchronized);
}

/// If chrony is installed and answers, its leap status agrees with the
/// kernel's synchronised flag (not required: most test hosts lack it).
fn chrony_agrees(synchronized: bool) {
    let Ok(out) = Command::new("chronyc").arg("tracking").output() else {
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !text.contains("Leap status") {
        return;
    }
    let normal = text
        .lines()
        .any(|l| l.starts_with("Leap status") && l.contains("Normal"));
    assert_eq!(normal, synchronized, "chronyc tracking:\n{text}");
}

#[test]
fn file_destinations_carry_no_clock_stream() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.txt");
    let mut s = spec("app", vec![file(&path, Encoding::Text)]);
    s.clock_interval = Some(Duration::from_secs(60));
    let client = Client::new(s).unwrap();
    let mp = client.add_mp("m", &[("i", OmlType::Int32)]).unwrap();
    client.start().unwrap();
    mp.inject(&[ValueRef::Int32(1)]).unwrap();
    client.close().unwrap();
    let d = decode(&std::fs::read(&path).unwrap());
    let names: Vec<&str> = d.schemas.iter().map(|s| s.name.as_str()).collect();
    assert!(!names.contains(&"_client_clock"), "{names:?}");
    assert!(d.stream(2).len() == 1, "the MP keeps index 2");
}
