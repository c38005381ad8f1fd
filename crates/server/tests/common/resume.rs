//! A minimal resumable sender (spec §3.6) for the tests: header keys, the
//! resume line, acknowledgements.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

pub const SCHEMA: &str = "1 t_m i:int32 s:string";

pub fn header_for(domain: &str, session: &str, offset: u64) -> String {
    super::text_header(domain, "n1", 1_700_000_000, &[SCHEMA]).replace(
        "content: text\n",
        &format!(
            "x-streamgauge-session: {session}\nx-streamgauge-offset: {offset}\n\
             x-streamgauge-backchannel: 1\ncontent: text\n"
        ),
    )
}

/// Tuples `from..to` as text lines (seq = i).
pub fn tuples(from: i64, to: i64) -> Vec<u8> {
    (from..to)
        .flat_map(|i| format!("0.5\t1\t{i}\t{i}\tvalue {i}\n").into_bytes())
        .collect()
}

/// Connects, sends the header, and returns the socket and the resume offset.
pub fn open_for(
    addr: SocketAddr,
    domain: &str,
    session: &str,
    offset: u64,
) -> (TcpStream, BufReader<TcpStream>, u64) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(header_for(domain, session, offset).as_bytes())
        .unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let resume = line
        .strip_prefix("streamgauge-resume ")
        .unwrap_or_else(|| panic!("want a resume line, got {line:?}"))
        .trim()
        .parse()
        .unwrap();
    (s, r, resume)
}

/// Reads ack lines until one reaches `want`; returns the last ack.
pub fn ack_until(r: &mut BufReader<TcpStream>, want: u64) -> u64 {
    let mut last = 0;
    while last < want {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap() == 0 {
            break;
        }
        last = line
            .strip_prefix("streamgauge-ack ")
            .unwrap_or_else(|| panic!("want an ack line, got {line:?}"))
            .trim()
            .parse()
            .unwrap();
    }
    last
}

/// [`header_for`] in the domain `resume`.
pub fn header(session: &str, offset: u64) -> String {
    header_for("resume", session, offset)
}

/// [`open_for`] in the domain `resume`.
pub fn open(
    addr: SocketAddr,
    session: &str,
    offset: u64,
) -> (TcpStream, BufReader<TcpStream>, u64) {
    open_for(addr, "resume", session, offset)
}
