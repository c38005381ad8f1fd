//! Routes the client runtime's `tracing` events into liboml2's log, so a C
//! program sees them in its log file or its own `o_log` function.
//!
//! Levels map as ERROR → `O_LOG_ERROR`, WARN → `O_LOG_WARN`, INFO →
//! `O_LOG_INFO`, DEBUG → `O_LOG_DEBUG`, TRACE → `O_LOG_DEBUG2`; the
//! `--oml-log-level` threshold is checked for every event.

use std::ffi::c_int;
use std::fmt::Write as _;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// The liboml2 level of a `tracing` level.
fn level_of(level: &Level) -> c_int {
    match *level {
        Level::ERROR => super::O_LOG_ERROR,
        Level::WARN => super::O_LOG_WARN,
        Level::INFO => super::O_LOG_INFO,
        Level::DEBUG => super::O_LOG_DEBUG,
        Level::TRACE => 2,
    }
}

/// Collects an event's message and fields as `message key=value …`.
#[derive(Default)]
struct Line {
    message: String,
    fields: String,
}

impl Visit for Line {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={value}", field.name());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }
}

/// The layer that forwards events.
struct OLogLayer;

impl<S: Subscriber> Layer<S> for OLogLayer {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> tracing::subscriber::Interest {
        // The threshold can change at any time: ask `enabled` every time.
        tracing::subscriber::Interest::sometimes()
    }

    fn enabled(&self, metadata: &Metadata<'_>, _: Context<'_, S>) -> bool {
        super::o_log_level_active(level_of(metadata.level())) != 0
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let mut line = Line::default();
        event.record(&mut line);
        line.message.push_str(&line.fields);
        super::emit(level_of(event.metadata().level()), &line.message);
    }
}

/// Installs the bridge as the process-wide `tracing` subscriber, unless the
/// program (a Rust program using the rlib, say) already installed one.
pub(crate) fn install() {
    let subscriber = tracing_subscriber::registry().with(OLogLayer);
    let _ = tracing::subscriber::set_global_default(subscriber);
}
