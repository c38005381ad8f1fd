//! Value syntaxes shared by the options, the XML and the TOML front ends, and
//! the defaults that depend on the destination.
//!
//! Each syntax is defined once here, so that `--oml-overload drop-oldest`,
//! `OML_OVERLOAD=drop-oldest`, `<collect overload="drop-oldest">` and
//! `overload = "drop-oldest"` mean the same thing.

use std::time::Duration;

use crate::spec::{
    Backchannel, DestinationSpec, Encoding, OverloadPolicy, StreamSpec, Uri, Window,
};

use super::error::ConfigError;

/// Default byte budget of each destination's queue: 64 MiB.
///
/// liboml2 defaults to 2 × 1 KiB and silently loses most samples at high
/// rates (spec §11, defect 17); 64 MiB holds about a second of the fastest
/// injection we measured, and only costs memory when it is used.
pub const DEFAULT_BUFSIZE: usize = 64 << 20;

/// How long a TCP destination that makes no progress may block the
/// application before its queue starts dropping the oldest data.
pub const DEFAULT_TCP_STALL_LIMIT: Duration = Duration::from_secs(1);

/// Seconds between `_client_instrumentation` reports unless configured.
pub const DEFAULT_INSTR_INTERVAL: Duration = Duration::from_secs(1);

/// Seconds between `_client_clock` reports unless configured.
pub const DEFAULT_CLOCK_INTERVAL: Duration = Duration::from_secs(60);

/// The overload policy of a destination that does not choose one: block, and
/// for TCP fall back to dropping the oldest data after
/// [`DEFAULT_TCP_STALL_LIMIT`] without progress (a live server loses nothing,
/// a dead one does not freeze the application). Files block without limit.
pub fn default_policy(uri: &Uri) -> OverloadPolicy {
    match uri {
        Uri::Tcp { .. } => OverloadPolicy::Block {
            stall_limit: Some(DEFAULT_TCP_STALL_LIMIT),
        },
        _ => OverloadPolicy::Block { stall_limit: None },
    }
}

/// The command-line (and TOML) encoding default: text for files, binary for
/// TCP, as liboml2's command line. (Its XML defaults to binary everywhere.)
pub fn default_encoding(uri: &Uri) -> Encoding {
    match uri {
        Uri::Tcp { .. } => Encoding::Binary,
        _ => Encoding::Text,
    }
}

/// What [`parse_policy`] accepts, for error messages.
pub const POLICY_SYNTAX: &str =
    "`block`, `block:SECONDS` (block, then drop the oldest after SECONDS without progress), \
     `drop-newest` or `drop-oldest`";

/// Parses an overload policy: `block`, `block:SECONDS`, `drop-newest`, `drop-oldest`.
pub fn parse_policy(text: &str) -> Option<OverloadPolicy> {
    match text {
        "block" => Some(OverloadPolicy::Block { stall_limit: None }),
        "drop-newest" => Some(OverloadPolicy::DropNewest),
        "drop-oldest" => Some(OverloadPolicy::DropOldest),
        _ => {
            let secs = text.strip_prefix("block:")?;
            let limit = parse_seconds(secs).filter(|d| !d.is_zero())?;
            Some(OverloadPolicy::Block {
                stall_limit: Some(limit),
            })
        }
    }
}

/// Writes a policy the way [`parse_policy`] reads it.
pub fn format_policy(policy: OverloadPolicy) -> String {
    match policy {
        OverloadPolicy::Block { stall_limit: None } => "block".into(),
        OverloadPolicy::Block {
            stall_limit: Some(d),
        } => format!("block:{}", format_seconds(d)),
        OverloadPolicy::DropNewest => "drop-newest".into(),
        OverloadPolicy::DropOldest => "drop-oldest".into(),
    }
}

/// What [`parse_backchannel`] accepts.
pub const BACKCHANNEL_SYNTAX: &str = "`off`, `resume` or `feedback`";

/// Parses a back-channel mode (`off`, `resume`, `feedback`).
pub fn parse_backchannel(text: &str) -> Option<Backchannel> {
    match text {
        "off" => Some(Backchannel::Off),
        "resume" => Some(Backchannel::Resume),
        "feedback" => Some(Backchannel::Feedback),
        _ => None,
    }
}

/// The configuration spelling of a back-channel mode.
pub fn format_backchannel(b: Backchannel) -> &'static str {
    match b {
        Backchannel::Off => "off",
        Backchannel::Resume => "resume",
        Backchannel::Feedback => "feedback",
    }
}

/// What [`parse_bufsize`] accepts.
pub const BUFSIZE_SYNTAX: &str =
    "a positive number of bytes, optionally with a binary suffix k, M or G (e.g. 65536, 64M)";

/// Parses a byte count: digits with an optional `k`/`K`, `m`/`M` or `g`/`G`
/// suffix (powers of 1024). Zero is rejected.
pub fn parse_bufsize(text: &str) -> Option<usize> {
    let (digits, shift) = match text.as_bytes().last()? {
        b'k' | b'K' => (&text[..text.len() - 1], 10),
        b'm' | b'M' => (&text[..text.len() - 1], 20),
        b'g' | b'G' => (&text[..text.len() - 1], 30),
        _ => (text, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: usize = digits.parse().ok()?;
    n.checked_mul(1usize << shift).filter(|&n| n > 0)
}

/// Parses an encoding name, `text` or `binary`, in any case.
pub fn parse_encoding(text: &str) -> Option<Encoding> {
    if text.eq_ignore_ascii_case("text") {
        Some(Encoding::Text)
    } else if text.eq_ignore_ascii_case("binary") {
        Some(Encoding::Binary)
    } else {
        None
    }
}

/// The name [`parse_encoding`] reads.
pub fn format_encoding(encoding: Encoding) -> &'static str {
    match encoding {
        Encoding::Text => "text",
        Encoding::Binary => "binary",
    }
}

/// Parses a non-negative number of seconds.
///
/// Plain decimals (`2`, `0.25`, `.5`) are read exactly, to the nanosecond
/// (further digits are truncated); anything else Rust reads as an `f64`
/// (`1e-3`) is converted. Negative, infinite and NaN values are rejected.
pub fn parse_seconds(text: &str) -> Option<Duration> {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    let decimal = !(int.is_empty() && frac.is_empty())
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit());
    if decimal {
        let secs: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
        let mut nanos = 0u32;
        for (i, b) in frac.bytes().take(9).enumerate() {
            nanos += u32::from(b - b'0') * 10u32.pow(8 - i as u32);
        }
        return Some(Duration::new(secs, nanos));
    }
    let f: f64 = text.parse().ok()?;
    Duration::try_from_secs_f64(f).ok()
}

/// Writes a duration in seconds, exactly, in the form [`parse_seconds`] reads.
pub fn format_seconds(d: Duration) -> String {
    let nanos = d.subsec_nanos();
    if nanos == 0 {
        d.as_secs().to_string()
    } else {
        let frac = format!("{nanos:09}");
        format!("{}.{}", d.as_secs(), frac.trim_end_matches('0'))
    }
}

/// A stream or default window from a sample count: 0 means 1 (as the
/// reference); negative counts, which the reference accepts and then never
/// emits (spec §11, defect 26), are rejected.
pub fn samples_window(n: i64) -> Option<Window> {
    match n {
        0 => Some(Window::Samples(1)),
        n if n > 0 => Some(Window::Samples(n)),
        _ => None,
    }
}

/// What [`samples_window`] accepts.
pub const SAMPLES_SYNTAX: &str = "a sample count ≥ 0 (0 means 1)";

/// A window from an interval in seconds, which must be positive.
pub fn interval_window(d: Duration) -> Option<Window> {
    (!d.is_zero()).then_some(Window::Interval(d))
}

/// What interval values accept.
pub const INTERVAL_SYNTAX: &str = "a positive number of seconds, such as 1 or 0.5";

/// True if `id` can go into the `sender-id:` header line: non-empty, no
/// whitespace or control characters (a newline would end the header line).
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty() && !id.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// What [`is_valid_id`] accepts.
pub const ID_SYNTAX: &str = "a non-empty id without whitespace or control characters";

/// The first character of `s` that XML 1.0 cannot carry, if any: a control
/// character other than tab, line feed and carriage return. Every accepted
/// configuration must write back as XML to the same value, so such text is
/// refused in any format rather than changed on the way.
pub fn xml_forbidden(s: &str) -> Option<char> {
    s.chars()
        .find(|&c| c < ' ' && !matches!(c, '\t' | '\n' | '\r'))
}

/// Why [`xml_forbidden`] refused a character.
pub fn xml_forbidden_message(c: char) -> String {
    format!(
        "control character U+{:04X} is not allowed (XML 1.0 carries only tab, line feed and \
         carriage return among the control characters)",
        u32::from(c)
    )
}

/// What a domain may be.
pub const DOMAIN_SYNTAX: &str =
    "1 to 63 characters of A-Z a-z 0-9 _ - . (not starting with `.`), since it names a database";

/// A destination's `<stream>`s as configured: none means "every MP, and
/// `_client_instrumentation`"; a list sends `_client_instrumentation` only
/// when it names it. Returns the destination's streams and that flag.
pub fn selected_streams(streams: Vec<StreamSpec>) -> (Option<Vec<StreamSpec>>, bool) {
    if streams.is_empty() {
        return (None, true);
    }
    let instrumentation = streams.iter().any(|s| s.mp == "_client_instrumentation");
    (Some(streams), instrumentation)
}

/// What [`parse_encoding`] accepts.
pub const ENCODING_SYNTAX: &str = "`binary` or `text`";

/// A destination's options as written in either configuration form (TOML
/// `[[collect]]`, XML `<collect>`), before they are checked: one builder
/// gives both forms the same rules and the same defaults (except the
/// encoding's, which the form chooses).
#[derive(Debug, Default, Clone, Copy)]
pub struct DestinationOptions<'a> {
    /// `encoding`.
    pub encoding: Option<&'a str>,
    /// `overload`.
    pub overload: Option<&'a str>,
    /// `bufsize`, as text (a TOML integer is given as its digits).
    pub bufsize: Option<&'a str>,
    /// `backchannel`.
    pub backchannel: Option<&'a str>,
}

impl DestinationOptions<'_> {
    /// The destination to `uri` with these options and `streams` (see
    /// [`selected_streams`]). A value that does not parse is handed to
    /// `invalid(key, value, syntax)`, which makes the form's error (with
    /// its file, line and table).
    pub fn build(
        self,
        uri: Uri,
        default_encoding: Encoding,
        streams: Vec<StreamSpec>,
        invalid: impl Fn(&str, &str, &str) -> ConfigError,
    ) -> Result<DestinationSpec, ConfigError> {
        fn field<T>(
            text: Option<&str>,
            default: T,
            parse: impl Fn(&str) -> Option<T>,
            fail: impl FnOnce(&str) -> ConfigError,
        ) -> Result<T, ConfigError> {
            match text {
                None => Ok(default),
                Some(v) => parse(v).ok_or_else(|| fail(v)),
            }
        }
        let encoding = field(self.encoding, default_encoding, parse_encoding, |v| {
            invalid("encoding", v, ENCODING_SYNTAX)
        })?;
        let policy = field(self.overload, default_policy(&uri), parse_policy, |v| {
            invalid("overload", v, POLICY_SYNTAX)
        })?;
        let bufsize = field(self.bufsize, DEFAULT_BUFSIZE, parse_bufsize, |v| {
            invalid("bufsize", v, BUFSIZE_SYNTAX)
        })?;
        let backchannel = field(self.backchannel, Backchannel::Off, parse_backchannel, |v| {
            invalid("backchannel", v, BACKCHANNEL_SYNTAX)
        })?;
        let (streams, instrumentation) = selected_streams(streams);
        Ok(DestinationSpec {
            uri,
            encoding,
            policy,
            bufsize,
            streams,
            instrumentation,
            backchannel,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies() {
        assert_eq!(
            parse_policy("block"),
            Some(OverloadPolicy::Block { stall_limit: None })
        );
        assert_eq!(
            parse_policy("block:1.5"),
            Some(OverloadPolicy::Block {
                stall_limit: Some(Duration::from_millis(1500))
            })
        );
        assert_eq!(
            parse_policy("drop-newest"),
            Some(OverloadPolicy::DropNewest)
        );
        assert_eq!(
            parse_policy("drop-oldest"),
            Some(OverloadPolicy::DropOldest)
        );
        for bad in [
            "", "Block", "block:", "block:0", "block:-1", "drop", "block:x",
        ] {
            assert_eq!(parse_policy(bad), None, "{bad}");
        }
        for p in [
            OverloadPolicy::Block { stall_limit: None },
            OverloadPolicy::Block {
                stall_limit: Some(Duration::new(3, 1)),
            },
            OverloadPolicy::DropNewest,
            OverloadPolicy::DropOldest,
        ] {
            assert_eq!(parse_policy(&format_policy(p)), Some(p));
        }
    }

    #[test]
    fn defaults_depend_on_the_destination() {
        let tcp = Uri::Tcp {
            host: "h".into(),
            port: 1,
        };
        assert_eq!(
            default_policy(&tcp),
            OverloadPolicy::Block {
                stall_limit: Some(Duration::from_secs(1))
            }
        );
        assert_eq!(
            default_policy(&Uri::Stdout),
            OverloadPolicy::Block { stall_limit: None }
        );
        assert_eq!(default_encoding(&tcp), Encoding::Binary);
        assert_eq!(default_encoding(&Uri::File("x".into())), Encoding::Text);
        assert_eq!(DEFAULT_BUFSIZE, 67_108_864);
    }

    #[test]
    fn bufsizes() {
        assert_eq!(parse_bufsize("2048"), Some(2048));
        assert_eq!(parse_bufsize("64k"), Some(65536));
        assert_eq!(parse_bufsize("64M"), Some(DEFAULT_BUFSIZE));
        assert_eq!(parse_bufsize("1G"), Some(1 << 30));
        for bad in [
            "",
            "0",
            "0k",
            "k",
            "-1",
            "1.5M",
            "1 M",
            "1T",
            "99999999999999999999",
        ] {
            assert_eq!(parse_bufsize(bad), None, "{bad}");
        }
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_seconds("0.25"), Some(Duration::from_millis(250)));
        assert_eq!(parse_seconds(".5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_seconds("5."), Some(Duration::from_secs(5)));
        assert_eq!(parse_seconds("1e-3"), Some(Duration::from_millis(1)));
        assert_eq!(
            parse_seconds("0.1234567891"),
            Some(Duration::new(0, 123_456_789))
        );
        for bad in ["", ".", "-1", "inf", "NaN", "1,5", "x", "-0.5", "1e400"] {
            assert_eq!(parse_seconds(bad), None, "{bad}");
        }
        for d in [
            Duration::ZERO,
            Duration::new(1, 0),
            Duration::new(0, 1),
            Duration::new(u64::MAX, 999_999_999),
            Duration::from_millis(1500),
        ] {
            assert_eq!(parse_seconds(&format_seconds(d)), Some(d), "{d:?}");
        }
        assert_eq!(format_seconds(Duration::from_millis(1500)), "1.5");
    }

    #[test]
    fn windows_and_names() {
        assert_eq!(samples_window(0), Some(Window::Samples(1)));
        assert_eq!(samples_window(10), Some(Window::Samples(10)));
        assert_eq!(samples_window(-1), None);
        assert_eq!(interval_window(Duration::ZERO), None);
        assert!(is_valid_id("node-1.x"));
        for bad in ["", "a b", "a\nb", "a\tb"] {
            assert!(!is_valid_id(bad), "{bad:?}");
        }
        assert_eq!(parse_encoding("TEXT"), Some(Encoding::Text));
        assert_eq!(parse_encoding("Binary"), Some(Encoding::Binary));
        assert_eq!(parse_encoding("json"), None);
    }
}
