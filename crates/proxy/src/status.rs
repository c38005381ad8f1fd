//! The status document (`GET /status`, `streamgauge proxy ctl status`).

use std::sync::atomic::Ordering;

use omsp::admission::Refused;
use serde_json::{json, Value};

use crate::proxy::Shared;
use crate::registry::UpstreamState;

/// Everything an operator wants to know, as JSON.
///
/// Offsets are data offsets of each client stream (bytes after its header):
/// `end` written, `durable` synced per the fsync policy, `acked` stored
/// upstream. `pending_bytes` = `end - acked`: what still has to go upstream.
pub fn status(shared: &Shared) -> Value {
    let mut sessions = Vec::new();
    let mut pending = 0;
    let mut lost = 0;
    let mut delivered = 0;
    for e in shared.registry.all() {
        let j = e.lock();
        let client = *e.client.lock().unwrap_or_else(|p| p.into_inner());
        if j.closed() && j.acked() >= j.end() && client.is_none() {
            // Delivered; possibly kept for a resumable client's window.
            delivered += 1;
            lost += j.lost();
            continue;
        }
        let h = j.parsed();
        pending += j.end() - j.acked();
        lost += j.lost();
        let mut upstream = e.upstream.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if upstream == UpstreamState::Idle && shared.control.is_paused() {
            upstream = UpstreamState::Paused;
        }
        let error = match &upstream {
            UpstreamState::Backoff(reason) => Some(reason.clone()),
            _ => None,
        };
        sessions.push(json!({
            "journal": e.id,
            "upstream_session": e.session_id(j.epoch()),
            "domain": h.domain,
            "sender_id": h.sender_id,
            "app_name": h.app_name,
            "client_session": j.client_session(),
            "client": client.map(|c| c.to_string()),
            "client_closed": j.closed(),
            "journal_bytes": j.disk_bytes(),
            "segments": j.segments(),
            "start": j.start(),
            "end": j.end(),
            "durable": j.durable(),
            "acked": j.acked(),
            "pending_bytes": j.end() - j.acked(),
            "lost_bytes": j.lost(),
            "upstream_state": upstream.name(),
            "upstream_error": error,
        }));
    }
    json!({
        "proxy_id": shared.registry.proxy_id,
        "paused": shared.control.is_paused(),
        "upstream": shared.config.upstream,
        "fsync": shared.config.fsync.to_string(),
        "quota": {
            "bytes": shared.registry.quota,
            "used": shared.registry.usage(),
            "policy": shared.config.quota_policy.to_string(),
            "dropped_bytes": shared.registry.dropped.load(Ordering::Relaxed),
        },
        "connections": {
            "open": shared.admission.open(),
            "max": shared.admission.max_total(),
            "max_per_source": shared.admission.max_per_source(),
            "refused": Refused::ALL.iter().map(|r| {
                (r.label().to_owned(), json!(shared.refused[*r as usize].load(Ordering::Relaxed)))
            }).collect::<serde_json::Map<String, Value>>(),
        },
        "pending_bytes": pending,
        "lost_bytes": lost,
        "delivered_kept": delivered,
        "sessions": sessions,
    })
}
