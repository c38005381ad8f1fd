//! The live `any` source, as root, in two network namespaces this test
//! creates (and deletes, even when it fails): A holds `lo` and one end of
//! a veth pair whose other end is in B. The daemon captures on `any` in A
//! while UDP datagrams and pings cross the veth and `lo`, and
//! `tcpdump -i any` records the same namespace at the same time.
//!
//! Checked: the files are LINUX_SLL2 (276) and tshark finds in every
//! packet the interface index, hardware type and packet type the kernel
//! gave it; the packets equal tcpdump's one for one (`lo` traffic once);
//! a `udp` session keeps exactly the datagrams, cut to their headers, and
//! its IPFIX flows count them; an anonymising session with field
//! selection keeps valid checksums; the API answers the link type.

mod common;

use capture::daemon::ctl::CtlClient;
use capture::daemon::{Daemon, DaemonConfig};
use capture::{CryptoPan, Key};
use common::daemon_proc::wait_for;
use common::netns::{in_netns, ip, netns_run, root_or_skip, veth, wait_reachable, Netns};
use common::{have, run, tshark, VECTOR_KEY};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Datagrams over the veth pair (A to B) and over `lo` (in A).
const UDP_VETH: usize = 5;
const UDP_LO: usize = 4;
/// Pings over the veth pair and over `lo`.
const PING_VETH: usize = 3;
const PING_LO: usize = 2;
/// `sll_pkttype` of a packet to this host, and of one it sends.
const HOST: &str = "0";
const OUTGOING: &str = "4";

/// `tcpdump -i any -w FILE` in a namespace, stopped by SIGTERM (the file
/// complete) or, if the test fails first, killed by the drop.
struct Tcpdump {
    /// The process (`ip netns exec` execs tcpdump: the same pid).
    child: Child,
    /// Its standard error after the listening line: read all along, so
    /// its last words at exit (the kernel's drop count) find an open pipe.
    stderr: Option<std::thread::JoinHandle<Vec<String>>>,
}

impl Tcpdump {
    /// Starts it and waits until it listens; returns its listening line.
    fn start(ns: &str, out: &Path) -> (Tcpdump, String) {
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns, "tcpdump", "-Z", "root"])
            // With the default 2 MiB buffer, in immediate mode, tcpdump
            // lost 4-5 of these 27 packets to kernel drops (bursts on lo).
            .args("--immediate-mode -B 32768 -U -n -i any -w".split(' '))
            .arg(out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut me = Tcpdump {
            child,
            stderr: None,
        };
        let listening = lines
            .by_ref()
            .map_while(Result::ok)
            .find(|l| l.contains("listening"))
            .expect("tcpdump did not start");
        me.stderr = Some(std::thread::spawn(move || {
            lines.map_while(Result::ok).collect()
        }));
        (me, listening)
    }

    /// SIGTERM, then waits for it to write its file and exit; returns
    /// what it said at exit.
    fn stop(mut self) -> Vec<String> {
        run("kill", &["-TERM", &self.child.id().to_string()]);
        self.child.wait().unwrap();
        self.stderr.take().unwrap().join().unwrap()
    }
}

impl Drop for Tcpdump {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Link header and addresses of every packet: interface index, hardware
/// type, packet type, IP protocol, source, destination.
const PACKET_FIELDS: [&str; 6] = [
    "sll.ifindex",
    "sll.hatype",
    "sll.pkttype",
    "ip.proto",
    "ip.src",
    "ip.dst",
];

/// The files of session `id` with extension `ext`, by name.
fn files(data: &Path, id: &str, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(data.join(id))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

/// The one pcap file of session `id`, checked to say LINUX_SLL2 in its
/// header and in its metadata.
fn sll2_file(data: &Path, id: &str) -> PathBuf {
    let f = files(data, id, "pcap");
    assert_eq!(f.len(), 1, "{id}: {f:?}");
    let bytes = std::fs::read(&f[0]).unwrap();
    assert_eq!(
        u32::from_le_bytes(bytes[20..24].try_into().unwrap()),
        276,
        "{id}: LINKTYPE_LINUX_SLL2"
    );
    let md: Value =
        serde_json::from_slice(&std::fs::read(f[0].with_extension("pcap.json")).unwrap()).unwrap();
    assert_eq!(md["linktype"], 276, "{id}: metadata");
    assert_eq!(md["source"], "any");
    f[0].clone()
}

/// Sorted rows, to compare captures as multisets.
fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn any_captures_every_interface_once_with_cooked_v2_headers() {
    if !root_or_skip("capture on any")
        || !have("ip")
        || !have("tcpdump")
        || !have("tshark")
        || !have("ping")
        || !have("ethtool")
        || !have("sysctl")
    {
        return;
    }
    let pid = std::process::id();
    let (a, b) = (format!("sganyA{pid}"), format!("sganyB{pid}"));
    let _guard = Netns::add(&[&a, &b]);
    // Nothing but the test's packets: no IPv6 (router solicitations,
    // MLD) and no ARP (fixed addresses, permanent neighbours).
    for ns in [&a, &b] {
        netns_run(
            ns,
            &[
                "sysctl",
                "-qw",
                "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1",
            ],
        );
    }
    veth(&a, &b, "va", "vb", "10.97.0");
    ip(&["-n", &a, "link", "set", "lo", "up"]);
    let (mac_a, mac_b) = ("02:00:00:00:97:01", "02:00:00:00:97:02");
    ip(&["-n", &a, "link", "set", "va", "address", mac_a]);
    ip(&["-n", &b, "link", "set", "vb", "address", mac_b]);
    for (ns, to, mac, dev) in [
        (&a, "10.97.0.2", mac_b, "va"),
        (&b, "10.97.0.1", mac_a, "vb"),
    ] {
        let neigh = format!("-n {ns} neigh replace {to} lladdr {mac} dev {dev} nud permanent");
        ip(&neigh.split(' ').collect::<Vec<_>>());
    }
    // Checksums computed in software on the veth (loopback cannot), so
    // the captures hold real ones to check after anonymisation.
    netns_run(&a, &["ethtool", "-K", "va", "tx", "off"]);
    netns_run(&b, &["ethtool", "-K", "vb", "tx", "off"]);
    wait_reachable(&a, "10.97.0.2");
    // Interface indexes in A: `ip -o link` lines start "INDEX: NAME".
    let index = |name: &str| {
        let line = run("ip", &["-n", &a, "-o", "link", "show", name]);
        let (i, _) = line.split_once(':').unwrap();
        i.trim().parse::<u32>().unwrap().to_string()
    };
    let (va, lo) = (index("va"), index("lo"));

    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let key = dir.path().join("site.key");
    std::fs::write(&key, VECTOR_KEY).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut cfg = DaemonConfig::new(&["any"], &data);
    cfg.listen = "127.0.0.1:0".parse().unwrap();
    cfg.plain_http = true;
    cfg.netns = Some(a.clone());
    cfg.keys.insert("site".into(), key.clone());
    let token_file = cfg.effective_token_file();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let daemon = rt.block_on(Daemon::start(cfg)).unwrap();
    let token = httpkit::token_init::own_token(&token_file).unwrap();
    let c = CtlClient::new(&daemon.local_addr().to_string(), token);
    let get = |path: &str| -> Value { serde_json::from_str(&c.get(path).unwrap()).unwrap() };

    let theirs = dir.path().join("tcpdump.pcap");
    let (tcpdump, listening) = Tcpdump::start(&a, &theirs);
    assert!(listening.contains("LINUX_SLL2"), "{listening}");
    let sessions = [
        r#"{"name":"all","interface":"any","outputs":[{"type":"pcap"}]}"#,
        r#"{"name":"u","interface":"any","filter":"udp","header_only":true,
            "outputs":[{"type":"pcap"},
                       {"type":"ipfix","target":{"transport":"file","path":"flows.ipfix"}}]}"#,
        r#"{"name":"an","interface":"any","filter":"udp or icmp",
            "anonymization":{"key":"site"},
            "fields":["ip.src","ip.dst","ip.proto","ip.len","udp.len","icmp.type","checksums"],
            "outputs":[{"type":"pcap"}]}"#,
        r#"{"name":"s","interface":"any","snaplen":30,"outputs":[{"type":"pcap"}]}"#,
    ];
    for s in sessions {
        c.post("/api/v1/sessions?experiment=lab", s).unwrap();
    }
    // (e) Before the start the source is not open: no link type yet.
    assert_eq!(get("/api/v1/sessions/all")["link_type"], Value::Null);
    const IDS: [&str; 4] = ["all", "u", "an", "s"];
    for id in IDS {
        c.post(&format!("/api/v1/sessions/{id}/start"), "{}")
            .unwrap();
    }

    // The traffic: datagrams to listening sockets, then pings.
    let to_b = in_netns(&b, || UdpSocket::bind("10.97.0.2:9001").unwrap());
    let to_lo = in_netns(&a, || UdpSocket::bind("127.0.0.1:9002").unwrap());
    in_netns(&a, || {
        let s = UdpSocket::bind("10.97.0.1:0").unwrap();
        for i in 0..UDP_VETH {
            s.send_to(&[i as u8; 32], "10.97.0.2:9001").unwrap();
        }
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        for i in 0..UDP_LO {
            s.send_to(&[i as u8; 24], "127.0.0.1:9002").unwrap();
        }
    });
    for (rx, n) in [(&to_b, UDP_VETH), (&to_lo, UDP_LO)] {
        rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        for _ in 0..n {
            rx.recv(&mut [0u8; 64]).unwrap();
        }
    }
    for (to, n) in [("10.97.0.2", PING_VETH), ("127.0.0.1", PING_LO)] {
        netns_run(&a, &["ping", "-c", &n.to_string(), "-i", "0.05", "-q", to]);
    }
    let udp = UDP_VETH + UDP_LO;
    // Pings on the veth: request out, reply in; on lo each kept once.
    let total = udp + 2 * PING_VETH + 2 * PING_LO;
    let stored =
        |id: &str| get(&format!("/api/v1/sessions/{id}/status"))["counters"]["stored"].as_u64();
    wait_for("every packet stored", 10, || {
        stored("all") == Some(total as u64) && stored("an") == Some(total as u64)
    });
    // A packet too many would arrive within this pause.
    std::thread::sleep(Duration::from_millis(300));

    // (e) The API answers the link type: list, session, status, capabilities.
    let sll2 = serde_json::json!({"name": "LINUX_SLL2", "number": 276});
    assert_eq!(get("/api/v1/sessions/u")["link_type"], sll2);
    assert_eq!(get("/api/v1/sessions/u/status")["link_type"], sll2);
    let list = get("/api/v1/sessions");
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .all(|s| s["link_type"] == sll2),
        "{list}"
    );
    let caps = get("/api/v1/capabilities");
    assert_eq!(caps["interfaces"][0]["name"], "any");
    assert_eq!(caps["interfaces"][0]["link_type"], sll2);
    let features = caps["features"].as_array().unwrap();
    assert!(features.contains(&Value::from("interface_any")), "{caps}");
    let doc = get("/api/v1/openapi.json");
    assert_eq!(
        doc["components"]["schemas"]["LinkTypeView"]["properties"]["number"]["type"], "integer",
        "{}",
        doc["components"]["schemas"]
    );
    assert!(doc["components"]["schemas"]["SessionView"]["properties"]["link_type"].is_object());

    let mut finals = BTreeMap::new();
    for id in IDS {
        let st: Value = serde_json::from_str(
            &c.post(&format!("/api/v1/sessions/{id}/stop"), "{}")
                .unwrap(),
        )
        .unwrap();
        assert_eq!(st["state"], "stopped", "{st}");
        assert_eq!(st["link_type"], sll2, "{st}");
        finals.insert(id, st["counters"].clone());
    }
    let said = tcpdump.stop();
    rt.block_on(daemon.shutdown());

    // (a) Every packet decodes as LINUX_SLL2 with the interface, hardware
    // type and packet type the kernel gave it.
    let ours = sll2_file(&data, "all");
    let rows = tshark(&ours, "", &PACKET_FIELDS);
    let mut want: Vec<String> = Vec::new();
    let (veth_out, veth_in) = (format!("{va}\t1\t{OUTGOING}"), format!("{va}\t1\t{HOST}"));
    let lo_in = format!("{lo}\t772\t{HOST}");
    let (a_ip, b_ip, l_ip) = ("10.97.0.1", "10.97.0.2", "127.0.0.1");
    want.extend(vec![format!("{veth_out}\t17\t{a_ip}\t{b_ip}"); UDP_VETH]);
    want.extend(vec![format!("{lo_in}\t17\t{l_ip}\t{l_ip}"); UDP_LO]);
    want.extend(vec![format!("{veth_out}\t1\t{a_ip}\t{b_ip}"); PING_VETH]);
    want.extend(vec![format!("{veth_in}\t1\t{b_ip}\t{a_ip}"); PING_VETH]);
    want.extend(vec![format!("{lo_in}\t1\t{l_ip}\t{l_ip}"); 2 * PING_LO]);
    assert_eq!(sorted(rows.clone()), sorted(want), "ours");
    // The source link-layer address of each veth packet is its sender's.
    let macs = tshark(
        &ours,
        &format!("sll.ifindex == {va}"),
        &["sll.src.eth", "ip.src"],
    );
    for m in &macs {
        let want = if m.ends_with(a_ip) { mac_a } else { mac_b };
        assert!(m.starts_with(want), "{m}");
    }

    // (b) The same packets as tcpdump's, lo traffic once.
    let theirs_rows = tshark(&theirs, "", &PACKET_FIELDS);
    assert!(
        said.iter().any(|l| l == "0 packets dropped by kernel"),
        "tcpdump: {said:?}"
    );
    assert_eq!(theirs_rows.len(), total, "tcpdump: {theirs_rows:#?}");
    assert_eq!(
        sorted(theirs_rows),
        sorted(rows.clone()),
        "ours and tcpdump's"
    );
    assert_eq!(finals["all"]["stored"], total);
    assert_eq!(finals["all"]["dropped_kernel"], 0);

    // The snap length counts the cooked header, as tcpdump's `-s` does;
    // the wire length stays.
    let s = sll2_file(&data, "s");
    let lens = |f: &Path| tshark(f, "", &["frame.len"]);
    assert_eq!(lens(&s), lens(&ours));
    let cap_lens = tshark(&s, "", &["frame.cap_len"]);
    assert_eq!(cap_lens, vec!["30".to_string(); total]);

    // (c) `udp` keeps exactly the datagrams, cut after the UDP header
    // (20 + 20 + 8 bytes).
    let u = sll2_file(&data, "u");
    let rows_u = tshark(
        &u,
        "",
        &["ip.proto", "udp.dstport", "frame.cap_len", "frame.len"],
    );
    assert_eq!(rows_u.len(), udp, "{rows_u:#?}");
    for r in &rows_u {
        let f: Vec<&str> = r.split('\t').collect();
        assert_eq!((f[0], f[2]), ("17", "48"), "{r}");
        let wire = if f[1] == "9001" {
            20 + 20 + 8 + 32
        } else {
            20 + 20 + 8 + 24
        };
        assert_eq!(f[3], wire.to_string(), "{r}");
    }
    assert_eq!(finals["u"]["matched"], udp);

    // (d) Its flows count the datagrams: one flow per destination port.
    let ipfix = files(&data, "u", "ipfix");
    assert_eq!(ipfix.len(), 1, "{ipfix:?}");
    let mut per_port: BTreeMap<u16, u64> = BTreeMap::new();
    for r in capture::ipfix::read_all(&std::fs::read(&ipfix[0]).unwrap()).unwrap() {
        assert_eq!(r.key.proto, 17);
        *per_port.entry(r.key.dport).or_default() += r.packets;
    }
    assert_eq!(
        per_port,
        BTreeMap::from([(9001, UDP_VETH as u64), (9002, UDP_LO as u64)])
    );
    assert_eq!(finals["u"]["flows_exported"], 2);

    // Anonymised, link addresses zeroed (not selected), checksums valid
    // (on the veth, where they were complete to begin with; the IPv4
    // header checksum everywhere).
    let an = sll2_file(&data, "an");
    let cp = CryptoPan::new(&Key::parse(VECTOR_KEY.as_bytes()).unwrap());
    let anon = |a: &str| -> String {
        let v: Ipv4Addr = a.parse().unwrap();
        Ipv4Addr::from(cp.anonymize_v4_uncached(v.into())).to_string()
    };
    let rows_an = tshark(&an, "", &PACKET_FIELDS);
    assert_eq!(rows_an.len(), total);
    for (o, x) in rows.iter().zip(&rows_an) {
        let (o, x): (Vec<&str>, Vec<&str>) = (o.split('\t').collect(), x.split('\t').collect());
        assert_eq!(o[..4], x[..4], "link header and protocol kept");
        assert_eq!(
            (anon(o[4]), anon(o[5])),
            (x[4].to_string(), x[5].to_string())
        );
    }
    let zeroed = tshark(&an, "sll.src.eth != 00:00:00:00:00:00", &["frame.number"]);
    assert!(zeroed.is_empty(), "link addresses left: {zeroed:?}");
    let bad = tshark(
        &an,
        &format!(
            "ip.checksum.status == \"Bad\" || icmp.checksum.status == \"Bad\" \
             || (sll.ifindex == {va} && udp.checksum.status == \"Bad\")"
        ),
        &["frame.number"],
    );
    assert!(bad.is_empty(), "bad checksums in frames {bad:?}");
    let good = tshark(
        &an,
        &format!("sll.ifindex == {va} && udp.checksum.status == \"Good\""),
        &["frame.number"],
    );
    assert_eq!(good.len(), UDP_VETH, "UDP checksums checked on the veth");
}
