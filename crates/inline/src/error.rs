//! Errors of the agent library, one enum per kind of operation.

use std::io;

/// A setting (flag, config-file key or `ctl set` argument) was rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SettingsError {
    /// The key is not one of [`crate::settings::KEYS`].
    #[error("unknown setting {key:?}")]
    UnknownKey {
        /// The key as given.
        key: String,
    },
    /// The value does not parse for that key.
    #[error("invalid value {value:?} for {key}: {reason}")]
    InvalidValue {
        /// The key.
        key: &'static str,
        /// The value as given.
        value: String,
        /// What was expected.
        reason: &'static str,
    },
    /// The configuration file is not valid TOML or has a non-scalar value.
    #[error("configuration file: {0}")]
    File(String),
}

/// Loading, attaching, detaching or finding a program failed.
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    /// The interface does not exist in the current network namespace.
    #[error("no interface {ifname:?} in this network namespace")]
    NoInterface {
        /// Interface name.
        ifname: String,
    },
    /// libbpf refused to open or load the embedded object (verifier, permissions).
    #[error("loading {program}: {source}")]
    Load {
        /// Program name.
        program: &'static str,
        /// libbpf's error.
        source: libbpf_rs::Error,
    },
    /// Creating the clsact qdisc or attaching the filter failed.
    #[error("attaching {program} to {ifname}: {source}")]
    Attach {
        /// Program name.
        program: &'static str,
        /// Interface name.
        ifname: String,
        /// libbpf's error.
        source: libbpf_rs::Error,
    },
    /// No program of ours is attached there (for `ctl`).
    #[error("no {program} attached to {ifname} (is the agent running in this namespace?)")]
    NotAttached {
        /// Program name.
        program: &'static str,
        /// Interface name.
        ifname: String,
    },
    /// A map of the program is missing or could not be opened.
    #[error("map {map}: {source}")]
    Map {
        /// Map name.
        map: &'static str,
        /// libbpf's error.
        source: libbpf_rs::Error,
    },
    /// Entering a network namespace failed.
    #[error("network namespace {name}: {source}")]
    Netns {
        /// Namespace name or path.
        name: String,
        /// The system error.
        source: io::Error,
    },
    /// Other system error.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The system error.
        source: io::Error,
    },
}
