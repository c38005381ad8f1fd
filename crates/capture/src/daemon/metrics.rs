//! `/metrics`: per-session counters in the Prometheus text format, only
//! for the sessions the caller may see.

use super::streams::{counter_values, COUNTER_COLUMNS};
use super::views::state_name;
use super::Shared;
use std::fmt::Write;

/// Escapes a label value.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Renders the counters of every session whose experiment `visible` accepts.
pub fn render(sh: &Shared, visible: impl Fn(&str) -> bool) -> String {
    let reg = sh.lock();
    let rows: Vec<_> = reg
        .sessions
        .iter()
        .filter(|(_, r)| visible(&r.experiment))
        .collect();
    let mut out = String::new();
    for (i, col) in COUNTER_COLUMNS.iter().enumerate() {
        let _ = writeln!(out, "# TYPE capture_session_{col}_total counter");
        for (id, r) in &rows {
            let _ = writeln!(
                out,
                "capture_session_{col}_total{{session=\"{}\",experiment=\"{}\",interface=\"{}\"}} {}",
                label(id),
                label(&r.experiment),
                label(r.config.interface.as_deref().unwrap_or("")),
                counter_values(&r.counters, sh.archived(id))[i]
            );
        }
    }
    if let Some(n) = sh.streams_dropped() {
        // Node-wide: rows for the collection server dropped because its queue was full.
        let _ = writeln!(out, "# TYPE capture_streams_dropped_total counter");
        let _ = writeln!(out, "capture_streams_dropped_total {n}");
    }
    let _ = writeln!(out, "# TYPE capture_session_state gauge");
    for (id, r) in &rows {
        let _ = writeln!(
            out,
            "capture_session_state{{session=\"{}\",state=\"{}\"}} 1",
            label(id),
            state_name(r.state)
        );
    }
    out
}
