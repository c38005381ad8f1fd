//! Which streams exist, with which index, columns and filters.
//!
//! Index assignment follows liboml2: 0 is `_experiment_metadata`, 1 is
//! `_client_instrumentation` when it is reported anywhere, then measurement
//! points in the order they were added, and for each MP its streams,
//! destination by destination in configuration order. Indices are global
//! across destinations (each destination only declares its own streams, so
//! it can see gaps); a stream name already given an index on another
//! destination reuses it, as the reference reuses a named stream.

use std::collections::HashMap;

use omsp::names::is_valid_name;
use omsp::{Field, OmlType, Schema};

use crate::error::ClientError;
use crate::mp::MpDef;
use crate::spec::{ClientSpec, DestinationSpec, Encoding, FilterSpec, StreamSpec};
use crate::stream::{Body, Recipe, Stream, Thin, Window};

/// Hands out stream indices.
#[derive(Debug)]
pub(crate) struct Indexer {
    /// Next free index.
    next: u32,
    /// Indices already given, by table name.
    by_name: HashMap<String, u32>,
}

impl Indexer {
    /// Starts at `first` (2 with instrumentation, else 1).
    pub(crate) fn new(first: u32) -> Indexer {
        Indexer {
            next: first,
            by_name: HashMap::new(),
        }
    }

    /// Reserves the next free index for a stream of the client's own
    /// (`_client_clock`), or returns the one it has.
    pub(crate) fn reserve(&mut self, table: &str) -> u32 {
        self.index_for(table)
    }

    /// The index of stream `table`.
    fn index_for(&mut self, table: &str) -> u32 {
        if let Some(&i) = self.by_name.get(table) {
            return i;
        }
        let i = self.next;
        self.next += 1;
        self.by_name.insert(table.to_owned(), i);
        i
    }
}

/// Checks that every configured stream names a defined MP and valid names.
pub(crate) fn check_streams(
    dests: &[DestinationSpec],
    mps: &[std::sync::Arc<MpDef>],
) -> Result<(), ClientError> {
    for s in dests.iter().filter_map(|d| d.streams.as_ref()).flatten() {
        let stream = s.name.clone().unwrap_or_else(|| s.mp.clone());
        if !mps.iter().any(|m| m.name == s.mp) {
            let valid: Vec<&str> = mps.iter().map(|m| m.name.as_str()).collect();
            return Err(ClientError::UnknownMp {
                stream,
                mp: s.mp.clone(),
                valid: valid.join(", "),
            });
        }
        if let Some(n) = &s.name {
            if !is_valid_name(n) {
                return Err(ClientError::InvalidName {
                    what: "stream",
                    name: n.clone(),
                });
            }
        }
        for f in &s.filters {
            if let Some(r) = &f.rename {
                if !is_valid_name(r) {
                    return Err(ClientError::InvalidName {
                        what: "column prefix",
                        name: r.clone(),
                    });
                }
            }
        }
    }
    Ok(())
}

/// Builds the streams of `mp` on destination `dest`: its configured
/// streams, or one default stream when the destination lists none.
pub(crate) fn streams_for(
    app: &str,
    mp: &MpDef,
    dest: &DestinationSpec,
    default_window: crate::spec::Window,
    indexer: &mut Indexer,
) -> Result<Vec<Stream>, ClientError> {
    let default;
    let specs: Vec<&StreamSpec> = match &dest.streams {
        Some(list) => list.iter().filter(|s| s.mp == mp.name).collect(),
        None => {
            default = StreamSpec {
                mp: mp.name.clone(),
                name: None,
                window: default_window,
                filters: Vec::new(),
            };
            vec![&default]
        }
    };
    let mut out = Vec::with_capacity(specs.len());
    for s in specs {
        let stream = build(app, mp, s, indexer)?;
        check_limits(&stream, dest)?;
        out.push(stream);
    }
    Ok(out)
}

fn build(
    app: &str,
    mp: &MpDef,
    s: &StreamSpec,
    indexer: &mut Indexer,
) -> Result<Stream, ClientError> {
    let table = format!("{app}_{}", s.name.as_deref().unwrap_or(&mp.name));
    let window = Window::of(s.window);
    let aggregating = window.aggregates();
    let defaults: Vec<FilterSpec>;
    let filter_specs: &[FilterSpec] = if s.filters.is_empty() {
        defaults = mp
            .fields
            .iter()
            .map(|f| FilterSpec {
                field: f.name.clone(),
                operation: None,
                rename: None,
                properties: Vec::new(),
            })
            .collect();
        &defaults
    } else {
        &s.filters
    };
    // Resolve fields and operations first.
    let mut resolved = Vec::with_capacity(filter_specs.len());
    for f in filter_specs {
        let Some(field) = mp.fields.iter().position(|x| x.name == f.field) else {
            let valid: Vec<&str> = mp.fields.iter().map(|x| x.name.as_str()).collect();
            return Err(ClientError::UnknownField {
                stream: table,
                mp: mp.name.clone(),
                field: f.field.clone(),
                valid: valid.join(", "),
            });
        };
        let ty = mp.fields[field].ty;
        let op = match &f.operation {
            Some(op) => op.as_str(),
            None => filters::default_operation(ty, aggregating),
        };
        let prefix = f.rename.as_deref().unwrap_or(&f.field);
        resolved.push((field, ty, op, prefix, f));
    }
    let pass = !aggregating && resolved.iter().all(|r| r.2 == "first");
    let mut columns = Vec::new();
    let body = if pass {
        for &(_, ty, _, prefix, _) in &resolved {
            columns.push(Field::new(prefix, ty));
        }
        Body::Pass(resolved.iter().map(|r| r.0).collect())
    } else {
        let mut list = Vec::with_capacity(resolved.len());
        let mut recipes = Vec::with_capacity(resolved.len());
        for &(field, ty, op, prefix, f) in &resolved {
            recipes.push(Recipe {
                op: op.to_owned(),
                prefix: prefix.to_owned(),
                ty,
                properties: f.properties.clone(),
            });
            let filter = filters::create(op, prefix, ty, &f.properties).map_err(|source| {
                ClientError::Filter {
                    stream: table.clone(),
                    field: f.field.clone(),
                    source: Box::new(source),
                }
            })?;
            for o in filter.outputs() {
                columns.push(Field::new(filters::column_name(prefix, o), o.ty));
            }
            list.push((field, filter));
        }
        Body::Filters {
            filters: list,
            recipes,
            row: Vec::new(),
            samples: 0,
        }
    };
    let index = indexer.index_for(&table);
    let schema = Schema::new(index, table.clone(), columns).map_err(|e| match e {
        omsp::SchemaError::DuplicateField(name) => ClientError::DuplicateField {
            mp: table.clone(),
            field: name,
        },
        _ => ClientError::InvalidName {
            what: "column",
            name: e.to_string(),
        },
    })?;
    Ok(Stream {
        schema,
        mp: mp.id,
        window,
        body,
        seq: 0,
        enabled: true,
        thin: Thin::All,
    })
}

/// Binary tuples address indices 0..=255 and carry at most 255 values.
fn check_limits(s: &Stream, dest: &DestinationSpec) -> Result<(), ClientError> {
    if dest.encoding != Encoding::Binary {
        return Ok(());
    }
    if s.schema.index > 255 {
        return Err(ClientError::TooManyStreams {
            uri: crate::destination::label(&dest.uri),
            name: s.schema.name.clone(),
            index: s.schema.index,
        });
    }
    if s.schema.fields.len() > 255 {
        return Err(ClientError::TooManyColumns {
            name: s.schema.name.clone(),
            columns: s.schema.fields.len(),
        });
    }
    Ok(())
}

/// The schema-0 value that declares `schema` after the header
/// (`<index> <name> <f>:<t> ...`, no trailing space).
pub(crate) fn declaration(schema: &Schema) -> String {
    schema.to_string()
}

/// Field definitions of a new MP, validated.
pub(crate) fn mp_fields(mp: &str, fields: &[(&str, OmlType)]) -> Result<Vec<Field>, ClientError> {
    if !is_valid_name(mp) {
        return Err(ClientError::InvalidName {
            what: "measurement point",
            name: mp.to_owned(),
        });
    }
    if fields.is_empty() {
        return Err(ClientError::NoFields(mp.to_owned()));
    }
    let mut out: Vec<Field> = Vec::with_capacity(fields.len());
    for &(name, ty) in fields {
        if !is_valid_name(name) {
            return Err(ClientError::InvalidName {
                what: "field",
                name: name.to_owned(),
            });
        }
        if out.iter().any(|f| f.name == name) {
            return Err(ClientError::DuplicateField {
                mp: mp.to_owned(),
                field: name.to_owned(),
            });
        }
        out.push(Field::new(name, ty));
    }
    Ok(out)
}

/// Streams of an MP added after start: a default stream on each destination
/// without an explicit stream list.
pub(crate) fn late_streams(
    spec: &ClientSpec,
    app: &str,
    def: &MpDef,
    indexer: &mut Indexer,
) -> Result<Vec<(usize, Stream)>, ClientError> {
    let mut out = Vec::new();
    for (d, dest) in spec.destinations.iter().enumerate() {
        if dest.streams.is_some() {
            continue;
        }
        let streams = streams_for(app, def, dest, spec.default_window, indexer)?;
        for s in streams {
            let len = declaration(&s.schema).len();
            if dest.encoding == Encoding::Binary && len > 254 {
                return Err(ClientError::DeclarationTooLong {
                    name: s.schema.name.clone(),
                    len,
                });
            }
            out.push((d, s));
        }
    }
    Ok(out)
}
