//! What a client is asked to do, as plain data.
//!
//! Configuration front ends (`--oml-*` options, `OML_*` variables, the XML and
//! TOML files) all produce a [`ClientSpec`]; the runtime builds live writers
//! from it. Keeping this stage free of I/O lets every front end be tested and
//! fuzzed on its own.

use std::path::PathBuf;
use std::time::Duration;

/// Everything a client needs besides its measurement points.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClientSpec {
    /// Application name (the part after the last `/` of argv\[0\] or the `omlc_init` name).
    pub app: String,
    /// Sender id (`--oml-id`, `OML_NAME`); `None` lets the runtime choose the reference default.
    pub id: Option<String>,
    /// Domain (`--oml-domain`, `OML_DOMAIN`).
    pub domain: Option<String>,
    /// Destinations; empty means the reference's default file URI.
    pub destinations: Vec<DestinationSpec>,
    /// Never offer exact doubles (spec/omsp.md §3.8): binary TCP
    /// destinations then send only the reference's 30-bit DOUBLE_T and no
    /// `x-streamgauge-doubles` header key (`--oml-exact-doubles off`; needed
    /// towards a stock oml2-proxy-server, which refuses unknown keys). By
    /// default the offer is made and a streamgauge server stores doubles
    /// exactly; a stock oml2-server ignores it.
    pub reference_doubles: bool,
    /// Default window for streams not configured explicitly (`--oml-samples`/`--oml-interval`).
    pub default_window: Window,
    /// Seconds between `_client_instrumentation` reports; `None` disables them.
    pub instr_interval: Option<Duration>,
    /// Seconds between `_client_clock` reports (the clock's synchronisation
    /// state, sent to TCP destinations, see `docs/clock.md`); `None`
    /// disables them. The `--oml-*` front end defaults to 60 s; a spec built
    /// by hand leaves them off unless it asks.
    pub clock_interval: Option<Duration>,
    /// Log file (`None` = stderr).
    pub log_file: Option<PathBuf>,
    /// Log level, −2 (errors only) … 4 (debug4), as liboml2.
    pub log_level: i32,
    /// `--oml-noop`: instrumentation disabled.
    pub noop: bool,
}

/// One destination: a URI, an encoding, an overload policy and its streams.
#[derive(Debug, Clone, PartialEq)]
pub struct DestinationSpec {
    /// Where the bytes go.
    pub uri: Uri,
    /// Wire encoding for this destination.
    pub encoding: Encoding,
    /// What to do when the destination cannot keep up.
    pub policy: OverloadPolicy,
    /// Byte budget of this destination's queue.
    pub bufsize: usize,
    /// Explicit streams; `None` = every MP with its default stream (an empty `<collect>`).
    pub streams: Option<Vec<StreamSpec>>,
    /// Whether `_client_instrumentation` goes to this destination.
    pub instrumentation: bool,
    /// The streamgauge back-channel (spec/omsp.md §3.6–3.7), TCP only.
    pub backchannel: Backchannel,
}

/// What a TCP destination asks of the receiver's back-channel. Off by
/// default: the header keys that switch it on make a stock
/// oml2-proxy-server reject the connection (spec §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backchannel {
    /// The base protocol: the receiver never answers.
    #[default]
    Off,
    /// Resumable session (§3.6): the receiver acknowledges what it made
    /// durable and says where to resume after a reconnection, so nothing is
    /// lost or duplicated across reconnections.
    Resume,
    /// A resumable session that also accepts control messages (§3.7):
    /// the receiver may change sampling, enable or disable streams, change
    /// filter properties, pause and resume the destination.
    Feedback,
}

/// A parsed collection URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Uri {
    /// `tcp://host:port`, `host:port`, `[v6]:port` (port defaults to 3003).
    Tcp {
        /// Host name or address, without brackets.
        host: String,
        /// TCP port.
        port: u16,
    },
    /// `file:PATH` (appends); `file:-` is standard output.
    File(PathBuf),
    /// `flushfile:PATH` or `flush:PATH`: like `File`, flushed after every write.
    FlushFile(PathBuf),
    /// `file:-`.
    Stdout,
}

/// Wire encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Text (`content: text`).
    Text,
    /// Binary (`content: binary`).
    Binary,
}

/// What a destination does when its byte budget is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverloadPolicy {
    /// The injecting thread waits for room. With `stall_limit`, a destination that
    /// makes no progress for that long falls back to dropping the oldest data
    /// until it moves again (the TCP default: a live server loses nothing, a dead
    /// one does not freeze the application).
    Block {
        /// How long a non-progressing destination may block the application.
        stall_limit: Option<Duration>,
    },
    /// Discard the tuple being injected.
    DropNewest,
    /// Discard the oldest queued data to make room.
    DropOldest,
}

/// A stream: one MP, renamed or not, with a window and filters.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamSpec {
    /// Measurement point name.
    pub mp: String,
    /// Stream name (table `<app>_<name>`); `None` = the MP name.
    pub name: Option<String>,
    /// When rows are emitted.
    pub window: Window,
    /// Filters in column order; empty = the default filter for every field.
    pub filters: Vec<FilterSpec>,
}

/// When a stream emits a row.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Window {
    /// After every N injects (N ≥ 1; negative never emits, as the reference).
    Samples(i64),
    /// Every S seconds.
    Interval(Duration),
    /// One row per inject, `first` filters (the reference default).
    #[default]
    PerSample,
}

/// One filter of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterSpec {
    /// Input field name.
    pub field: String,
    /// Filter name; `None` = the default for the field type and window.
    pub operation: Option<String>,
    /// Column prefix; `None` = the field name.
    pub rename: Option<String>,
    /// Properties passed to the filter.
    pub properties: Vec<filters::Property>,
}
