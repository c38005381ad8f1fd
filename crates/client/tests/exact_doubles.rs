//! Exact doubles (spec/omsp.md §3.8) from our client, in binary mode:
//!
//! - into our server, by default, every double is stored as injected
//!   (1e300, −2.5e−308, 0.1, subnormals, ±Inf; the sign of zero is lost by
//!   SQLite itself, which stores a REAL −0.0 as the integer 0, so it is
//!   checked on the wire below);
//! - a receiver that confirms gets DOUBLE64_T, bit for bit (−0 and NaN
//!   included); one that never answers (a stock server) gets the bytes of
//!   the reference encoding, after a wait of at most one second; one that
//!   confirms late gets a stream that switches, which decodes as written;
//! - `reference_doubles` (`--oml-exact-doubles off`) sends no offer at all.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use client::spec::{Backchannel, Encoding, OverloadPolicy};
use client::Client;
use common::{spec, tcp, TestServer};
use omsp::binary::codes::{DOUBLE64_T, DOUBLE_NAN, DOUBLE_T};
use omsp::{Decoder, Event, OmlType, Value, ValueRef};

/// Doubles the reference's 30-bit encoding loses or turns into NaN.
const HARD: [f64; 12] = [
    1e300,
    -2.5e-308,
    0.1,
    5e-324,                                // smallest subnormal
    -4.9e-310,                             // a negative subnormal
    f64::from_bits(0x000f_ffff_ffff_ffff), // largest subnormal
    std::f64::consts::PI,
    f64::MIN,
    1.0 / 3.0,
    123_456_789.125_1,
    f64::INFINITY,
    f64::NEG_INFINITY,
];

/// A started binary client of `addr` with one MP `m` (`v: double`),
/// `backchannel` as given.
fn binary_client(
    addr: SocketAddr,
    reference_doubles: bool,
    backchannel: Backchannel,
) -> (Client, client::Mp) {
    let mut d = tcp(
        addr,
        Encoding::Binary,
        OverloadPolicy::Block { stall_limit: None },
        1 << 20,
    );
    d.backchannel = backchannel;
    let mut s = spec("app", vec![d]);
    s.reference_doubles = reference_doubles;
    s.instr_interval = None;
    let c = Client::new(s).unwrap();
    let mp = c.add_mp("m", &[("v", OmlType::Double)]).unwrap();
    c.start().unwrap();
    (c, mp)
}

/// Sends `values` (one row each) from a binary client to `addr`.
fn send(addr: SocketAddr, values: &[f64], reference_doubles: bool) {
    let (c, mp) = binary_client(addr, reference_doubles, Backchannel::Off);
    for &v in values {
        mp.inject(&[ValueRef::Double(v)]).unwrap();
    }
    c.close().unwrap();
}

/// The values of `app_m`, in order.
fn stored(srv: &TestServer) -> Vec<f64> {
    srv.db("dom")
        .prepare("SELECT v FROM app_m ORDER BY oml_seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn our_server_stores_every_double_exactly_by_default() {
    let srv = TestServer::start();
    let mut values = HARD.to_vec();
    values.extend([0.0, -0.0]);
    send(srv.addr, &values, false);
    let n = srv.wait_count(
        "dom",
        "SELECT count(*) FROM app_m",
        values.len() as i64,
        Duration::from_secs(10),
    );
    assert_eq!(n, values.len() as i64);
    let stored = stored(&srv);
    for (want, got) in values.iter().zip(&stored) {
        if *want == 0.0 {
            // SQLite keeps the value, not the sign of zero.
            assert_eq!(*got, 0.0);
        } else {
            assert_eq!(want.to_bits(), got.to_bits(), "{want:e} stored as {got:e}");
        }
    }
}

/// A receiver that reads the header, confirms exact doubles after
/// `confirm_after` if they were offered (never if `None`), and returns
/// every byte it got.
fn receiver(listener: TcpListener, confirm_after: Option<Duration>) -> Vec<u8> {
    let (mut s, _) = listener.accept().unwrap();
    let mut got = Vec::new();
    let mut b = [0u8; 4096];
    while !got.windows(2).any(|w| w == b"\n\n") {
        let n = s.read(&mut b).unwrap();
        assert!(n > 0, "closed inside the header");
        got.extend_from_slice(&b[..n]);
    }
    // As a streamgauge receiver: only an offer is confirmed.
    let offered = String::from_utf8_lossy(&got).contains("x-streamgauge-doubles: double64\n");
    if let Some(after) = confirm_after.filter(|_| offered) {
        let mut w = s.try_clone().unwrap();
        std::thread::spawn(move || {
            std::thread::sleep(after);
            let _ = w.write_all(omsp::exact_doubles::CONFIRMATION.as_bytes());
        });
    }
    s.read_to_end(&mut got).unwrap();
    got
}

/// Decodes a session: its header's extension keys, and per row of stream
/// `app_m` the value and the type code it travelled with.
/// A header's extension keys.
type Keys = Vec<(String, String)>;

fn rows(bytes: &[u8]) -> (Keys, Vec<(f64, u8)>) {
    let mut extra = Vec::new();
    let mut index = None;
    let mut out = Vec::new();
    let mut values = Vec::new();
    for e in Decoder::decode_all(bytes) {
        match e.unwrap() {
            Event::Header(h) => {
                extra = h.extra.clone();
                index = h
                    .schemas
                    .iter()
                    .find(|s| s.name == "app_m")
                    .map(|s| s.index);
            }
            Event::Sample(s) if Some(s.stream) == index => match s.values[0] {
                Value::Double(v) => values.push(v),
                ref v => panic!("not a double: {v:?}"),
            },
            _ => {}
        }
    }
    // The type code each `app_m` value travelled with.
    let mut at = bytes
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|p| p + 2)
        .unwrap();
    while at + 5 <= bytes.len() {
        let (head, len) = match bytes[at + 2] {
            1 => (
                5,
                u16::from_be_bytes([bytes[at + 3], bytes[at + 4]]) as usize,
            ),
            _ => (
                7,
                u32::from_be_bytes(bytes[at + 3..at + 7].try_into().unwrap()) as usize,
            ),
        };
        let body = &bytes[at + head..at + head + len];
        if Some(body[1] as u32) == index {
            // num-meas, index, seq (5 bytes), timestamp, then the value.
            let ts_len = if body[7] == DOUBLE64_T { 9 } else { 6 };
            let code = body[7 + ts_len];
            out.push((values[out.len()], code));
        }
        at += head + len;
    }
    assert_eq!(out.len(), values.len());
    (extra, out)
}

fn offer() -> (String, String) {
    (
        omsp::exact_doubles::KEY.to_owned(),
        omsp::exact_doubles::OFFER.to_owned(),
    )
}

#[test]
fn a_confirming_receiver_gets_every_bit() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let r = std::thread::spawn(move || receiver(listener, Some(Duration::ZERO)));
    let mut values = HARD.to_vec();
    values.extend([0.0, -0.0, f64::from_bits(0x7ff8_0000_0000_0123)]);
    send(addr, &values, false);
    let (extra, got) = rows(&r.join().unwrap());
    assert!(extra.contains(&offer()));
    for (want, (v, code)) in values.iter().zip(got) {
        assert_eq!(code, DOUBLE64_T);
        assert_eq!(want.to_bits(), v.to_bits(), "{want:e}");
    }
}

#[test]
fn a_silent_receiver_gets_the_reference_encoding_after_a_bounded_wait() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let r = std::thread::spawn(move || receiver(listener, None));
    let t0 = Instant::now();
    send(addr, &HARD, false);
    let took = t0.elapsed();
    let (extra, got) = rows(&r.join().unwrap());
    assert!(extra.contains(&offer()), "the offer is made");
    for (want, (v, code)) in HARD.iter().zip(got) {
        let reference = match omsp::binary::double::encode(*want) {
            Some((m, x)) => {
                assert_eq!(code, DOUBLE_T);
                omsp::binary::double::decode(m, x)
            }
            None => {
                assert_eq!(code, DOUBLE_NAN);
                f64::NAN
            }
        };
        assert_eq!(reference.to_bits(), v.to_bits(), "{want:e}");
    }
    assert!(took < Duration::from_secs(4), "closing took {took:?}");
}

#[test]
fn a_late_confirmation_switches_the_rest_of_the_stream() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let r = std::thread::spawn(move || receiver(listener, Some(Duration::from_millis(1500))));
    let (c, mp) = binary_client(addr, false, Backchannel::Off);
    let t0 = Instant::now();
    let mut sent = Vec::new();
    while t0.elapsed() < Duration::from_secs(3) {
        let v = 0.1 * sent.len() as f64 + 1e-12;
        mp.inject(&[ValueRef::Double(v)]).unwrap();
        sent.push(v);
        std::thread::sleep(Duration::from_millis(20));
    }
    c.close().unwrap();
    let (_, got) = rows(&r.join().unwrap());
    assert_eq!(got.len(), sent.len());
    let first_exact = got.iter().position(|(_, c)| *c == DOUBLE64_T).unwrap();
    assert!(
        first_exact > 0,
        "the first rows went before the confirmation"
    );
    for (i, (want, (v, code))) in sent.iter().zip(&got).enumerate() {
        if i < first_exact {
            assert_eq!(*code, DOUBLE_T);
            let (m, x) = omsp::binary::double::encode(*want).unwrap();
            assert_eq!(omsp::binary::double::decode(m, x), *v);
        } else {
            assert_eq!(*code, DOUBLE64_T, "row {i}: no way back");
            assert_eq!(want.to_bits(), v.to_bits());
        }
    }
}

#[test]
fn switched_off_there_is_no_offer_and_no_wait() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let r = std::thread::spawn(move || receiver(listener, Some(Duration::ZERO)));
    send(addr, &HARD, true);
    let (extra, got) = rows(&r.join().unwrap());
    assert!(!extra.iter().any(|(k, _)| k == omsp::exact_doubles::KEY));
    assert!(got.iter().all(|(_, c)| *c == DOUBLE_T || *c == DOUBLE_NAN));
}

/// Exact doubles ride along with a resumable session: the confirmation
/// follows the resume line.
#[test]
fn a_resumable_session_to_our_server_is_exact_too() {
    let srv = TestServer::start();
    let (c, mp) = binary_client(srv.addr, false, Backchannel::Resume);
    for &v in &HARD {
        mp.inject(&[ValueRef::Double(v)]).unwrap();
    }
    c.close().unwrap();
    let stored = stored(&srv);
    assert_eq!(stored.len(), HARD.len());
    for (want, got) in HARD.iter().zip(&stored) {
        assert_eq!(want.to_bits(), got.to_bits(), "{want:e} stored as {got:e}");
    }
}
