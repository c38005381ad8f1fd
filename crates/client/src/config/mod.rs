//! Configuration front ends: `--oml-*` options, `OML_*` environment
//! variables, and XML or TOML configuration files, all producing a
//! [`ClientSpec`](crate::spec::ClientSpec).
//!
//! Everything here parses and validates without I/O, except [`load_file`],
//! which reads the one file it is given. Unknown options, elements,
//! attributes and keys are errors whose message names the file, the line and
//! what is allowed. Measurement points register at run time, so MP and field
//! *existence* is the runtime's to check; here names are only checked to be
//! valid OML names.
//!
//! | Module | Reads |
//! |---|---|
//! | [`args`] | `--oml-*` options and `OML_*` variables (spec §8.4) |
//! | [`uri`] | collection URIs (`tcp://host:port`, `file:path`, …) |
//! | [`xml`] | liboml2's XML configuration (spec §8.5) |
//! | [`mod@toml`] | the same in TOML, for new users |
//! | [`options`] | the option definitions behind `--oml-help` and the docs |
//!
//! The reference for users is `docs/client-config.md`.
//!
//! # Example
//!
//! ```
//! use client::config::{self, args::Outcome};
//! use client::spec::{Encoding, Uri, Window};
//!
//! // A TOML configuration, as `--oml-config exp.toml` would read it.
//! let file = config::parse_str(
//!     r#"
//!     domain = "exp1"
//!     [[collect]]
//!     url = "tcp://collector:3004"
//!     [[collect.stream]]
//!     mp = "ping"
//!     interval = 1.5
//!     "#,
//!     "exp.toml",
//! )?;
//! let dest = &file.destinations[0];
//! assert_eq!(dest.uri, Uri::Tcp { host: "collector".into(), port: 3004 });
//! assert_eq!(dest.encoding, Encoding::Binary);
//! let streams = dest.streams.as_ref().unwrap();
//! assert_eq!(streams[0].window, Window::Interval(std::time::Duration::from_millis(1500)));
//!
//! // Command-line options, which win over the file's id and domain.
//! let mut argv = vec!["ping".to_string(), "--oml-domain".into(), "exp2".into()];
//! let opts = config::args::extract(&mut argv, &|_| None)?;
//! let spec = opts.into_spec("ping", Some(file), "2024-05-01t12.00.00+0000")?;
//! assert_eq!(spec.domain.as_deref(), Some("exp2"));
//! # Ok::<(), config::ConfigError>(())
//! ```

use std::path::Path;

use crate::spec::DestinationSpec;

pub mod args;
mod default_uri;
mod error;
pub mod options;
pub mod toml;
pub mod uri;
pub mod value;
pub mod xml;

pub use default_uri::{default_file_uri, utc_timestamp};
pub use error::{ConfigError, Location, Origin, UriError};
pub use value::DEFAULT_BUFSIZE;

/// What a configuration file says: identity and destinations.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FileConfig {
    /// `id` (used only when neither `--oml-id` nor `OML_NAME` gave one).
    pub id: Option<String>,
    /// `domain` (used only when neither `--oml-domain` nor the environment gave one).
    pub domain: Option<String>,
    /// One per `<collect>` / `[[collect]]`, in document order; never empty.
    pub destinations: Vec<DestinationSpec>,
}

/// A configuration file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// liboml2's `<omlc>` XML.
    Xml,
    /// streamgauge's TOML.
    Toml,
}

impl Format {
    /// The format of file `name` holding `text`: by extension (`.toml`,
    /// `.xml`), else XML if the first non-blank character is `<`, else TOML.
    pub fn detect(name: &str, text: &str) -> Format {
        let ext = Path::new(name)
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("toml") => Format::Toml,
            Some("xml") => Format::Xml,
            _ if text.trim_start().starts_with('<') => Format::Xml,
            _ => Format::Toml,
        }
    }
}

/// Parses configuration `text`; `name` (usually the file name) chooses the
/// format (see [`Format::detect`]) and prefixes error messages.
pub fn parse_str(text: &str, name: &str) -> Result<FileConfig, ConfigError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match Format::detect(name, text) {
        Format::Xml => xml::parse(text, name),
        Format::Toml => toml::parse(text, name),
    }
}

/// Like [`parse_str`], for bytes that must be UTF-8.
pub fn parse_bytes(bytes: &[u8], name: &str) -> Result<FileConfig, ConfigError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_str(text, name),
        Err(e) => {
            let valid = String::from_utf8_lossy(&bytes[..e.valid_up_to()]);
            Err(ConfigError::NotUtf8 {
                location: Location::at(name, &valid, valid.len()),
            })
        }
    }
}

/// Reads and parses the configuration file at `path`.
pub fn load_file(path: &Path) -> Result<FileConfig, ConfigError> {
    let bytes = std::fs::read(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse_bytes(&bytes, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_detection() {
        assert_eq!(Format::detect("a.toml", "<omlc/>"), Format::Toml);
        assert_eq!(Format::detect("a.TOML", ""), Format::Toml);
        assert_eq!(Format::detect("a.xml", "x = 1"), Format::Xml);
        assert_eq!(Format::detect("a.conf", "  \n<omlc/>"), Format::Xml);
        assert_eq!(Format::detect("a.conf", "id = \"x\""), Format::Toml);
        assert_eq!(Format::detect("noext", ""), Format::Toml);
    }

    #[test]
    fn bytes_must_be_utf8() {
        let err = parse_bytes(b"<omlc>\n\xff", "c.xml").unwrap_err();
        assert_eq!(
            err.to_string(),
            "c.xml:2: configuration files must be UTF-8"
        );
    }

    #[test]
    fn bom_is_skipped() {
        let cfg = parse_str("\u{feff}<omlc><collect url=\"h\"/></omlc>", "c").unwrap();
        assert_eq!(cfg.destinations.len(), 1);
    }

    #[test]
    fn missing_file() {
        let err = load_file(Path::new("/nonexistent/cfg.xml")).unwrap_err();
        assert!(matches!(err, ConfigError::Read { .. }));
        assert!(err.to_string().contains("/nonexistent/cfg.xml"), "{err}");
    }
}
