//! The `--oml-*` options, each defined once: [`args`](super::args) parses
//! them, [`help_text`] and [`markdown_table`] describe them (the table in
//! `docs/client-config.md` is generated from it and checked by a test).

/// What an option sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    Id,
    Domain,
    Collect,
    File,
    Config,
    Samples,
    Interval,
    Text,
    Binary,
    Bufsize,
    Overload,
    Backchannel,
    ExactDoubles,
    InstrInterval,
    ClockInterval,
    LogFile,
    LogLevel,
    Noop,
    Help,
    ListFilters,
}

/// One `--oml-*` option.
#[derive(Debug, Clone, Copy)]
pub struct OptionDef {
    /// The option, e.g. `--oml-id`.
    pub name: &'static str,
    /// What its argument stands for, e.g. `URI`; `None` for flags.
    pub metavar: Option<&'static str>,
    /// Environment variables read, in order, when the option is absent.
    pub env: &'static [&'static str],
    /// The default, as shown in the help.
    pub default: &'static str,
    /// What it does.
    pub help: &'static str,
    /// For a deprecated spelling, what to write instead.
    pub deprecated_for: Option<&'static str>,
    pub(crate) key: Key,
}

impl OptionDef {
    const fn new(name: &'static str, metavar: Option<&'static str>, key: Key) -> OptionDef {
        OptionDef {
            name,
            metavar,
            env: &[],
            default: "",
            help: "",
            deprecated_for: None,
            key,
        }
    }
    const fn env(mut self, env: &'static [&'static str]) -> OptionDef {
        self.env = env;
        self
    }
    const fn default(mut self, default: &'static str) -> OptionDef {
        self.default = default;
        self
    }
    const fn help(mut self, help: &'static str) -> OptionDef {
        self.help = help;
        self
    }
    const fn deprecated(mut self, instead: &'static str) -> OptionDef {
        self.deprecated_for = Some(instead);
        self
    }
}

/// Every option, in help order. Deprecated spellings follow their replacement.
pub static OPTIONS: &[OptionDef] = &[
    OptionDef::new("--oml-id", Some("ID"), Key::Id)
        .env(&["OML_NAME"])
        .default("none (the library chooses)")
        .help("Sender id, written as `sender-id:` in the header."),
    OptionDef::new("--oml-domain", Some("DOMAIN"), Key::Domain)
        .env(&["OML_DOMAIN", "OML_EXP_ID"])
        .default("none")
        .help("Experimental domain: the database the server writes to."),
    OptionDef::new("--oml-exp-id", Some("DOMAIN"), Key::Domain)
        .help("Same as --oml-domain.")
        .deprecated("--oml-domain"),
    OptionDef::new("--oml-collect", Some("URI"), Key::Collect)
        .env(&["OML_COLLECT", "OML_SERVER"])
        .default("file:APP[_ID][_DOMAIN]_TIMESTAMP")
        .help(
            "Destination: tcp://HOST[:PORT] (port 3003 by default, IPv6 in brackets), \
             file:PATH, file:- (standard output), flushfile:PATH or flush:PATH.",
        ),
    OptionDef::new("--oml-server", Some("URI"), Key::Collect)
        .help("Same as --oml-collect.")
        .deprecated("--oml-collect"),
    OptionDef::new("--oml-file", Some("PATH"), Key::File)
        .help("Same as --oml-collect file:PATH; `-` is standard output.")
        .deprecated("--oml-collect file:PATH"),
    OptionDef::new("--oml-config", Some("FILE"), Key::Config)
        .env(&["OML_CONFIG"])
        .default("none")
        .help(
            "Configuration file, XML (liboml2's format) or TOML (chosen by a .toml extension, \
             else by content). Its destinations and streams replace --oml-collect, \
             --oml-samples, --oml-interval, --oml-text and --oml-binary; its id and domain \
             apply only when neither option nor environment gave one.",
        ),
    OptionDef::new("--oml-samples", Some("N"), Key::Samples)
        .default("1 (one row per injected sample)")
        .help(
            "Default window: one row every N samples, averaging numeric fields \
             (0 means 1; negative counts are rejected).",
        ),
    OptionDef::new("--oml-interval", Some("SECONDS"), Key::Interval)
        .default("none")
        .help(
            "Default window: one row every SECONDS (a positive decimal), averaging numeric \
             fields. Wins over --oml-samples.",
        ),
    OptionDef::new("--oml-text", None, Key::Text)
        .default("text for files, binary for TCP")
        .help("Text encoding for the command-line destination."),
    OptionDef::new("--oml-binary", None, Key::Binary)
        .default("text for files, binary for TCP")
        .help("Binary encoding for the command-line destination."),
    OptionDef::new("--oml-bufsize", Some("BYTES"), Key::Bufsize)
        .default("64M")
        .help(
            "Queue size of every destination, in bytes, with an optional k, M or G suffix \
             (powers of 1024). Overrides the configuration file.",
        ),
    OptionDef::new("--oml-overload", Some("POLICY"), Key::Overload)
        .env(&["OML_OVERLOAD"])
        .default("block:1 for TCP, block for files")
        .help(
            "What a full queue does: `block` (the application waits), `block:SECONDS` \
             (waits, but drops the oldest data while the destination has made no progress \
             for SECONDS), `drop-newest` or `drop-oldest`. Overrides the configuration file.",
        ),
    OptionDef::new("--oml-backchannel", Some("MODE"), Key::Backchannel)
        .env(&["OML_BACKCHANNEL"])
        .default("off")
        .help(
            "streamgauge extension for TCP destinations: `resume` asks the receiver to \
             acknowledge what it stored and to say where to resume after a reconnection \
             (nothing lost or duplicated); `feedback` also accepts control messages that \
             change sampling, streams, filters or pause the destination. Only towards a \
             streamgauge server or proxy (a stock oml2-server ignores it; a stock \
             oml2-proxy-server rejects it). Overrides the configuration file.",
        ),
    OptionDef::new("--oml-exact-doubles", Some("MODE"), Key::ExactDoubles)
        .env(&["OML_EXACT_DOUBLES"])
        .default("on")
        .help(
            "streamgauge extension for binary TCP destinations: `on` offers the receiver \
             exact doubles (header key `x-streamgauge-doubles`); a streamgauge server \
             confirms and stores every double exactly, a stock oml2-server ignores the \
             offer and gets the reference's 30-bit encoding as before. `off` never offers \
             them: use it towards a stock oml2-proxy-server, which rejects unknown header \
             keys.",
        ),
    OptionDef::new("--oml-instr-interval", Some("SECONDS"), Key::InstrInterval)
        .default("1")
        .help(
            "Seconds between `_client_instrumentation` reports; 0, a negative or an \
             unreadable value disables them.",
        ),
    OptionDef::new("--oml-clock-interval", Some("SECONDS"), Key::ClockInterval)
        .env(&["OML_CLOCK_INTERVAL"])
        .default("60")
        .help(
            "streamgauge extension: seconds between `_client_clock` reports (the clock's \
             synchronisation source, offset and error bounds, see docs/clock.md), sent to \
             TCP destinations at start and then periodically; 0, a negative or an \
             unreadable value disables them.",
        ),
    OptionDef::new("--oml-log-file", Some("FILE"), Key::LogFile)
        .default("- (standard error)")
        .help("Log file; `-` is standard error."),
    OptionDef::new("--oml-log-level", Some("LEVEL"), Key::LogLevel)
        .default("0")
        .help("Log level from -2 (errors only) through 0 (info) to 4 (debug4)."),
    OptionDef::new("--oml-noop", None, Key::Noop)
        .help("Disable measurement: the library is initialised but injects nothing."),
    OptionDef::new("--oml-help", None, Key::Help).help("Print this help and exit."),
    OptionDef::new("--oml-list-filters", None, Key::ListFilters)
        .help("List the available filters and exit."),
];

/// Looks an option up by its exact name.
pub fn find(name: &str) -> Option<&'static OptionDef> {
    OPTIONS.iter().find(|o| o.name == name)
}

fn usage(o: &OptionDef) -> String {
    match o.metavar {
        Some(m) => format!("{} {m}", o.name),
        None => o.name.to_owned(),
    }
}

/// The `--oml-help` text.
pub fn help_text() -> String {
    let mut out = String::from(
        "Measurement options (removed from the command line before the application sees \
         them;\n`--oml-OPTION=VALUE` works too). Command line > environment > --oml-config \
         file > default.\n\n",
    );
    for o in OPTIONS.iter().filter(|o| o.deprecated_for.is_none()) {
        out.push_str(&format!("  {}\n", usage(o)));
        for line in wrap(o.help, 70) {
            out.push_str(&format!("        {line}\n"));
        }
        if !o.env.is_empty() {
            out.push_str(&format!("        Environment: {}\n", o.env.join(", then ")));
        }
        if !o.default.is_empty() {
            out.push_str(&format!("        Default: {}\n", o.default));
        }
    }
    out.push_str("\nDeprecated spellings, still accepted:\n");
    for o in OPTIONS {
        if let Some(instead) = o.deprecated_for {
            out.push_str(&format!("  {:<24} use {instead}\n", usage(o)));
        }
    }
    out
}

/// The option reference as a Markdown table (for `docs/client-config.md`).
pub fn markdown_table() -> String {
    let mut out = String::from("| Option | Environment | Default | Effect |\n|---|---|---|---|\n");
    for o in OPTIONS {
        let env: Vec<String> = o.env.iter().map(|e| format!("`{e}`")).collect();
        let help = match o.deprecated_for {
            Some(d) => format!("Deprecated: use `{d}`. {}", o.help),
            None => o.help.to_owned(),
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            usage(o),
            if env.is_empty() {
                "—".into()
            } else {
                env.join(", then ")
            },
            if o.default.is_empty() {
                "—"
            } else {
                o.default
            },
            help.replace('|', "\\|"),
        ));
    }
    out
}

fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_prefixed() {
        for (i, o) in OPTIONS.iter().enumerate() {
            assert!(o.name.starts_with("--oml-"), "{}", o.name);
            assert!(!o.help.is_empty(), "{}", o.name);
            assert!(
                OPTIONS[i + 1..].iter().all(|p| p.name != o.name),
                "{} twice",
                o.name
            );
            assert!(std::ptr::eq(find(o.name).unwrap(), o));
        }
        assert!(find("--oml-nope").is_none());
    }

    #[test]
    fn help_lists_every_option_env_and_default() {
        let help = help_text();
        for o in OPTIONS {
            assert!(help.contains(o.name), "{}", o.name);
            for e in o.env {
                assert!(help.contains(e), "{e}");
            }
            assert!(help.contains(o.default), "{}", o.default);
        }
        assert!(help.lines().all(|l| l.chars().count() <= 100), "{help}");
    }

    #[test]
    fn wrapping() {
        assert_eq!(wrap("a bb ccc", 4), ["a bb", "ccc"]);
        assert!(wrap("", 4).is_empty());
    }
}
