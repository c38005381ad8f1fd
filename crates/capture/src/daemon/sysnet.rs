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

/// Interfaces, features, limits and policy of this node.
pub fn capabilities(sh: &Shared) -> Capabilities {
    let interfaces = sh
        .config
        .interfaces
        .iter()
        .map(|name| InterfaceView {
            name: name.clone(),
            // Virtual links report -1 (or fail to read): no speed then.
            speed_mbps: sys(name, "speed").and_then(|s| s.parse::<u64>().ok()),
            operstate: sys(name, "operstate"),
        })
        .collect();
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
