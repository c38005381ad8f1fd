//! Measurement points: where an application injects samples.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use omsp::metadata::subject;
use omsp::names::is_valid_name;
use omsp::{Field, OmlType, ValueRef};

use crate::client::Shared;
use crate::error::ClientError;
use crate::queue::ring::Pushed;

/// A measurement point's definition, shared by its handles and the writer.
#[derive(Debug)]
pub(crate) struct MpDef {
    /// Position in the client's list (the id carried by queue records).
    pub(crate) id: u32,
    /// The MP name (the stream and table names add the app prefix).
    pub(crate) name: String,
    /// Field names and types, in injection order.
    pub(crate) fields: Vec<Field>,
    /// Field types alone (checked on every inject).
    pub(crate) types: Vec<OmlType>,
    /// Samples dropped at inject because the thread's ring was full.
    pub(crate) dropped: AtomicU64,
    /// Samples the writer has taken from the rings (published by the writer).
    pub(crate) taken: AtomicU64,
}

impl MpDef {
    pub(crate) fn new(id: u32, name: &str, fields: Vec<Field>) -> MpDef {
        MpDef {
            id,
            name: name.to_owned(),
            types: fields.iter().map(|f| f.ty).collect(),
            fields,
            dropped: AtomicU64::new(0),
            taken: AtomicU64::new(0),
        }
    }
}

/// A handle on one measurement point, returned by [`crate::Client::add_mp`].
///
/// Cheap to clone, and `Send + Sync`: any number of threads may inject into
/// the same MP at once. Each thread writes into a queue of its own, so
/// injecting threads never contend with each other.
#[derive(Debug, Clone)]
pub struct Mp {
    pub(crate) def: Arc<MpDef>,
    pub(crate) shared: Arc<Shared>,
}

impl Mp {
    /// The MP's name.
    pub fn name(&self) -> &str {
        &self.def.name
    }

    /// The MP's fields, in injection order.
    pub fn fields(&self) -> &[Field] {
        &self.def.fields
    }

    /// Injects one sample: `values` in field order, each of its field's type.
    ///
    /// The values are copied into this thread's queue, timestamped (seconds
    /// since the client started, monotonic) and the call returns; filters,
    /// encoding and I/O happen on the writer thread. When the queue is full,
    /// the client's overload policy applies: with a blocking destination the
    /// call waits for room, otherwise the sample is dropped and counted in
    /// [`crate::Stats`] and `_client_instrumentation` (the call still returns
    /// `Ok`). Errors are only for misuse: wrong arity or types, a client not
    /// started or already closed, a sample larger than a queue.
    #[inline]
    pub fn inject(&self, values: &[ValueRef<'_>]) -> Result<(), ClientError> {
        let shared = &*self.shared;
        let def = &*self.def;
        if values.len() != def.types.len() {
            return Err(self.arity_error(values.len()));
        }
        let Some(size) = crate::record::checked_size(values, &def.types) else {
            return Err(self.type_error(values));
        };
        let Some(ts) = shared.running_clock()? else {
            return Ok(()); // a no-op client (`--oml-noop`)
        };
        match shared
            .rings
            .push(def.id, ts, size, values, || shared.is_running())
        {
            Pushed::Queued => Ok(()),
            other => self.not_queued(other),
        }
    }

    #[cold]
    fn arity_error(&self, found: usize) -> ClientError {
        ClientError::Arity {
            mp: self.def.name.clone(),
            expected: self.def.types.len(),
            found,
        }
    }

    #[cold]
    fn type_error(&self, values: &[ValueRef<'_>]) -> ClientError {
        let def = &*self.def;
        let (i, v, ty) = values
            .iter()
            .zip(&def.types)
            .enumerate()
            .find_map(|(i, (v, &ty))| (v.oml_type() != ty).then_some((i, v, ty)))
            .unwrap_or((0, &values[0], def.types[0]));
        ClientError::Type {
            mp: def.name.clone(),
            field: def.fields[i].name.clone(),
            expected: ty,
            found: v.oml_type(),
        }
    }

    #[cold]
    fn not_queued(&self, p: Pushed) -> Result<(), ClientError> {
        match p {
            Pushed::Queued => Ok(()),
            Pushed::Dropped => {
                self.def.dropped.fetch_add(1, Relaxed);
                Ok(())
            }
            Pushed::Closed => Err(ClientError::Closed),
            Pushed::TooLarge(size) => Err(ClientError::SampleTooLarge {
                size,
                capacity: self.shared.rings.capacity(),
            }),
        }
    }

    /// Injects metadata about this MP's stream (subject `.<app>_<mp>`), or
    /// about one of its fields (subject `.<app>_<mp>.<field>`), as liboml2's
    /// `omlc_inject_metadata` does. `key` must be a valid name.
    pub fn inject_metadata(
        &self,
        key: &str,
        value: &str,
        field: Option<&str>,
    ) -> Result<(), ClientError> {
        if let Some(f) = field {
            if !self.def.fields.iter().any(|x| x.name == f) {
                return Err(ClientError::NoSuchField {
                    mp: self.def.name.clone(),
                    field: f.to_owned(),
                });
            }
        }
        let stream = format!("{}_{}", self.shared.app(), self.def.name);
        self.shared
            .inject_metadata(subject(Some(&stream), field), key, value)
    }
}

/// Checks a metadata key (any subject).
pub(crate) fn check_key(key: &str) -> Result<(), ClientError> {
    if is_valid_name(key) {
        Ok(())
    } else {
        Err(ClientError::InvalidName {
            what: "metadata key",
            name: key.to_owned(),
        })
    }
}
