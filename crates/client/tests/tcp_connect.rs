//! Connecting: names and IPv6 literals, and a server that is not there yet.

mod common;

use std::io::Read;
use std::net::TcpListener;
use std::time::Duration;

use client::spec::{Encoding, OverloadPolicy, Uri};
use client::Client;
use common::{decode, query_i64, spec, tcp, TestServer};
use omsp::{OmlType, Value, ValueRef};

fn session_from(listener: TcpListener, host: &str) -> Vec<u8> {
    let port = listener.local_addr().unwrap().port();
    let reader = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        out
    });
    let mut dest = tcp(
        listener_addr(port),
        Encoding::Text,
        OverloadPolicy::DropOldest,
        1 << 20,
    );
    dest.uri = Uri::Tcp {
        host: host.into(),
        port,
    };
    let client = Client::new(spec("app", vec![dest])).unwrap();
    let mp = client.add_mp("m", &[("x", OmlType::Int32)]).unwrap();
    client.start().unwrap();
    for i in 0..10 {
        mp.inject(&[ValueRef::Int32(i)]).unwrap();
    }
    client.close().unwrap();
    reader.join().unwrap()
}

fn listener_addr(port: u16) -> std::net::SocketAddr {
    std::net::SocketAddr::from(([127, 0, 0, 1], port))
}

#[test]
fn ipv6_literals_and_host_names_connect() {
    if let Ok(l) = TcpListener::bind("[::1]:0") {
        let d = decode(&session_from(l, "::1"));
        assert_eq!(d.stream(2).len(), 10);
    }
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let d = decode(&session_from(l, "localhost"));
    assert_eq!(d.stream(2).len(), 10);
    assert_eq!(d.stream(2)[9].values, [Value::Int32(9)]);
}

#[test]
fn a_server_that_starts_late_gets_everything() {
    let port = testkit::free_addr();
    let policy = OverloadPolicy::Block {
        stall_limit: Some(Duration::from_secs(5)),
    };
    let client = Client::new(spec(
        "app",
        vec![tcp(port, Encoding::Binary, policy, 16 << 20)],
    ))
    .unwrap();
    let mp = client.add_mp("m", &[("x", OmlType::Int32)]).unwrap();
    client.inject_metadata("note", "early").unwrap();
    client.start().unwrap();
    for i in 0..5000 {
        mp.inject(&[ValueRef::Int32(i)]).unwrap();
    }
    std::thread::sleep(Duration::from_millis(700));
    let srv = TestServer::start_on(port);
    client.close().unwrap();
    let st = client.stats();
    assert_eq!(st.destinations[0].source("m").written, 5000, "{st:?}");
    assert_eq!(st.destinations[0].connections, 1);
    let n = srv.wait_count(
        "dom",
        "SELECT count(*) FROM app_m",
        5000,
        Duration::from_secs(30),
    );
    assert_eq!(n, 5000);
    let db = srv.db("dom");
    assert_eq!(
        query_i64(
            &db,
            "SELECT count(*) FROM _experiment_metadata WHERE key = 'note'"
        ),
        1
    );
}
