//! Client errors as exceptions of `streamgauge.errors`.

use client::config::ConfigError;
use client::ClientError;
use pyo3::prelude::*;

/// An exception of class `streamgauge.errors.<class>` with `msg`; falls
/// back to `RuntimeError` if the module cannot be imported.
pub(crate) fn raise(class: &str, msg: String) -> PyErr {
    Python::with_gil(|py| {
        let cls = py
            .import("streamgauge.errors")
            .and_then(|m| m.getattr(class));
        match cls {
            Ok(cls) => PyErr::from_type(
                cls.downcast_into()
                    .unwrap_or_else(|_| py.get_type::<pyo3::exceptions::PyRuntimeError>()),
                msg,
            ),
            Err(_) => pyo3::exceptions::PyRuntimeError::new_err(msg),
        }
    })
}

/// The exception for a client error: misuse of types is `TypeError`,
/// lifecycle misuse `StateError`, names and configuration `ConfigError`.
pub(crate) fn client_error(e: ClientError) -> PyErr {
    let class = match &e {
        ClientError::Arity { .. } | ClientError::Type { .. } => "TypeError",
        ClientError::NotStarted | ClientError::Closed | ClientError::AlreadyStarted => "StateError",
        ClientError::SampleTooLarge { .. } => "ValueError",
        _ => "ConfigError",
    };
    raise(class, e.to_string())
}

/// The exception for a configuration error (options, environment, file).
pub(crate) fn config_error(e: ConfigError) -> PyErr {
    raise("ConfigError", e.to_string())
}
