//! `streamgauge capture --read`: two sessions over a pcap file this test
//! writes; the summary's counters and the output files (read by tshark).

use std::path::Path;
use std::process::Command;

/// Ethernet + IPv4 + UDP (checksum 0: none) to `dport` with `payload`.
fn udp_frame(dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    let total = (20 + 8 + payload.len()) as u16;
    let mut ip = vec![
        0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    let mut sum: u32 = ip
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&40000u16.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}

/// A classic pcap file (microseconds, Ethernet).
fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut b = Vec::new();
    b.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&4u16.to_le_bytes());
    b.extend_from_slice(&[0; 8]);
    b.extend_from_slice(&65535u32.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    for (i, f) in frames.iter().enumerate() {
        b.extend_from_slice(&(1_700_000_000u32 + i as u32).to_le_bytes());
        b.extend_from_slice(&(i as u32 * 1000).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(f);
    }
    std::fs::write(path, b).unwrap();
}

fn have(tool: &str) -> bool {
    testkit::have_tool(tool, &["--version"], "apt install tshark")
}

#[test]
fn offline_sessions_over_a_pcap_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.pcap");
    let mut frames = Vec::new();
    for i in 0..30u16 {
        let port = if i % 3 == 0 { 53 } else { 80 };
        frames.push(udp_frame(port, &[i as u8; 100]));
    }
    write_pcap(&input, &frames);
    let dns = dir.path().join("dns.json");
    std::fs::write(
        &dns,
        r#"{"name":"dns","filter":"udp port 53","outputs":[{"type":"pcap"}]}"#,
    )
    .unwrap();
    let web = dir.path().join("web.toml");
    std::fs::write(
        &web,
        "name = \"web\"\nfilter = \"udp port 80\"\nheader_only = true\nsampling = { mode = \"one_in_n\", n = 2 }\n[[outputs]]\ntype = \"pcapng\"\n",
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .args(["capture", "--read"])
        .arg(&input)
        .arg("--session")
        .arg(&dns)
        .arg("--session")
        .arg(&web)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("30 packets"), "{stdout}");
    assert!(
        stdout.contains("session dns: matched 10 sampled_out 0 stored 10"),
        "{stdout}"
    );
    assert!(
        stdout.contains("session web: matched 20 sampled_out 10 stored 10"),
        "{stdout}"
    );
    let files = |s: &str, ext: &str| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(out_dir.join(s))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .collect()
    };
    let (p, n) = (files("dns", "pcap"), files("web", "pcapng"));
    assert_eq!((p.len(), n.len()), (1, 1));
    if have("tshark") {
        for (f, want, ports) in [(&p[0], 10, "53"), (&n[0], 10, "80")] {
            let o = Command::new("tshark")
                .arg("-r")
                .arg(f)
                .args(["-T", "fields", "-e", "udp.dstport"])
                .output()
                .unwrap();
            assert!(o.status.success());
            let text = String::from_utf8(o.stdout).unwrap();
            assert_eq!(text.lines().count(), want, "{text}");
            assert!(text.lines().all(|l| l == ports), "{text}");
        }
    }
    // A bad session file is a usage error (2), with the file named.
    std::fs::write(&dns, r#"{"name":"dns","bogus":1}"#).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .args(["capture", "--read"])
        .arg(&input)
        .arg("--session")
        .arg(&dns)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("dns.json"));
}
