//! `--oml-*` options and `OML_*` environment variables (spec §8.4).
//!
//! Two stages, so that each can be tested alone:
//!
//! 1. [`extract`] removes the `--oml-*` options (and their arguments) from an
//!    argv, validates them and fills the gaps from the environment, giving
//!    [`Options`]. No I/O: the environment is an injected lookup function.
//! 2. [`Options::into_spec`] combines them with an optional configuration file
//!    ([`FileConfig`]) into a [`ClientSpec`].
//!
//! [`parse`] does both, reading the `--oml-config` file in between, and says
//! what the caller should do ([`Outcome`]); printing and exiting is the
//! caller's job.
//!
//! Precedence: command line > environment > configuration file > default.
//! Differences from liboml2, on purpose: every `--oml-*` option is removed
//! wherever it is, `--oml-noop` included (spec §11, defect 21); an unknown
//! `--oml-*` option, a malformed number or an invalid domain is an error
//! rather than being read as 0 or passed on; empty environment variables
//! count as unset.

use std::path::PathBuf;
use std::time::Duration;

use super::error::{ConfigError, Origin, UriError};
use super::options::{self, Key, OptionDef};
use super::value::{self, DEFAULT_BUFSIZE, DEFAULT_CLOCK_INTERVAL, DEFAULT_INSTR_INTERVAL};
use super::{default_file_uri, load_file, uri, FileConfig};
use crate::spec::{
    Backchannel, ClientSpec, DestinationSpec, Encoding, OverloadPolicy, Uri, Window,
};

/// What the `--oml-*` options and `OML_*` variables said, validated, before
/// any configuration file is read. `None` means "not given".
///
/// [`Options::default`] is "nothing given" (instrumentation every second).
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// `--oml-id`, `OML_NAME`.
    pub id: Option<String>,
    /// `--oml-domain`, `OML_DOMAIN`, `OML_EXP_ID`.
    pub domain: Option<String>,
    /// `--oml-collect`, `--oml-file`, `OML_COLLECT`, `OML_SERVER`.
    pub collect: Option<Uri>,
    /// `--oml-config`, `OML_CONFIG`.
    pub config: Option<PathBuf>,
    /// `--oml-samples`, already as a window (0 becomes 1).
    pub samples: Option<Window>,
    /// `--oml-interval`.
    pub interval: Option<Duration>,
    /// `--oml-text` / `--oml-binary` (the last one given).
    pub encoding: Option<Encoding>,
    /// `--oml-bufsize`.
    pub bufsize: Option<usize>,
    /// `--oml-overload`, `OML_OVERLOAD`.
    pub overload: Option<OverloadPolicy>,
    /// `--oml-backchannel`, `OML_BACKCHANNEL`.
    pub backchannel: Option<Backchannel>,
    /// `--oml-exact-doubles`, `OML_EXACT_DOUBLES` (`None`: on).
    pub exact_doubles: Option<bool>,
    /// `--oml-instr-interval`, resolved: 1 s unless given; `None` = disabled.
    pub instr_interval: Option<Duration>,
    /// `--oml-clock-interval`, `OML_CLOCK_INTERVAL`, resolved: 60 s unless
    /// given; `None` = disabled.
    pub clock_interval: Option<Duration>,
    /// `--oml-log-file` (`None` = standard error).
    pub log_file: Option<PathBuf>,
    /// `--oml-log-level`.
    pub log_level: i32,
    /// `--oml-noop`.
    pub noop: bool,
    /// `--oml-help`.
    pub help: bool,
    /// `--oml-list-filters`.
    pub list_filters: bool,
    /// Deprecated spellings used and options overridden, one sentence each,
    /// for the caller to log as warnings.
    pub warnings: Vec<String>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            id: None,
            domain: None,
            collect: None,
            config: None,
            samples: None,
            interval: None,
            encoding: None,
            bufsize: None,
            overload: None,
            backchannel: None,
            exact_doubles: None,
            instr_interval: Some(DEFAULT_INSTR_INTERVAL),
            clock_interval: Some(DEFAULT_CLOCK_INTERVAL),
            log_file: None,
            log_level: 0,
            noop: false,
            help: false,
            list_filters: false,
            warnings: Vec::new(),
        }
    }
}

/// What the caller should do after [`parse`].
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Start measuring with this specification.
    Run(ClientSpec),
    /// `--oml-noop`: measurement disabled (liboml2's `omlc_init` returns 1).
    Noop,
    /// `--oml-help`: print this text and exit successfully.
    Help(String),
    /// `--oml-list-filters`: print the filter list and exit successfully.
    ListFilters,
}

/// [`Outcome`] plus warnings worth logging.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// What to do.
    pub outcome: Outcome,
    /// Deprecated spellings and ignored options, one sentence each.
    pub warnings: Vec<String>,
}

/// Looks up an environment variable (`|name| std::env::var(name).ok()` in
/// production; a map in tests).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Removes the `--oml-*` options from `argv` (from index 1 on; `argv[0]` is
/// the program) and reads them and the `OML_*` variables.
///
/// Both `--oml-opt VALUE` and `--oml-opt=VALUE` are accepted; the last
/// occurrence of an option wins. On error `argv` is left unchanged.
pub fn extract(argv: &mut Vec<String>, env: EnvLookup<'_>) -> Result<Options, ConfigError> {
    let mut opts = Options::default();
    // Resolved values have no "not given" state, so the environment goes
    // first and the command line overrides it.
    if let Some(v) = env("OML_CLOCK_INTERVAL").filter(|v| !v.is_empty()) {
        opts.clock_interval = value::parse_seconds(&v).filter(|d| !d.is_zero());
    }
    let mut remove = vec![false; argv.len()];
    let mut i = 1;
    while i < argv.len() {
        let arg = &argv[i];
        if !arg.starts_with("--oml-") {
            i += 1;
            continue;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (arg.as_str(), None),
        };
        let def = options::find(name).ok_or_else(|| ConfigError::UnknownOption {
            option: name.to_owned(),
        })?;
        remove[i] = true;
        let value = match (def.metavar, inline) {
            (None, Some(v)) => {
                return Err(ConfigError::UnexpectedArgument {
                    option: name.to_owned(),
                    value: v,
                })
            }
            (None, None) => None,
            (Some(_), Some(v)) => Some(v),
            (Some(metavar), None) => {
                let Some(v) = argv.get(i + 1) else {
                    return Err(ConfigError::MissingArgument {
                        option: name.to_owned(),
                        metavar,
                    });
                };
                i += 1;
                remove[i] = true;
                Some(v.clone())
            }
        };
        if let Some(instead) = def.deprecated_for {
            opts.warnings
                .push(format!("option {name} is deprecated; use {instead}"));
        }
        opts.set(def, value.unwrap_or_default())?;
        i += 1;
    }
    opts.apply_env(env)?;
    if opts.samples.is_some() && opts.interval.is_some() {
        opts.warnings
            .push("both --oml-samples and --oml-interval given; the interval wins".into());
    }
    let mut flags = remove.into_iter();
    argv.retain(|_| !flags.next().unwrap_or(false));
    Ok(opts)
}

fn invalid(origin: Origin, value: &str, expected: &str) -> ConfigError {
    ConfigError::InvalidValue {
        origin,
        value: value.to_owned(),
        expected: expected.to_owned(),
    }
}

fn check_domain(domain: String, origin: Origin) -> Result<String, ConfigError> {
    if omsp::names::is_valid_domain(&domain) {
        Ok(domain)
    } else {
        Err(invalid(origin, &domain, value::DOMAIN_SYNTAX))
    }
}

fn check_id(id: String, origin: Origin) -> Result<String, ConfigError> {
    if value::is_valid_id(&id) {
        Ok(id)
    } else {
        Err(invalid(origin, &id, value::ID_SYNTAX))
    }
}

fn collect_uri(text: &str, origin: Origin, warnings: &mut Vec<String>) -> Result<Uri, ConfigError> {
    let parsed = uri::parse(text).map_err(|e| e.with_origin(origin.clone()))?;
    if text.starts_with("tcp:") && !text.starts_with("tcp://") {
        warnings.push(format!(
            "{origin}: the form `tcp:HOST:PORT` is deprecated; use tcp://HOST:PORT"
        ));
    }
    Ok(parsed)
}

impl Options {
    /// Applies one command-line occurrence of `def` with argument `v`.
    fn set(&mut self, def: &OptionDef, v: String) -> Result<(), ConfigError> {
        let origin = Origin::Option(def.name.to_owned());
        match def.key {
            Key::Id => self.id = Some(check_id(v, origin)?),
            Key::Domain => self.domain = Some(check_domain(v, origin)?),
            Key::Collect => self.collect = Some(collect_uri(&v, origin, &mut self.warnings)?),
            Key::File => {
                self.collect = Some(match v.as_str() {
                    "-" => Uri::Stdout,
                    "" => {
                        return Err(ConfigError::Uri {
                            origin: Some(origin),
                            uri: v,
                            problem: UriError::MissingPath {
                                scheme: "file".into(),
                            },
                        })
                    }
                    _ => Uri::File(PathBuf::from(v)),
                })
            }
            Key::Config if v.is_empty() => return Err(invalid(origin, &v, "a file name")),
            Key::Config => self.config = Some(PathBuf::from(v)),
            Key::Samples => {
                let w = v.parse::<i64>().ok().and_then(value::samples_window);
                self.samples = Some(w.ok_or_else(|| invalid(origin, &v, value::SAMPLES_SYNTAX))?);
            }
            Key::Interval => {
                let d = value::parse_seconds(&v).filter(|d| !d.is_zero());
                self.interval = Some(d.ok_or_else(|| invalid(origin, &v, value::INTERVAL_SYNTAX))?);
            }
            Key::Text => self.encoding = Some(Encoding::Text),
            Key::Binary => self.encoding = Some(Encoding::Binary),
            Key::Bufsize => {
                let n = value::parse_bufsize(&v);
                self.bufsize = Some(n.ok_or_else(|| invalid(origin, &v, value::BUFSIZE_SYNTAX))?);
            }
            Key::Overload => self.overload = Some(policy(&v, origin)?),
            Key::Backchannel => self.backchannel = Some(backchannel(&v, origin)?),
            Key::ExactDoubles => self.exact_doubles = Some(on_off(&v, origin)?),
            // As liboml2: 0 or anything unreadable disables the reports.
            Key::InstrInterval => {
                self.instr_interval = value::parse_seconds(&v).filter(|d| !d.is_zero())
            }
            // Same rule as the instrumentation's interval.
            Key::ClockInterval => {
                self.clock_interval = value::parse_seconds(&v).filter(|d| !d.is_zero())
            }
            Key::LogFile => {
                self.log_file = match v.as_str() {
                    "-" => None,
                    "" => return Err(invalid(origin, &v, "a file name, or - for standard error")),
                    _ => Some(PathBuf::from(v)),
                }
            }
            Key::LogLevel => {
                let level = v.parse::<i32>().ok().filter(|l| (-2..=4).contains(l));
                self.log_level =
                    level.ok_or_else(|| invalid(origin, &v, "an integer from -2 to 4"))?;
            }
            Key::Noop => self.noop = true,
            Key::Help => self.help = true,
            Key::ListFilters => self.list_filters = true,
        }
        Ok(())
    }

    /// Fills what the command line left unset from the environment.
    fn apply_env(&mut self, env: EnvLookup<'_>) -> Result<(), ConfigError> {
        // The first non-empty variable of `names`, with its name.
        let get = |names: &[&'static str]| {
            names
                .iter()
                .find_map(|n| env(n).filter(|v| !v.is_empty()).map(|v| (*n, v)))
        };
        let mut warnings = Vec::new();
        if self.id.is_none() {
            if let Some((n, v)) = get(&["OML_NAME"]) {
                self.id = Some(check_id(v, Origin::Env(n.into()))?);
            }
        }
        if self.domain.is_none() {
            if let Some((n, v)) = get(&["OML_DOMAIN", "OML_EXP_ID"]) {
                if n == "OML_EXP_ID" {
                    warnings.push(deprecated_env(n, "OML_DOMAIN"));
                }
                self.domain = Some(check_domain(v, Origin::Env(n.into()))?);
            }
        }
        if self.collect.is_none() {
            if let Some((n, v)) = get(&["OML_COLLECT", "OML_SERVER"]) {
                if n == "OML_SERVER" {
                    warnings.push(deprecated_env(n, "OML_COLLECT"));
                }
                self.collect = Some(collect_uri(&v, Origin::Env(n.into()), &mut warnings)?);
            }
        }
        if self.config.is_none() {
            if let Some((_, v)) = get(&["OML_CONFIG"]) {
                self.config = Some(PathBuf::from(v));
            }
        }
        if self.overload.is_none() {
            if let Some((n, v)) = get(&["OML_OVERLOAD"]) {
                self.overload = Some(policy(&v, Origin::Env(n.into()))?);
            }
        }
        if self.backchannel.is_none() {
            if let Some((n, v)) = get(&["OML_BACKCHANNEL"]) {
                self.backchannel = Some(backchannel(&v, Origin::Env(n.into()))?);
            }
        }
        if self.exact_doubles.is_none() {
            if let Some((n, v)) = get(&["OML_EXACT_DOUBLES"]) {
                self.exact_doubles = Some(on_off(&v, Origin::Env(n.into()))?);
            }
        }
        self.warnings.extend(warnings);
        Ok(())
    }

    /// Builds the specification for application `app` (a name or a path,
    /// whose last `/`-separated part is used), with the configuration file
    /// already read if [`Options::config`] named one.
    ///
    /// `timestamp` (`YYYY-mm-ddtHH.MM.SS±zzzz`, local time) names the default
    /// file when no destination is given at all.
    pub fn into_spec(
        self,
        app: &str,
        file: Option<FileConfig>,
        timestamp: &str,
    ) -> Result<ClientSpec, ConfigError> {
        let app = app_name(app)?;
        let (id, domain, destinations, default_window) = match file {
            Some(file) => {
                let mut destinations = file.destinations;
                for d in &mut destinations {
                    if let Some(b) = self.bufsize {
                        d.bufsize = b;
                    }
                    if let Some(p) = self.overload {
                        d.policy = p;
                    }
                    if let Some(b) = self.backchannel {
                        d.backchannel = b;
                    }
                }
                (
                    self.id.or(file.id),
                    self.domain.or(file.domain),
                    destinations,
                    Window::PerSample,
                )
            }
            None => {
                let uri = self.collect.unwrap_or_else(|| {
                    default_file_uri(&app, self.id.as_deref(), self.domain.as_deref(), timestamp)
                });
                let dest = DestinationSpec {
                    encoding: self.encoding.unwrap_or(value::default_encoding(&uri)),
                    policy: self.overload.unwrap_or(value::default_policy(&uri)),
                    bufsize: self.bufsize.unwrap_or(DEFAULT_BUFSIZE),
                    streams: None,
                    instrumentation: true,
                    backchannel: self.backchannel.unwrap_or_default(),
                    uri,
                };
                let window = match (self.interval, self.samples) {
                    (Some(d), _) => Window::Interval(d),
                    (None, Some(w)) => w,
                    (None, None) => Window::PerSample,
                };
                (self.id, self.domain, vec![dest], window)
            }
        };
        Ok(ClientSpec {
            app,
            id,
            domain,
            destinations,
            default_window,
            reference_doubles: self.exact_doubles == Some(false),
            instr_interval: self.instr_interval,
            clock_interval: self.clock_interval,
            log_file: self.log_file,
            log_level: self.log_level,
            noop: self.noop,
        })
    }

    /// Warnings about command-line options that a configuration file replaces.
    fn file_overrides(&self) -> Vec<String> {
        let mut w = Vec::new();
        let mut note = |given: bool, what: &str| {
            if given {
                w.push(format!("the configuration file replaces {what}; ignored"));
            }
        };
        note(self.collect.is_some(), "the --oml-collect destination");
        note(self.samples.is_some(), "--oml-samples");
        note(self.interval.is_some(), "--oml-interval");
        note(self.encoding.is_some(), "--oml-text/--oml-binary");
        w
    }
}

fn deprecated_env(name: &str, instead: &str) -> String {
    format!("environment variable {name} is deprecated; use {instead}")
}

fn backchannel(v: &str, origin: Origin) -> Result<Backchannel, ConfigError> {
    value::parse_backchannel(v).ok_or_else(|| invalid(origin, v, value::BACKCHANNEL_SYNTAX))
}

fn on_off(v: &str, origin: Origin) -> Result<bool, ConfigError> {
    match v {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(invalid(origin, v, "`on` or `off`")),
    }
}

fn policy(v: &str, origin: Origin) -> Result<OverloadPolicy, ConfigError> {
    value::parse_policy(v).ok_or_else(|| invalid(origin, v, value::POLICY_SYNTAX))
}

/// The application name: the part of `app` after its last `/`, which must be
/// a valid OML name.
pub fn app_name(app: &str) -> Result<String, ConfigError> {
    let name = app.rsplit('/').next().unwrap_or(app);
    if omsp::names::is_valid_name(name) {
        Ok(name.to_owned())
    } else {
        Err(ConfigError::InvalidName {
            origin: Origin::AppName,
            name: name.to_owned(),
        })
    }
}

/// Reads the `--oml-*` options out of `argv` (see [`extract`]), then the
/// configuration file if one is named, and builds the [`ClientSpec`].
///
/// `--oml-help` wins over `--oml-list-filters`, which wins over
/// `--oml-noop`; none of them reads the configuration file.
///
/// ```
/// use client::config::args::{parse, Outcome};
/// use client::spec::{Encoding, Uri, Window};
///
/// let mut argv: Vec<String> = ["ping", "-c", "3", "--oml-collect", "tcp://srv", "--oml-samples=10", "host"]
///     .map(String::from).into();
/// let env = |name: &str| (name == "OML_NAME").then(|| "node1".to_string());
/// let parsed = parse("ping", &mut argv, &env, "2024-05-01t12.00.00+0000").unwrap();
/// assert_eq!(argv, ["ping", "-c", "3", "host"]);
/// let Outcome::Run(spec) = parsed.outcome else { panic!() };
/// assert_eq!(spec.id.as_deref(), Some("node1"));
/// assert_eq!(spec.destinations[0].uri, Uri::Tcp { host: "srv".into(), port: 3003 });
/// assert_eq!(spec.destinations[0].encoding, Encoding::Binary);
/// assert_eq!(spec.default_window, Window::Samples(10));
/// ```
pub fn parse(
    app: &str,
    argv: &mut Vec<String>,
    env: EnvLookup<'_>,
    timestamp: &str,
) -> Result<Parsed, ConfigError> {
    app_name(app)?;
    let mut opts = extract(argv, env)?;
    let mut warnings = std::mem::take(&mut opts.warnings);
    let outcome = if opts.help {
        Outcome::Help(options::help_text())
    } else if opts.list_filters {
        Outcome::ListFilters
    } else if opts.noop {
        Outcome::Noop
    } else {
        let file = match &opts.config {
            Some(path) => {
                warnings.extend(opts.file_overrides());
                Some(load_file(path)?)
            }
            None => None,
        };
        Outcome::Run(opts.into_spec(app, file, timestamp)?)
    };
    Ok(Parsed { outcome, warnings })
}

#[cfg(test)]
mod tests;
