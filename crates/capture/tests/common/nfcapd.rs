//! nfdump's collector `nfcapd` on 127.0.0.1, killed on drop; `finish`
//! stops it and reads its totals with `nfdump -I`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `nfcapd` writing into its own directory.
pub struct Nfcapd {
    child: Child,
    /// Where it writes its files.
    dir: PathBuf,
    /// Its UDP port on 127.0.0.1.
    pub port: u16,
}

/// Totals of `nfdump -I`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NfdumpStats {
    /// Flow records.
    pub flows: u64,
    /// Packets.
    pub packets: u64,
    /// Bytes.
    pub bytes: u64,
    /// Sequence failures seen by the collector.
    pub sequence_failures: u64,
}

impl Nfcapd {
    /// Starts `nfcapd` in `dir/flows` on a free port and waits until it listens.
    pub fn start(dir: &Path) -> Nfcapd {
        let port = testkit::free_port();
        let dir = dir.join("flows");
        std::fs::create_dir_all(&dir).unwrap();
        let child = Command::new("nfcapd")
            .args([
                "-b",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-t",
                "3600",
                "-w",
            ])
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "nfcapd did not bind 127.0.0.1:{port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Nfcapd { child, dir, port }
    }

    /// Sends every message of an IPFIX file (RFC 5655) as one datagram.
    pub fn replay(&self, ipfix: &[u8]) {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut at = 0;
        while at + 4 <= ipfix.len() {
            let len = usize::from(u16::from_be_bytes([ipfix[at + 2], ipfix[at + 3]]));
            assert!(len >= 16 && at + len <= ipfix.len(), "bad message at {at}");
            s.send_to(&ipfix[at..at + len], ("127.0.0.1", self.port))
                .unwrap();
            at += len;
            // nfcapd reads one socket; a short pause keeps its buffer from overflowing.
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(at, ipfix.len());
    }

    /// Stops the collector (its file is written at exit) and returns `nfdump -I`.
    pub fn finish(mut self) -> NfdumpStats {
        // Let the last datagrams reach it before it exits.
        std::thread::sleep(Duration::from_millis(300));
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        let _ = self.child.wait();
        let stat = super::run("nfdump", &["-R", self.dir.to_str().unwrap(), "-I"]);
        let field = |name: &str| -> u64 {
            stat.lines()
                .find(|l| l.trim_start().starts_with(name))
                .and_then(|l| l.split(':').nth(1))
                .map(|v| v.trim().parse().unwrap())
                .unwrap_or_else(|| panic!("{name} not in nfdump -I output:\n{stat}"))
        };
        NfdumpStats {
            flows: field("Flows"),
            packets: field("Packets"),
            bytes: field("Bytes"),
            sequence_failures: field("Sequence failures"),
        }
    }
}

impl Drop for Nfcapd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
