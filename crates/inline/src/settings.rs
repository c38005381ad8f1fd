//! Filter and sampling settings: parsed and validated without I/O, then
//! turned into the [`Config`] the programs read.
//!
//! Every key is defined once in [`KEYS`]; command-line flags, the TOML
//! configuration file and `streamgauge inline ctl set key=value` all go
//! through [`Settings::set`]. Precedence: command line > file > default.

use std::net::Ipv6Addr;
use std::time::Duration;

use inline_common::{
    Config, MODE_COMPACT, MODE_DELAY, MODE_LOSS, MODE_PDM, SAMPLING_CPU, SAMPLING_FLOW,
};

use crate::error::SettingsError;

/// An IPv6 prefix; `/0` (written `any`) matches every address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    /// Network address (bits past `len` are cleared).
    pub addr: Ipv6Addr,
    /// Prefix length, 0–128.
    pub len: u8,
}

impl Prefix {
    /// The wildcard prefix `::/0`.
    pub const ANY: Prefix = Prefix {
        addr: Ipv6Addr::UNSPECIFIED,
        len: 0,
    };

    /// Parse `any`, `ADDR` (a /128) or `ADDR/LEN`.
    pub fn parse(s: &str) -> Option<Prefix> {
        if s == "any" || s == "*" {
            return Some(Prefix::ANY);
        }
        let (a, l) = s.split_once('/').unwrap_or((s, "128"));
        let addr: Ipv6Addr = a.parse().ok()?;
        let len: u8 = l.parse().ok().filter(|l| *l <= 128)?;
        let masked = u128::from(addr) & u128::from(Self::mask_bits(len));
        Some(Prefix {
            addr: Ipv6Addr::from(masked),
            len,
        })
    }

    fn mask_bits(len: u8) -> Ipv6Addr {
        let bits = if len == 0 {
            0
        } else {
            u128::MAX << (128 - u32::from(len))
        };
        Ipv6Addr::from(bits)
    }

    /// The mask in network byte order.
    pub fn mask(&self) -> [u8; 16] {
        Self::mask_bits(self.len).octets()
    }

    /// Whether `addr` is inside the prefix.
    pub fn contains(&self, addr: Ipv6Addr) -> bool {
        u128::from(addr) & u128::from(Self::mask_bits(self.len)) == u128::from(self.addr)
    }
}

impl std::fmt::Display for Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.len == 0 {
            f.write_str("any")
        } else {
            write!(f, "{}/{}", self.addr, self.len)
        }
    }
}

/// Which options are inserted (source) or accepted (sink).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One-way delay option only (24-byte header).
    Delay,
    /// Loss option only (8-byte header).
    Loss,
    /// Both options in one 32-byte header.
    Both,
    /// RFC 8250 PDM option (16-byte header): loss from its 16-bit sequence number.
    Pdm,
    /// Compact delay option (8-byte header, fits a UDP socket's headroom):
    /// a 32-bit truncated source timestamp, 2^-24 s (≈ 59.6 ns) steps,
    /// delays within ±128 s (spec/inline.md §5a).
    Compact,
}

impl Mode {
    /// The `MODE_*` bits.
    pub fn bits(self) -> u8 {
        match self {
            Mode::Delay => MODE_DELAY,
            Mode::Loss => MODE_LOSS,
            Mode::Both => MODE_DELAY | MODE_LOSS,
            Mode::Pdm => MODE_PDM,
            Mode::Compact => MODE_DELAY | MODE_COMPACT,
        }
    }

    fn from_bits(bits: u8) -> Mode {
        if bits & MODE_PDM != 0 {
            Mode::Pdm
        } else if bits & MODE_COMPACT != 0 {
            Mode::Compact
        } else if bits & 3 == 3 {
            Mode::Both
        } else if bits & MODE_DELAY != 0 {
            Mode::Delay
        } else {
            Mode::Loss
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Delay => "delay",
            Mode::Loss => "loss",
            Mode::Both => "both",
            Mode::Pdm => "pdm",
            Mode::Compact => "compact",
        }
    }
}

/// Where one-in-N sampling is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sampling {
    /// Per flow (default): each flow's 1st, N+1th, … packet, exactly; a
    /// sampled-out packet still costs the flow-table lookup.
    #[default]
    Flow,
    /// Per CPU, before the flow lookup: a sampled-out packet costs a
    /// per-CPU counter only. Each flow is still measured about one packet
    /// in N, but which ones depends on the other flows on the same CPU (a
    /// short flow may get none), and sequence numbers still count measured
    /// packets per flow, so loss stays exact.
    Cpu,
}

impl Sampling {
    fn name(self) -> &'static str {
        match self {
            Sampling::Flow => "flow",
            Sampling::Cpu => "cpu",
        }
    }
}

/// What the programs do, as plain data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Source-address prefix of instrumented packets.
    pub src: Prefix,
    /// Destination-address prefix of instrumented packets.
    pub dst: Prefix,
    /// Upper-layer protocol; `None` = any.
    pub proto: Option<u8>,
    /// Source port; `None` = any.
    pub sport: Option<u16>,
    /// Destination port; `None` = any.
    pub dport: Option<u16>,
    /// Options inserted/accepted.
    pub mode: Mode,
    /// Option type of the delay option.
    pub delay_type: u8,
    /// Option type of the loss option.
    pub loss_type: u8,
    /// One-in-N sampling (1 = every packet).
    pub sample: u32,
    /// Where the one-in-N decision is made.
    pub sampling: Sampling,
    /// At most one instrumented packet per flow per interval (zero = no limit).
    pub min_interval: Duration,
    /// Idle time after which a flow's sequence numbers restart at 0.
    pub flow_timeout: Duration,
    /// `false` pauses the program (packets pass untouched).
    pub enabled: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings::from_config(&Config::default())
    }
}

/// Every settings key with its help text: the one definition that flags,
/// the configuration file and `ctl set` share.
pub const KEYS: &[(&str, &str)] = &[
    ("src", "source prefix: ADDR[/LEN] or any"),
    ("dst", "destination prefix: ADDR[/LEN] or any"),
    ("proto", "protocol: udp, tcp, icmpv6, a number, or any"),
    ("sport", "source port or any"),
    ("dport", "destination port or any"),
    (
        "mode",
        "options: delay, loss, both, pdm, or compact (delay in 8 bytes, 60 ns steps)",
    ),
    (
        "delay_type",
        "option type of the delay option (default 0x1e)",
    ),
    ("loss_type", "option type of the loss option (default 0x3e)"),
    ("sample", "instrument one packet in N per flow (1 = all)"),
    (
        "sampling",
        "where one-in-N is decided: flow (exact per flow) or cpu (per CPU, before the flow lookup: cheaper)",
    ),
    (
        "min_interval_us",
        "at most one instrumented packet per flow every M microseconds (0 = no limit)",
    ),
    (
        "flow_timeout_s",
        "seconds of inactivity after which a flow restarts at sequence 0",
    ),
    ("enabled", "true/false: pause or resume instrumentation"),
];

fn invalid(key: &'static str, value: &str, reason: &'static str) -> SettingsError {
    SettingsError::InvalidValue {
        key,
        value: value.to_owned(),
        reason,
    }
}

fn parse_num<T: std::str::FromStr>(s: &str) -> Option<T> {
    s.parse().ok()
}

fn parse_u8_any_base(s: &str) -> Option<u8> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

fn parse_opt_port(key: &'static str, v: &str) -> Result<Option<u16>, SettingsError> {
    match v {
        "any" | "*" | "0" => Ok(None),
        _ => parse_num(v)
            .map(Some)
            .ok_or_else(|| invalid(key, v, "a port number 1-65535 or any")),
    }
}

impl Settings {
    /// Set one key from its text form; on error nothing changes.
    pub fn set(&mut self, key: &str, v: &str) -> Result<(), SettingsError> {
        let mut next = self.clone();
        next.set_unchecked(key, v.trim())?;
        if next.delay_type == next.loss_type {
            return Err(invalid("delay_type", v, "must differ from loss_type"));
        }
        *self = next;
        Ok(())
    }

    fn set_unchecked(&mut self, key: &str, v: &str) -> Result<(), SettingsError> {
        match key {
            "src" => {
                self.src = Prefix::parse(v).ok_or_else(|| invalid("src", v, "ADDR[/LEN] or any"))?
            }
            "dst" => {
                self.dst = Prefix::parse(v).ok_or_else(|| invalid("dst", v, "ADDR[/LEN] or any"))?
            }
            "proto" => {
                self.proto = match v {
                    "any" | "*" | "0" => None,
                    "udp" => Some(17),
                    "tcp" => Some(6),
                    "icmpv6" | "icmp6" => Some(58),
                    n => Some(
                        parse_num(n)
                            .ok_or_else(|| invalid("proto", v, "udp, tcp, icmpv6, 1-255 or any"))?,
                    ),
                }
            }
            "sport" => self.sport = parse_opt_port("sport", v)?,
            "dport" => self.dport = parse_opt_port("dport", v)?,
            "mode" => {
                self.mode = match v {
                    "delay" => Mode::Delay,
                    "loss" => Mode::Loss,
                    "both" => Mode::Both,
                    "pdm" => Mode::Pdm,
                    "compact" => Mode::Compact,
                    _ => return Err(invalid("mode", v, "delay, loss, both, pdm or compact")),
                }
            }
            "delay_type" | "loss_type" => {
                let k = if key == "delay_type" {
                    "delay_type"
                } else {
                    "loss_type"
                };
                let t = parse_u8_any_base(v)
                    .filter(|t| *t > 1)
                    .ok_or_else(|| invalid(k, v, "an option type 2-255 (0 and 1 are padding)"))?;
                if k == "delay_type" {
                    self.delay_type = t;
                } else {
                    self.loss_type = t;
                }
            }
            "sample" => {
                self.sample = parse_num(v)
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| invalid("sample", v, "an integer >= 1"))?
            }
            "sampling" => {
                self.sampling = match v {
                    "flow" => Sampling::Flow,
                    "cpu" => Sampling::Cpu,
                    _ => return Err(invalid("sampling", v, "flow or cpu")),
                }
            }
            "min_interval_us" => {
                self.min_interval = Duration::from_micros(
                    parse_num(v).ok_or_else(|| invalid("min_interval_us", v, "microseconds"))?,
                )
            }
            "flow_timeout_s" => {
                let s: f64 = parse_num(v)
                    .filter(|s: &f64| *s > 0.0 && s.is_finite())
                    .ok_or_else(|| invalid("flow_timeout_s", v, "positive seconds"))?;
                self.flow_timeout = Duration::from_secs_f64(s);
            }
            "enabled" => {
                self.enabled = match v {
                    "true" | "1" | "yes" | "on" => true,
                    "false" | "0" | "no" | "off" => false,
                    _ => return Err(invalid("enabled", v, "true or false")),
                }
            }
            _ => {
                return Err(SettingsError::UnknownKey {
                    key: key.to_owned(),
                })
            }
        }
        Ok(())
    }

    /// Apply `key=value` assignments in order.
    pub fn set_all<'a>(
        &mut self,
        pairs: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), SettingsError> {
        for pair in pairs {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| invalid("key=value", pair, "key=value"))?;
            self.set(k.trim(), v)?;
        }
        Ok(())
    }

    /// Apply a TOML configuration file's text (flat table of the [`KEYS`]).
    pub fn apply_toml(&mut self, text: &str) -> Result<(), SettingsError> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| SettingsError::File(e.to_string()))?;
        for (k, v) in &table {
            let s = match v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                _ => {
                    return Err(SettingsError::File(format!(
                        "{k}: expected a string, number or boolean"
                    )))
                }
            };
            self.set(k, &s)?;
        }
        Ok(())
    }

    /// The map value the programs read.
    pub fn to_config(&self) -> Config {
        Config {
            src_net: self.src.addr.octets(),
            src_mask: self.src.mask(),
            dst_net: self.dst.addr.octets(),
            dst_mask: self.dst.mask(),
            sport: self.sport.unwrap_or(0),
            dport: self.dport.unwrap_or(0),
            proto: self.proto.unwrap_or(0),
            enabled: u8::from(self.enabled),
            mode: self.mode.bits(),
            delay_type: self.delay_type,
            loss_type: self.loss_type,
            sampling: match self.sampling {
                Sampling::Flow => SAMPLING_FLOW,
                Sampling::Cpu => SAMPLING_CPU,
            },
            loaded: 0,
            _pad: 0,
            sample_n: self.sample,
            min_interval_ns: u64::try_from(self.min_interval.as_nanos()).unwrap_or(u64::MAX),
            flow_timeout_ns: u64::try_from(self.flow_timeout.as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// Read back a map value (for `ctl show`).
    pub fn from_config(c: &Config) -> Settings {
        let prefix = |net: [u8; 16], mask: [u8; 16]| Prefix {
            addr: Ipv6Addr::from(net),
            len: u128::from(Ipv6Addr::from(mask)).count_ones() as u8,
        };
        Settings {
            src: prefix(c.src_net, c.src_mask),
            dst: prefix(c.dst_net, c.dst_mask),
            proto: (c.proto != 0).then_some(c.proto),
            sport: (c.sport != 0).then_some(c.sport),
            dport: (c.dport != 0).then_some(c.dport),
            mode: Mode::from_bits(c.mode),
            delay_type: c.delay_type,
            loss_type: c.loss_type,
            sample: c.sample_n.max(1),
            sampling: if c.sampling == SAMPLING_CPU {
                Sampling::Cpu
            } else {
                Sampling::Flow
            },
            min_interval: Duration::from_nanos(c.min_interval_ns),
            flow_timeout: Duration::from_nanos(c.flow_timeout_ns),
            enabled: c.enabled != 0,
        }
    }

    /// `key=value` lines in [`KEYS`] order (what `ctl show` prints; valid input to `set_all`).
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let any = |v: Option<String>| v.unwrap_or_else(|| "any".to_owned());
        vec![
            ("src", self.src.to_string()),
            ("dst", self.dst.to_string()),
            ("proto", any(self.proto.map(|p| p.to_string()))),
            ("sport", any(self.sport.map(|p| p.to_string()))),
            ("dport", any(self.dport.map(|p| p.to_string()))),
            ("mode", self.mode.name().to_owned()),
            ("delay_type", format!("{:#04x}", self.delay_type)),
            ("loss_type", format!("{:#04x}", self.loss_type)),
            ("sample", self.sample.to_string()),
            ("sampling", self.sampling.name().to_owned()),
            ("min_interval_us", self.min_interval.as_micros().to_string()),
            (
                "flow_timeout_s",
                self.flow_timeout.as_secs_f64().to_string(),
            ),
            ("enabled", self.enabled.to_string()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_masked_and_round_trip() {
        let p = Prefix::parse("2001:db8::1:2/64").unwrap();
        assert_eq!(p.to_string(), "2001:db8::/64");
        assert!(p.contains("2001:db8::ffff".parse().unwrap()));
        assert!(!p.contains("2001:db9::".parse().unwrap()));
        assert_eq!(Prefix::parse("any"), Some(Prefix::ANY));
        assert_eq!(Prefix::parse("::1").unwrap().len, 128);
        assert!(Prefix::parse("::1/129").is_none());
    }

    #[test]
    fn settings_round_trip_through_config() {
        let mut s = Settings::default();
        s.set_all([
            "dst=fd00::/8",
            "proto=udp",
            "dport=5201",
            "sample=10",
            "sampling=cpu",
            "min_interval_us=100",
            "mode=compact",
        ])
        .unwrap();
        let back = Settings::from_config(&s.to_config());
        assert_eq!(back, s);
        let mut again = Settings::default();
        let pairs: Vec<String> = s
            .to_pairs()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        again.set_all(pairs.iter().map(String::as_str)).unwrap();
        assert_eq!(again, s);
    }

    #[test]
    fn toml_file_and_errors() {
        let mut s = Settings::default();
        s.apply_toml("dst = \"fd00::2\"\nsample = 4\nenabled = false\ndelay_type = \"0x1e\"\n")
            .unwrap();
        assert_eq!(s.sample, 4);
        assert!(!s.enabled);
        assert!(matches!(
            s.apply_toml("bogus = 1"),
            Err(SettingsError::UnknownKey { .. })
        ));
        assert!(s.set("sample", "0").is_err());
        assert!(s.set("loss_type", "0x1e").is_err());
        assert!(s.set("delay_type", "1").is_err());
    }
}
