//! tshark, capturing on the destination interface (before the sink strips
//! the header), decodes our Destination Options header without errors.
//! libpcap's `udp` filter does not look past extension headers: capture
//! with `ip6` (here excluding ICMPv6 and hop-by-hop MLD by next-header byte).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::traffic::{udp_receiver, udp_send};
use common::*;

fn capture(mode: &str, fields: &[&str]) -> (Vec<String>, String) {
    let net = Net::new(Topology::Direct);
    let (source, sink, _records) = agents(&net, &settings(&["proto=udp", &format!("mode={mode}")]));
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("wire.pcap");
    let mut tshark = Command::new("ip")
        .args([
            "netns",
            "exec",
            &net.dst,
            "tshark",
            "-i",
            DST_IF,
            "-f",
            "ip6 and ip6[6] != 58 and ip6[6] != 0",
            "-c",
            "5",
            "-a",
            "duration:15",
            "-w",
        ])
        .arg(&pcap)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tshark (apt install tshark)");
    let mut err = BufReader::new(tshark.stderr.take().unwrap());
    let mut line = String::new();
    while err.read_line(&mut line).unwrap() > 0 && !line.contains("Capture started") {
        line.clear();
    }
    let rx = udp_receiver(&net.dst, 7600, Duration::from_millis(400));
    udp_send(
        &net.src,
        6600,
        DST_ADDR,
        7600,
        &[100; 5],
        Duration::from_millis(5),
    );
    assert_eq!(rx.join().unwrap().count, 5);
    assert!(tshark.wait().unwrap().success());
    drop((source, sink));
    let mut args = vec![
        "-r".to_owned(),
        pcap.display().to_string(),
        "-T".into(),
        "fields".into(),
    ];
    for f in fields {
        args.extend(["-e".to_owned(), (*f).to_owned()]);
    }
    let out = Command::new("tshark").args(&args).output().unwrap();
    let rows = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    let expert = Command::new("tshark")
        .args(["-r", &pcap.display().to_string(), "-q", "-z", "expert,warn"])
        .output()
        .unwrap();
    (rows, String::from_utf8_lossy(&expert.stdout).into_owned())
}

#[test]
fn tshark_decodes_the_combined_header() {
    if !require_root() {
        return;
    }
    let (rows, expert) = capture(
        "both",
        &[
            "ipv6.nxt",
            "ipv6.opt.type",
            "ipv6.opt.length",
            "udp.dstport",
        ],
    );
    assert_eq!(rows.len(), 5, "{rows:?}");
    for row in &rows {
        // Next header 60; options: loss (0x3e, 4 bytes), PadN (4), delay (0x1e, 16); UDP behind.
        assert_eq!(row, "60\t0x3e,0x01,0x1e\t4,4,16\t7600", "{rows:?}");
    }
    assert!(
        !expert.contains("Malformed") && !expert.contains("Error"),
        "{expert}"
    );
}

#[test]
fn tshark_decodes_pdm() {
    if !require_root() {
        return;
    }
    let (rows, expert) = capture(
        "pdm",
        &["ipv6.opt.type", "ipv6.opt.pdm.psn_this_pkt", "udp.dstport"],
    );
    let psns: Vec<&str> = rows.iter().map(|r| r.split('\t').nth(1).unwrap()).collect();
    assert_eq!(psns, ["0", "1", "2", "3", "4"], "{rows:?}");
    assert!(
        rows.iter()
            .all(|r| r.starts_with("0x0f,0x01\t") && r.ends_with("\t7600")),
        "{rows:?}"
    );
    assert!(
        !expert.contains("Malformed") && !expert.contains("Error"),
        "{expert}"
    );
}
