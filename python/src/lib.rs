//! `streamgauge._native`: the Python binding of the streamgauge client.
//!
//! Two classes, [`PyClient`] and [`PyMp`], thin over [`client::Client`] and
//! [`client::Mp`]. The Pythonic layer (dataclass schemas, the context
//! manager, the OML4Py compatibility module, reading results) lives in the
//! pure-Python package `streamgauge`; the hot path (`Mp.inject`) is here.
//!
//! Errors are raised as the exception classes of `streamgauge.errors`
//! (one hierarchy under `streamgauge.Error`), never as panics.

mod convert;
mod errors;

use std::time::SystemTime;

use client::config::args::{self, Outcome};
use client::{Client, Mp};
use omsp::OmlType;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::convert::Args;
use crate::errors::{client_error, config_error, raise};

/// A client built from `--oml-*` options, `OML_*` variables and an optional
/// configuration file, as the C library's `omlc_init` does.
#[pyclass(name = "Client", module = "streamgauge._native", frozen)]
struct PyClient {
    /// `None` for `--oml-noop`: every call succeeds and nothing is sent.
    inner: Option<Client>,
    /// The argument vector with the `--oml-*` options removed.
    argv: Vec<String>,
    /// Warnings from option parsing (deprecated spellings, overrides).
    warnings: Vec<String>,
    /// Help text when `--oml-help` was given.
    help: Option<String>,
}

#[pymethods]
impl PyClient {
    /// `app` names the application; `argv` (program first) is searched for
    /// `--oml-*` options, which are removed (see the `argv` attribute).
    #[new]
    #[pyo3(signature = (app, argv, ring_bytes=None, first_seq=None))]
    fn new(
        app: &str,
        argv: Vec<String>,
        ring_bytes: Option<usize>,
        first_seq: Option<i64>,
    ) -> PyResult<PyClient> {
        let mut argv = argv;
        if argv.is_empty() {
            argv.push(app.to_owned());
        }
        let env = |name: &str| std::env::var(name).ok();
        let stamp = client::config::utc_timestamp(SystemTime::now());
        let parsed = args::parse(app, &mut argv, &env, &stamp).map_err(config_error)?;
        let (inner, help) = match parsed.outcome {
            Outcome::Run(spec) => {
                let mut options = client::Options::default();
                if let Some(n) = ring_bytes {
                    options.ring_bytes = n;
                }
                if let Some(n) = first_seq {
                    options.first_seq = n;
                }
                let c = Client::with_options(spec, options).map_err(client_error)?;
                (Some(c), None)
            }
            Outcome::Help(text) => (None, Some(text)),
            Outcome::Noop | Outcome::ListFilters => (None, None),
        };
        Ok(PyClient {
            inner,
            argv,
            warnings: parsed.warnings,
            help,
        })
    }

    /// The argument vector without the `--oml-*` options.
    #[getter]
    fn argv(&self) -> Vec<String> {
        self.argv.clone()
    }

    /// Warnings from option parsing.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    /// The `--oml-help` text, if it was asked for.
    #[getter]
    fn help(&self) -> Option<String> {
        self.help.clone()
    }

    /// False for a no-op client (`--oml-noop`, `--oml-help`).
    #[getter]
    fn enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// The domain sent in headers.
    #[getter]
    fn domain(&self) -> Option<String> {
        self.inner.as_ref().map(|c| c.domain().to_owned())
    }

    /// The sender id sent in headers.
    #[getter]
    fn sender(&self) -> Option<String> {
        self.inner.as_ref().map(|c| c.sender_id().to_owned())
    }

    /// The header's `start-time` (Unix seconds), once started.
    #[getter]
    fn start_time(&self) -> Option<i64> {
        self.inner.as_ref().and_then(Client::start_time)
    }

    /// Defines a measurement point from `[(field, type name), ...]`.
    fn add_mp(&self, name: &str, fields: Vec<(String, String)>) -> PyResult<PyMp> {
        let mut typed = Vec::with_capacity(fields.len());
        for (f, t) in &fields {
            let ty = OmlType::from_name(t).ok_or_else(|| {
                raise(
                    "TypeError",
                    format!("field {f:?} of {name:?}: unknown OML type {t:?}"),
                )
            })?;
            typed.push((f.as_str(), ty));
        }
        let names = fields.iter().map(|(f, _)| f.clone()).collect();
        let types: Vec<OmlType> = typed.iter().map(|(_, t)| *t).collect();
        let mp = match &self.inner {
            Some(c) => Some(c.add_mp(name, &typed).map_err(client_error)?),
            None => None,
        };
        Ok(PyMp {
            inner: mp,
            name: name.to_owned(),
            names,
            types,
        })
    }

    /// Opens the destinations and starts the writer.
    fn start(&self, py: Python<'_>) -> PyResult<()> {
        match &self.inner {
            Some(c) => py.allow_threads(|| c.start()).map_err(client_error),
            None => Ok(()),
        }
    }

    /// Experiment-level metadata (subject `.`).
    fn inject_metadata(&self, key: &str, value: &str) -> PyResult<()> {
        match &self.inner {
            Some(c) => c.inject_metadata(key, value).map_err(client_error),
            None => Ok(()),
        }
    }

    /// Flushes everything and stops the writer; idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        match &self.inner {
            Some(c) => py.allow_threads(|| c.close()).map_err(client_error),
            None => Ok(()),
        }
    }

    /// Counters: `injected`, `dropped_at_inject`, and per destination
    /// `emitted`, `written`, `dropped`, `bytes_written`, `connections`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        let Some(c) = &self.inner else {
            return Ok(out);
        };
        let st = c.stats();
        out.set_item("injected", st.injected)?;
        out.set_item("dropped_at_inject", st.dropped_at_inject)?;
        let dests = PyList::empty(py);
        for d in &st.destinations {
            let x = PyDict::new(py);
            x.set_item("uri", &d.uri)?;
            x.set_item("emitted", d.emitted)?;
            x.set_item("written", d.written)?;
            x.set_item("dropped", d.dropped)?;
            x.set_item("bytes_written", d.bytes_written)?;
            x.set_item("connections", d.connections)?;
            dests.append(x)?;
        }
        out.set_item("destinations", dests)?;
        Ok(out)
    }
}

/// A measurement point: typed fields, `inject` from any thread.
#[pyclass(name = "Mp", module = "streamgauge._native", frozen)]
struct PyMp {
    /// `None` for a no-op client.
    inner: Option<Mp>,
    /// The MP name.
    name: String,
    /// Field names, for dict and object injection.
    names: Vec<String>,
    /// Field types, for conversion.
    types: Vec<OmlType>,
}

#[pymethods]
impl PyMp {
    /// The MP name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// `[(field, type name), ...]`.
    #[getter]
    fn fields(&self) -> Vec<(String, &'static str)> {
        self.names
            .iter()
            .zip(&self.types)
            .map(|(n, t)| (n.clone(), t.name()))
            .collect()
    }

    /// Injects one sample: a tuple or list in field order, a dict keyed by
    /// field name, or any object with one attribute per field (a dataclass
    /// instance). Several positional arguments are taken as the values.
    #[pyo3(signature = (sample, *more))]
    fn inject(
        &self,
        sample: &Bound<'_, PyAny>,
        more: &Bound<'_, pyo3::types::PyTuple>,
    ) -> PyResult<()> {
        let joined;
        let sample = if !more.is_empty() {
            let mut all = vec![sample.clone()];
            all.extend(more.iter());
            joined = pyo3::types::PyTuple::new(sample.py(), all)?.into_any();
            &joined
        } else if self.types.len() == 1 && !convert::is_container(sample) {
            joined = pyo3::types::PyTuple::new(sample.py(), [sample])?.into_any();
            &joined
        } else {
            sample
        };
        let args = Args::from_sample(&self.name, &self.names, &self.types, sample)?;
        match &self.inner {
            Some(mp) => args.with_values(|v| mp.inject(v))?.map_err(client_error),
            None => args.with_values(|_| ()),
        }
    }

    /// Metadata about this stream, or about one of its fields.
    #[pyo3(signature = (key, value, field=None))]
    fn inject_metadata(&self, key: &str, value: &str, field: Option<&str>) -> PyResult<()> {
        match &self.inner {
            Some(mp) => mp.inject_metadata(key, value, field).map_err(client_error),
            None => Ok(()),
        }
    }

    fn __repr__(&self) -> String {
        let fields: Vec<String> = self
            .names
            .iter()
            .zip(&self.types)
            .map(|(n, t)| format!("{n}:{}", t.name()))
            .collect();
        format!("<Mp {} {}>", self.name, fields.join(" "))
    }
}

/// The OML type names this binding accepts (canonical and legacy).
#[pyfunction]
fn type_names() -> Vec<&'static str> {
    OmlType::ALL.iter().map(|t| t.name()).collect()
}

/// Decodes a whole OMSP stream (header, then text or binary tuples) into
/// JSON text: `{"events": [...], "errors": [...]}`, events and errors as
/// `streamgauge decode` prints them (the form of `spec/vectors/*.json`),
/// each error with `events_before`. Runs without the GIL.
#[pyfunction]
fn decode(py: Python<'_>, data: &[u8]) -> String {
    py.allow_threads(|| {
        let mut d = omsp::Decoder::new();
        d.feed(data);
        d.finish();
        let (mut events, mut errors) = (Vec::new(), Vec::new());
        while let Some(r) = d.next_event() {
            match r {
                Ok(ev) => {
                    let name = match &ev {
                        omsp::Event::Sample(s) => d.schema(s.stream).map(|s| s.name.clone()),
                        _ => None,
                    };
                    events.push(omsp::json::event(&ev, |_| name.clone()));
                }
                Err(e) => {
                    let mut j = omsp::json::error(&e);
                    j["events_before"] = events.len().into();
                    errors.push(j);
                }
            }
        }
        serde_json::json!({"events": events, "errors": errors}).to_string()
    })
}

/// The `--oml-*` options, as `--oml-help` prints them.
#[pyfunction]
fn oml_help() -> String {
    client::config::options::help_text()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyClient>()?;
    m.add_class::<PyMp>()?;
    m.add_function(wrap_pyfunction!(type_names, m)?)?;
    m.add_function(wrap_pyfunction!(oml_help, m)?)?;
    m.add_function(wrap_pyfunction!(decode, m)?)?;
    Ok(())
}
