//! The Prometheus text exposition format, version 0.0.4.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use super::{CloseReason, DomainMetrics, Metrics, COMMIT_ROWS_BUCKETS};

/// The `Content-Type` of [`render`]'s output.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Every counter, as Prometheus text.
pub fn render(m: &Metrics) -> String {
    let mut out = String::new();
    let o = &mut out;
    let n = family(
        o,
        "streamgauge_connections_accepted_total",
        "counter",
        "TCP connections accepted.",
    );
    let _ = writeln!(o, "{n} {}", m.connections_accepted.load(Ordering::Relaxed));
    let n = family(
        o,
        "streamgauge_connections_open",
        "gauge",
        "Connections being served now.",
    );
    let _ = writeln!(o, "{n} {}", m.open());
    let n = family(
        o,
        "streamgauge_connections_closed_total",
        "counter",
        "Connections that ended, by reason (closed, idle, shutdown, error).",
    );
    for r in CloseReason::ALL {
        let _ = writeln!(o, "{n}{{reason=\"{}\"}} {}", r.label(), m.closed_count(r));
    }
    let n = family(
        o,
        "streamgauge_connections_refused_total",
        "counter",
        "Connections closed unread because a limit was reached, by limit (total, per_source).",
    );
    for r in crate::admission::Refused::ALL {
        let _ = writeln!(o, "{n}{{reason=\"{}\"}} {}", r.label(), m.refused_count(r));
    }
    let n = family(
        o,
        "streamgauge_received_bytes_total",
        "counter",
        "Bytes read from client sockets.",
    );
    let _ = writeln!(o, "{n} {}", m.bytes_received.load(Ordering::Relaxed));
    let n = family(
        o,
        "streamgauge_decode_errors_total",
        "counter",
        "Input errors, by error code.",
    );
    for (code, count) in m.decode_errors() {
        let _ = writeln!(o, "{n}{{code=\"{}\"}} {count}", escape(code));
    }
    let n = family(
        o,
        "streamgauge_reject_log_lines_suppressed_total",
        "counter",
        "Log lines about rejected input not written (over the per-period budget), by reason.",
    );
    for (reason, count) in m.rejects.suppressed() {
        let _ = writeln!(o, "{n}{{reason=\"{}\"}} {count}", escape(reason));
    }
    let domains = m.domains();
    type Get = fn(&DomainMetrics) -> u64;
    let simple: [(&str, &str, &str, Get); 5] = [
        (
            "streamgauge_tuples_received_total",
            "counter",
            "Tuples decoded and handed to the domain's writer.",
            |d| d.received.load(Ordering::Relaxed),
        ),
        (
            "streamgauge_tuples_stored_total",
            "counter",
            "Rows inserted by the domain's writer.",
            |d| d.stored.load(Ordering::Relaxed),
        ),
        (
            "streamgauge_writer_queue_depth",
            "gauge",
            "Batches waiting in the writer's queue.",
            DomainMetrics::queue_depth,
        ),
        (
            "streamgauge_writer_backlog_rows",
            "gauge",
            "Rows handed to the writer and not yet inserted.",
            DomainMetrics::backlog,
        ),
        (
            "streamgauge_commits_total",
            "counter",
            "Transactions committed.",
            |d| d.commits.load(Ordering::Relaxed),
        ),
    ];
    for (name, ty, help, get) in simple {
        let n = family(o, name, ty, help);
        for (domain, d) in &domains {
            let _ = writeln!(o, "{n}{{domain=\"{}\"}} {}", escape(domain), get(d));
        }
    }
    let n = family(
        o,
        "streamgauge_tuples_rejected_total",
        "counter",
        "Tuples lost, by stage: decode (bad line or packet), store (insert failed).",
    );
    for (domain, d) in &domains {
        let domain = escape(domain);
        for (stage, v) in [
            ("decode", d.rejected_decode.load(Ordering::Relaxed)),
            ("store", d.rejected_store.load(Ordering::Relaxed)),
        ] {
            let _ = writeln!(o, "{n}{{domain=\"{domain}\",stage=\"{stage}\"}} {v}");
        }
    }
    let n = family(
        o,
        "streamgauge_commit_rows",
        "histogram",
        "Rows per committed transaction.",
    );
    for (domain, d) in &domains {
        let domain = escape(domain);
        let mut cumulative = 0;
        for (i, bound) in COMMIT_ROWS_BUCKETS.iter().enumerate() {
            cumulative += d.commit_buckets[i].load(Ordering::Relaxed);
            let _ = writeln!(
                o,
                "{n}_bucket{{domain=\"{domain}\",le=\"{bound}\"}} {cumulative}"
            );
        }
        cumulative += d.commit_buckets[COMMIT_ROWS_BUCKETS.len()].load(Ordering::Relaxed);
        let _ = writeln!(
            o,
            "{n}_bucket{{domain=\"{domain}\",le=\"+Inf\"}} {cumulative}"
        );
        let sum = d.committed_rows.load(Ordering::Relaxed);
        let _ = writeln!(o, "{n}_sum{{domain=\"{domain}\"}} {sum}");
        let _ = writeln!(o, "{n}_count{{domain=\"{domain}\"}} {cumulative}");
    }
    out
}

/// Writes a family's `# HELP` and `# TYPE` lines; returns its name.
fn family<'a>(out: &mut String, name: &'a str, ty: &str, help: &str) -> &'a str {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {ty}");
    name
}

/// A label value: backslash, double quote and line feed escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_families_with_help_and_type() {
        let m = Metrics::new();
        m.connections_accepted.fetch_add(2, Ordering::Relaxed);
        m.closed(CloseReason::Error);
        m.decode_error("bad_value");
        m.refused(crate::admission::Refused::PerSource);
        let d = m.domain("exp");
        d.received.fetch_add(10, Ordering::Relaxed);
        d.stored.fetch_add(7, Ordering::Relaxed);
        d.commit(7);
        let text = render(&m);
        for line in [
            "# TYPE streamgauge_connections_accepted_total counter",
            "streamgauge_connections_accepted_total 2",
            "streamgauge_connections_open 1",
            "streamgauge_connections_closed_total{reason=\"error\"} 1",
            "streamgauge_connections_refused_total{reason=\"per_source\"} 1",
            "streamgauge_connections_refused_total{reason=\"total\"} 0",
            "streamgauge_decode_errors_total{code=\"bad_value\"} 1",
            "streamgauge_tuples_received_total{domain=\"exp\"} 10",
            "streamgauge_writer_backlog_rows{domain=\"exp\"} 3",
            "streamgauge_commit_rows_bucket{domain=\"exp\",le=\"10\"} 1",
            "streamgauge_commit_rows_bucket{domain=\"exp\",le=\"+Inf\"} 1",
            "streamgauge_commit_rows_sum{domain=\"exp\"} 7",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
        assert_eq!(escape("a\"b\\"), "a\\\"b\\\\");
    }
}
