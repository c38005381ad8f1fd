//! Discovery: what domains, senders, streams and fields exist, with row
//! counts, time spans and units. Blocking functions over a [`Source`].

use omsp::Schema;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::QueryError;
use crate::export::{columns, ExportError, Source};
use crate::format::json::type_name;
use crate::sql::{Dialect, PgType, Sql, Value};

/// A domain in the list.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DomainSummary {
    /// The experiment domain.
    pub name: String,
    /// How many streams it has.
    pub streams: usize,
}

/// One sender of a domain.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Sender {
    /// `oml_sender_id` in the stream tables.
    pub id: i64,
    /// The name it connected with.
    pub name: String,
    /// Its clock, as the sender reported it and the server estimated it
    /// (`_streamgauge_clock`, docs/clock.md); absent for databases written
    /// before clock awareness.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock: Option<SenderClock>,
}

/// What is known of a sender's clock: whether two senders' timestamps can
/// be compared at fine resolution.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct SenderClock {
    /// Sender clock minus server clock, in seconds, estimated by the server
    /// from the first tuples (network delay not subtracted).
    pub offset: Option<f64>,
    /// `ntp`, `ptp`, `none` or `unknown`, as the client reported it
    /// (absent for stock OML clients).
    pub source: Option<String>,
    /// The synchronisation daemon the client saw running.
    pub daemon: Option<String>,
    /// Whether the kernel said the clock was synchronised.
    pub synchronized: Option<bool>,
    /// The kernel's maximum error bound, seconds.
    pub maxerror: Option<f64>,
    /// The kernel's estimated error, seconds.
    pub esterror: Option<f64>,
}

/// One metadata tuple of `_experiment_metadata` (client metadata, not
/// the bookkeeping rows).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MetadataEntry {
    /// `.`, `.<stream>` or `.<stream>.<field>`.
    pub subject: Option<String>,
    /// The key.
    pub key: Option<String>,
    /// The value.
    pub value: Option<String>,
}

/// `GET /api/v1/domains/{domain}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DomainInfo {
    /// The domain.
    pub name: String,
    /// Unix seconds of the experiment's start (timestamps count from it).
    pub start_time: Option<i64>,
    /// Senders, by id.
    pub senders: Vec<Sender>,
    /// Stream names.
    pub streams: Vec<String>,
    /// Client metadata.
    pub metadata: Vec<MetadataEntry>,
}

/// A field of a stream.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FieldInfo {
    /// Column name.
    pub name: String,
    /// OML type (`int32`, `uint64`, `double`, …; `int64` for the row
    /// bookkeeping columns, `time` for the timestamps).
    #[serde(rename = "type")]
    pub ty: String,
    /// Unit, where the client declared one (metadata key `unit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// What the values are, where the client declared it (metadata key
    /// `kind`): `counter` for a cumulative count, whose rate
    /// (`rows?derive=rate`) is what a chart should show.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// `GET /api/v1/domains/{domain}/streams/{stream}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StreamInfo {
    /// Stream (table) name.
    pub name: String,
    /// Columns: bookkeeping first, then the fields.
    pub fields: Vec<FieldInfo>,
    /// Rows stored.
    pub rows: u64,
    /// `oml_ts_server` of the first and last row (seconds after the start).
    pub server_time: Option<[f64; 2]>,
    /// Smallest and largest `oml_ts_client`.
    pub client_time: Option<[f64; 2]>,
}

/// The measurement streams of a domain (the metadata stream
/// `_experiment_metadata` is shown by the domain itself).
pub fn streams(src: &mut Source) -> Result<Vec<Schema>, ExportError> {
    let mut s = src.streams()?;
    s.retain(|s| s.name != omsp::metadata::SCHEMA0_NAME);
    Ok(s)
}

/// The stream `stream` of an open domain; 404 listing them otherwise.
pub fn find_stream(src: &mut Source, domain: &str, stream: &str) -> Result<Schema, QueryError> {
    let streams = streams(src).map_err(|e| QueryError::db(e, None))?;
    streams
        .iter()
        .find(|s| s.name == stream)
        .cloned()
        .ok_or_else(|| QueryError::UnknownStream {
            domain: domain.to_owned(),
            stream: stream.to_owned(),
            existing: streams.iter().map(|s| s.name.clone()).collect(),
        })
}

/// Senders, streams, metadata.
pub fn domain_info(src: &mut Source, domain: &str) -> Result<DomainInfo, ExportError> {
    let start_time = src.start_time()?;
    let streams = streams(src)?.into_iter().map(|s| s.name).collect();
    let mut sql = Sql::new(src.dialect());
    sql.push("SELECT CAST(id AS TEXT), name FROM _senders ORDER BY id");
    let mut senders: Vec<Sender> = src
        .text_rows(&sql)?
        .into_iter()
        .filter_map(|r| {
            Some(Sender {
                id: r[0].as_deref()?.parse().ok()?,
                name: r[1].clone()?,
                clock: None,
            })
        })
        .collect();
    for (id, clock) in clocks(src)? {
        if let Some(s) = senders.iter_mut().find(|s| s.id == id) {
            s.clock = Some(clock);
        }
    }
    Ok(DomainInfo {
        name: domain.to_owned(),
        start_time,
        senders,
        streams,
        metadata: metadata(src)?,
    })
}

/// Whether the database has the clock table (servers before clock
/// awareness did not create it).
pub fn has_clock_table(src: &mut Source) -> Result<bool, ExportError> {
    let mut sql = Sql::new(src.dialect());
    sql.push(match src.dialect() {
        Dialect::Sqlite => {
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = '_streamgauge_clock'"
        }
        Dialect::Postgres => "SELECT to_regclass('_streamgauge_clock')::text",
    });
    Ok(src
        .text_rows(&sql)?
        .first()
        .is_some_and(|r| r.first().is_some_and(Option::is_some)))
}

/// Clock state per sender id.
fn clocks(src: &mut Source) -> Result<Vec<(i64, SenderClock)>, ExportError> {
    if !has_clock_table(src)? {
        return Ok(Vec::new());
    }
    let mut sql = Sql::new(src.dialect());
    sql.push(
        "SELECT CAST(sender_id AS TEXT), CAST(clock_offset AS TEXT), source, daemon, \
         CAST(synchronized AS TEXT), CAST(maxerror AS TEXT), CAST(esterror AS TEXT) \
         FROM _streamgauge_clock",
    );
    let num = |v: &Option<String>| v.as_deref().and_then(|t| t.parse::<f64>().ok());
    Ok(src
        .text_rows(&sql)?
        .into_iter()
        .filter_map(|r| {
            let id = r[0].as_deref()?.parse().ok()?;
            Some((
                id,
                SenderClock {
                    offset: num(&r[1]),
                    source: r[2].clone(),
                    daemon: r[3].clone(),
                    synchronized: num(&r[4]).map(|v| v != 0.0),
                    maxerror: num(&r[5]),
                    esterror: num(&r[6]),
                },
            ))
        })
        .collect())
}

/// The client metadata of a domain, in the order it was stored.
pub(crate) fn metadata(src: &mut Source) -> Result<Vec<MetadataEntry>, ExportError> {
    let mut sql = Sql::new(src.dialect());
    sql.push("SELECT subject, key, value FROM _experiment_metadata WHERE oml_sender_id IS NOT NULL ORDER BY oml_tuple_id");
    Ok(src
        .text_rows(&sql)?
        .into_iter()
        .map(|mut r| MetadataEntry {
            value: r.pop().flatten(),
            key: r.pop().flatten(),
            subject: r.pop().flatten(),
        })
        .collect())
}

/// The latest value of metadata `key` declared for `field` of `stream`:
/// subject `.<stream>.<field>`, or `.<mp>.<field>` for a stream named
/// `<app>_<mp>` (clients declare it on their measurement point).
pub fn field_meta(meta: &[MetadataEntry], stream: &str, field: &str, key: &str) -> Option<String> {
    meta.iter()
        .rev()
        .find(|m| {
            m.key.as_deref() == Some(key)
                && m.subject.as_deref().is_some_and(|s| {
                    s == format!(".{stream}.{field}")
                        || s.strip_suffix(&format!(".{field}"))
                            .and_then(|mp| mp.strip_prefix('.'))
                            .is_some_and(|mp| stream.ends_with(&format!("_{mp}")))
                })
        })
        .and_then(|m| m.value.clone())
}

/// Fields, row count and time spans of `schema`'s table.
pub fn stream_info(src: &mut Source, schema: &Schema) -> Result<StreamInfo, ExportError> {
    let meta = metadata(src)?;
    let fields = columns(schema)
        .into_iter()
        .map(|c| FieldInfo {
            unit: field_meta(&meta, &schema.name, &c.name, "unit"),
            kind: field_meta(&meta, &schema.name, &c.name, "kind"),
            ty: type_name(c.kind).to_owned(),
            name: c.name,
        })
        .collect();
    let rows = src.count(&schema.name)?;
    let d = src.dialect();
    let pair = |src: &mut Source, sql: Sql| -> Result<Option<[f64; 2]>, ExportError> {
        let r = src.text_rows(&sql)?;
        let get = |i: usize| {
            r.first()
                .and_then(|row| row[i].as_deref()?.parse::<f64>().ok())
        };
        Ok(get(0).zip(get(1)).map(|(a, b)| [a, b]))
    };
    let mut s = Sql::new(d);
    s.push("SELECT (SELECT CAST(oml_ts_server AS TEXT) FROM ")
        .ident(&schema.name);
    s.push(" ORDER BY oml_tuple_id LIMIT 1), (SELECT CAST(oml_ts_server AS TEXT) FROM ")
        .ident(&schema.name);
    s.push(" ORDER BY oml_tuple_id DESC LIMIT 1)");
    let server_time = pair(src, s)?;
    let mut s = Sql::new(d);
    s.push("SELECT CAST(min(oml_ts_client) AS TEXT), CAST(max(oml_ts_client) AS TEXT) FROM ")
        .ident(&schema.name);
    s.push(
        " WHERE oml_ts_client IS NOT NULL AND oml_ts_client = oml_ts_client AND oml_tuple_id > ",
    );
    s.bind(Value::Int(0), PgType::Int8);
    let client_time = pair(src, s)?;
    Ok(StreamInfo {
        name: schema.name.clone(),
        fields,
        rows,
        server_time,
        client_time,
    })
}
