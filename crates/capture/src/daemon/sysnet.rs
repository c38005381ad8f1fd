//! What `GET /api/v1/capabilities` reports about the node: interfaces with
//! their link speed and state from sysfs, features, limits, the policy.

use super::views::{Capabilities, InterfaceView};
use super::Shared;

/// Reads `/sys/class/net/<name>/<attr>`, trimmed.
fn sys(name: &str, attr: &str) -> Option<String> {
    std::fs::read_to_string(format!("/sys/class/net/{name}/{attr}"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// The tapped interfaces with their speed and state. In a configured
/// network namespace they are read there (a thread enters it: sysfs would
/// show the daemon's own namespace); otherwise from sysfs, whose
/// `operstate` is finer (`unknown`, `lowerlayerdown`, …).
fn interfaces(sh: &Shared) -> Vec<InterfaceView> {
    let names = &sh.config.interfaces;
    let Some(ns) = sh.config.netns.as_deref() else {
        return names
            .iter()
            .map(|name| InterfaceView {
                name: name.clone(),
                // Virtual links report -1 (or fail to read): no speed then.
                speed_mbps: sys(name, "speed").and_then(|s| s.parse::<u64>().ok()),
                operstate: sys(name, "operstate"),
            })
            .collect();
    };
    let read = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                super::netns::enter(ns)?;
                Ok::<_, std::io::Error>(
                    names
                        .iter()
                        .map(|n| super::netns::link(n))
                        .collect::<Vec<_>>(),
                )
            })
            .join()
    });
    let links = match read {
        Ok(Ok(links)) => links,
        Ok(Err(e)) => {
            tracing::warn!(netns = ns, error = %e, "cannot enter the capture namespace to read its links");
            vec![None; names.len()]
        }
        Err(_) => vec![None; names.len()],
    };
    names
        .iter()
        .zip(links)
        .map(|(name, link)| InterfaceView {
            name: name.clone(),
            speed_mbps: link.as_ref().and_then(|l| l.speed_mbps),
            operstate: link.map(|l| l.operstate.to_string()),
        })
        .collect()
}

/// Interfaces, features, limits and policy of this node.
pub fn capabilities(sh: &Shared) -> Capabilities {
    let interfaces = interfaces(sh);
    let features = [
        "libpcap_filters",
        "gims_shortcuts",
        "sampling_one_in_n",
        "sampling_probability",
        "sampling_flow",
        "snaplen",
        "header_only",
        "field_selection",
        "cryptopan_ipv4_ipv6",
        "pcap",
        "pcapng",
        "ipfix_udp_tcp_file",
        "rollover",
        "quota",
        "counters_streams",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    Capabilities {
        interfaces,
        features,
        max_sessions: sh.config.max_sessions,
        sessions: sh.lock().sessions.len(),
        policy: serde_json::to_value(&sh.policy).unwrap_or_default(),
        keys: sh.keys.keys().cloned().collect(),
    }
}
