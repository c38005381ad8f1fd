//! What `GET /api/v1/capabilities` reports about the node: interfaces with
//! their link speed and state from sysfs and their link type, features,
//! limits, the policy.

use super::views::{Capabilities, InterfaceView, LinkTypeView};
use super::Shared;
use crate::linktype::LinkType;
use crate::source::ANY;
use std::sync::atomic::Ordering;

/// Reads `/sys/class/net/<name>/<attr>`, trimmed.
fn sys(name: &str, attr: &str) -> Option<String> {
    std::fs::read_to_string(format!("/sys/class/net/{name}/{attr}"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// The link type of a tapped interface's packets: `LINUX_SLL2` for
/// `any`; for another interface, that of its open source (a hardware
/// type's link type is only known once the socket is bound).
fn link_type(sh: &Shared, name: &str) -> Option<LinkTypeView> {
    if name == ANY {
        return Some(LinkType::LinuxSll2.into());
    }
    let workers = sh.workers.lock().unwrap_or_else(|e| e.into_inner());
    workers
        .get(name)
        .filter(|w| w.alive.load(Ordering::Acquire))
        .map(|w| w.link.into())
}

/// The tapped interfaces with their speed, state and link type.
fn interfaces(sh: &Shared) -> Vec<InterfaceView> {
    let mut v = links(sh);
    for i in &mut v {
        i.link_type = link_type(sh, &i.name);
    }
    v
}

/// The tapped interfaces with their speed and state (`any`, not a link
/// itself, has neither). In a configured network namespace they are read
/// there (a thread enters it: sysfs would show the daemon's own
/// namespace); otherwise from sysfs, whose `operstate` is finer
/// (`unknown`, `lowerlayerdown`, …).
fn links(sh: &Shared) -> Vec<InterfaceView> {
    let names = &sh.config.interfaces;
    let Some(ns) = sh.config.netns.as_deref() else {
        return names
            .iter()
            .map(|name| InterfaceView {
                name: name.clone(),
                link_type: None,
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
            link_type: None,
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
        "interface_any",
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
