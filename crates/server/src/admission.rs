//! Admission of connections: how many the server serves at once, in total
//! and per source address. The counting is shared with the proxy and lives
//! in [`omsp::admission`]; this module adds the server's log line.
//!
//! A refused connection is closed at once, before anything is read from it,
//! counted in `streamgauge_connections_refused_total{reason}` and logged at
//! most once per [`LOG_EVERY`] with the number refused since the last line.

pub use omsp::admission::{Admission, Admitted, Refusal, Refused, Report, LOG_EVERY};

/// Logs a refusal when its report is due (see [`omsp::admission`]).
pub fn log_refusal(client: std::net::IpAddr, refusal: &Refusal) {
    if let Some(report) = &refusal.report {
        tracing::warn!(%client, reason = refusal.reason.label(), refused = report.refused,
            open = report.open, "{report}");
    }
}
