//! Session configuration: typed, validated without I/O, deserialisable from
//! JSON or TOML (unknown keys are errors).
//!
//! ```
//! let cfg = capture::config::SessionConfig::from_json(r#"{
//!   "name": "exp42",
//!   "filter": "tcp port 80",
//!   "header_only": true,
//!   "sampling": {"mode": "one_in_n", "n": 10},
//!   "anonymization": {"key": "site-key"},
//!   "outputs": [{"type": "pcapng"}, {"type": "counters"}]
//! }"#).unwrap();
//! assert_eq!(cfg.snaplen, 262_144);
//! ```

use crate::anon::AddrFields;
use crate::cut::Field;
use crate::filter::{combine, Filter, FilterError, Shortcuts};
use crate::flow::FlowConfig;
use crate::ipfix::{IpfixTarget, TimeResolution};
use crate::linktype::LinkType;
use crate::output::{FileFormat, Quota, Rollover};
use crate::sample::Sampling;
use serde::{Deserialize, Serialize};

/// Anonymisation settings of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnonConfig {
    /// Which IP address fields are rewritten with Crypto-PAn.
    #[serde(default = "both")]
    pub fields: AddrFields,
    /// Name of the key in the node's key store (never the key itself).
    pub key: String,
}

fn both() -> AddrFields {
    AddrFields::Both
}

/// One output of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum OutputConfig {
    /// Rolling pcap files (nanosecond timestamps).
    Pcap,
    /// Rolling pcapng files.
    Pcapng,
    /// Flow records exported as IPFIX.
    Ipfix {
        /// Where the messages go.
        target: IpfixTarget,
        /// Flow metering settings.
        #[serde(default)]
        flows: FlowConfig,
        /// Start/end field resolution.
        #[serde(default)]
        resolution: TimeResolution,
        /// IPFIX observation domain ID.
        #[serde(default)]
        domain: u32,
    },
    /// Counters only (always kept; listed for clarity).
    Counters,
}

impl OutputConfig {
    /// The packet file format, for file outputs.
    pub fn file_format(&self) -> Option<FileFormat> {
        match self {
            OutputConfig::Pcap => Some(FileFormat::Pcap),
            OutputConfig::Pcapng => Some(FileFormat::Pcapng),
            _ => None,
        }
    }
}

/// tcpdump's default and largest snap length: whole frames of any link.
pub const DEFAULT_SNAPLEN: u32 = 262_144;

fn default_snaplen() -> u32 {
    DEFAULT_SNAPLEN
}
fn default_interval() -> u64 {
    10
}

/// What a session captures and where it goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionConfig {
    /// Unique session name: 1-64 of `[A-Za-z0-9_.-]`, used in file names.
    pub name: String,
    /// Interface to capture on (checked against the node policy).
    #[serde(default)]
    pub interface: Option<String>,
    /// libpcap filter expression.
    #[serde(default)]
    pub filter: Option<String>,
    /// GIMS filter shortcuts, and-ed with `filter`.
    #[serde(default, skip_serializing_if = "Shortcuts::is_empty")]
    pub shortcuts: Shortcuts,
    /// Bytes kept per packet; by default tcpdump's 262144, so frames of
    /// any length the link carries (GRO/TSO super-frames on loopback) stay whole.
    #[serde(default = "default_snaplen")]
    pub snaplen: u32,
    /// Keep only the L2-L4 headers.
    #[serde(default)]
    pub header_only: bool,
    /// Header fields kept (the others are zeroed); absent = all.
    #[serde(default)]
    pub fields: Option<Vec<Field>>,
    /// Packet sampling.
    #[serde(default = "all")]
    pub sampling: Sampling,
    /// Address anonymisation.
    #[serde(default)]
    pub anonymization: Option<AnonConfig>,
    /// Outputs.
    #[serde(default)]
    pub outputs: Vec<OutputConfig>,
    /// File rollover.
    #[serde(default)]
    pub rollover: Rollover,
    /// Byte quota over the session's files.
    #[serde(default)]
    pub quota: Option<Quota>,
    /// Seconds between counter snapshots.
    #[serde(default = "default_interval")]
    pub counter_interval_s: u64,
}

fn all() -> Sampling {
    Sampling::All
}

/// Why a configuration is invalid.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Not valid JSON/TOML or not the expected shape.
    #[error("session configuration: {0}")]
    Parse(String),
    /// A value is out of range.
    #[error("session configuration: {field}: {reason}")]
    Invalid {
        /// The key.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The filter does not compile.
    #[error(transparent)]
    Filter(#[from] FilterError),
}

impl SessionConfig {
    /// Parses and validates JSON.
    pub fn from_json(s: &str) -> Result<SessionConfig, ConfigError> {
        let c: SessionConfig =
            serde_json::from_str(s).map_err(|e| ConfigError::Parse(e.to_string()))?;
        c.validate()?;
        Ok(c)
    }

    /// Parses and validates TOML.
    pub fn from_toml(s: &str) -> Result<SessionConfig, ConfigError> {
        let c: SessionConfig = toml::from_str(s).map_err(|e| ConfigError::Parse(e.to_string()))?;
        c.validate()?;
        Ok(c)
    }

    /// The libpcap expression of filter + shortcuts.
    pub fn filter_expression(&self) -> Result<String, FilterError> {
        combine(&self.shortcuts, self.filter.as_deref())
    }

    /// Checks values (no I/O; the filter is compiled by libpcap in memory).
    /// The source is not known yet, so the filter must compile for at
    /// least one link type the pipeline parses (Ethernet's error is
    /// returned otherwise); [`SessionConfig::validate_for`] checks it for
    /// the source's own once that is known.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_values()?;
        let expr = self.filter_expression()?;
        match Filter::compile_for(&expr, LinkType::Ethernet) {
            Ok(_) => Ok(()),
            Err(_)
                if LinkType::ALL
                    .iter()
                    .any(|&l| Filter::compile_for(&expr, l).is_ok()) =>
            {
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Checks values and compiles the filter for a source of link type `link`.
    pub fn validate_for(&self, link: LinkType) -> Result<(), ConfigError> {
        self.validate_values()?;
        Filter::compile_for(&self.filter_expression()?, link)?;
        Ok(())
    }

    /// Checks every value but the filter (which the session compiles for
    /// its source's link type itself).
    pub fn validate_values(&self) -> Result<(), ConfigError> {
        let bad = |field, reason: String| Err(ConfigError::Invalid { field, reason });
        let n = &self.name;
        if n.is_empty()
            || n.len() > 64
            || !n
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
            || n.starts_with('.')
        {
            return bad(
                "name",
                format!("{n:?} must be 1-64 of [A-Za-z0-9_.-], not starting with '.'"),
            );
        }
        if self.snaplen < 14 || self.snaplen > DEFAULT_SNAPLEN {
            return bad(
                "snaplen",
                format!("{} not in 14..={DEFAULT_SNAPLEN}", self.snaplen),
            );
        }
        if let Err(e) = self.sampling.validate() {
            return bad("sampling", e);
        }
        if self.counter_interval_s == 0 {
            return bad("counter_interval_s", "must be >= 1".into());
        }
        if self.rollover.bytes == Some(0) || self.rollover.seconds == Some(0) {
            return bad("rollover", "limits must be > 0".into());
        }
        if let Some(a) = &self.anonymization {
            if a.key.trim().is_empty() {
                return bad("anonymization.key", "a key name is required".into());
            }
        }
        for o in &self.outputs {
            if let OutputConfig::Ipfix { flows, target, .. } = o {
                if flows.idle_timeout_s == 0 || flows.active_timeout_s == 0 {
                    return bad("outputs.flows", "timeouts must be >= 1 s".into());
                }
                if let IpfixTarget::File { path } = target {
                    let plain = path
                        .components()
                        .all(|c| matches!(c, std::path::Component::Normal(_)));
                    if !plain || path.as_os_str().is_empty() {
                        return bad(
                            "outputs.target.path",
                            format!("{} must be a relative path without '..' (it is placed in the session directory)", path.display()),
                        );
                    }
                }
            }
        }
        if self
            .outputs
            .iter()
            .filter(|o| o.file_format().is_some())
            .count()
            > 1
        {
            return bad(
                "outputs",
                "at most one pcap/pcapng output per session".into(),
            );
        }
        Ok(())
    }
}
