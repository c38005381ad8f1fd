//! PostgreSQL helpers: a server storing into the test cluster, captures
//! re-addressed to a fresh domain, and a dump of a database in the format
//! of the `*.rows.json` vectors.

use omsp::{OmlType, Schema};
use serde_json::{json, Map, Value as Json};
use server::{Backend, PgOptions};

use super::pg_cluster::{blocking, shared};
use super::TestServer;

/// Connection options of the test cluster for `user`.
pub fn options(user: &str) -> PgOptions {
    PgOptions {
        host: "127.0.0.1".into(),
        port: shared().port,
        user: user.into(),
        ..PgOptions::default()
    }
}

/// A server on loopback storing into the test cluster as `oml`.
pub async fn start() -> TestServer {
    let opts = options("oml");
    super::start_with(move |c| c.backend = Backend::Postgres(opts)).await
}

/// A capture whose header names `domain` instead of `vecdomain` (tests
/// share one cluster, so each uses its own database).
pub fn with_domain(capture: &[u8], domain: &str) -> Vec<u8> {
    let from = b"domain: vecdomain\n";
    let at = capture
        .windows(from.len())
        .position(|w| w == from)
        .expect("capture names vecdomain");
    let mut out = capture[..at].to_vec();
    out.extend_from_slice(format!("domain: {domain}\n").as_bytes());
    out.extend_from_slice(&capture[at + from.len()..]);
    out
}

/// Runs one query on `domain` (off the async runtime) and returns its rows.
pub fn query<T: Send + 'static>(domain: &str, sql: &str, f: fn(&postgres::Row) -> T) -> Vec<T> {
    let (domain, sql) = (domain.to_owned(), sql.to_owned());
    blocking(move || {
        let mut c = shared().client(&domain);
        c.query(&sql, &[]).unwrap().iter().map(f).collect()
    })
}

/// `SELECT count(*)`-style query returning one number; -1 on error (e.g. the
/// database or table does not exist yet).
pub fn count(domain: &str, sql: &str) -> i64 {
    let (domain, sql) = (domain.to_owned(), sql.to_owned());
    blocking(move || match shared().try_client(&domain) {
        Ok(mut c) => c.query_one(&sql, &[]).map(|r| r.get(0)).unwrap_or(-1),
        Err(_) => -1,
    })
}

/// Every table as `{table: {columns, column_types, rows}}`, without
/// `oml_ts_server`; types as `format_type` prints them; bytea as
/// `{"blob_hex": …}`, NUMERIC as an exact integer, booleans as 0/1 (as
/// SQLite stores them in the reference dumps); without `_streamgauge_clock`
/// (clock estimates, not in the reference, different on every run).
pub fn dump(domain: &str) -> Map<String, Json> {
    let domain = domain.to_owned();
    blocking(move || {
        let mut c = shared().client(&domain);
        let tables: Vec<String> = c
            .query(
                "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() \
                 AND tablename <> '_streamgauge_clock'",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let mut out = Map::new();
        for t in tables {
            let info: Vec<(String, String)> = c
                .query(
                    "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute \
                     WHERE attrelid = quote_ident($1)::regclass AND attnum > 0 \
                     AND NOT attisdropped AND attname <> 'oml_ts_server' ORDER BY attnum",
                    &[&t],
                )
                .unwrap()
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect();
            let cols: Vec<String> = info
                .iter()
                .map(|(n, ty)| match ty.as_str() {
                    "numeric(20,0)" => format!("\"{n}\"::text"),
                    _ => format!("\"{n}\""),
                })
                .collect();
            let order = if info[0].0 == "oml_tuple_id" {
                "oml_tuple_id"
            } else {
                "id"
            };
            let sql = format!("SELECT {} FROM \"{t}\" ORDER BY {order}", cols.join(","));
            let rows: Vec<Json> = c
                .query(&sql, &[])
                .unwrap()
                .iter()
                .map(|r| Json::Array((0..info.len()).map(|i| cell(r, i, &info[i].1)).collect()))
                .collect();
            out.insert(
                t,
                json!({
                    "columns": info.iter().map(|c| c.0.clone()).collect::<Vec<_>>(),
                    "column_types": info.iter().map(|c| c.1.clone()).collect::<Vec<_>>(),
                    "rows": rows,
                }),
            );
        }
        out
    })
}

fn cell(r: &postgres::Row, i: usize, ty: &str) -> Json {
    match ty {
        "integer" => json!(r.get::<_, Option<i32>>(i)),
        "bigint" => json!(r.get::<_, Option<i64>>(i)),
        "double precision" => match r.get::<_, Option<f64>>(i) {
            Some(x) if x.is_nan() => json!("NaN"),
            x => json!(x),
        },
        "numeric(20,0)" => match r.get::<_, Option<String>>(i) {
            Some(s) => json!(s.parse::<u64>().expect("integer numeric")),
            None => Json::Null,
        },
        "boolean" => json!(r.get::<_, Option<bool>>(i).map(i32::from)),
        "bytea" => match r.get::<_, Option<Vec<u8>>>(i) {
            Some(b) => {
                json!({ "blob_hex": b.iter().map(|x| format!("{x:02x}")).collect::<String>() })
            }
            None => Json::Null,
        },
        _ => json!(r.get::<_, Option<String>>(i)),
    }
}

/// The PostgreSQL column types we promise for a table the reference dumped
/// from SQLite: the `oml_*` columns, and each field's type from the
/// reference's own `table_<name>` bookkeeping row.
pub fn expected_types(reference: &Map<String, Json>, table: &str, want: &Json) -> Json {
    let meta = &reference["_experiment_metadata"]["rows"];
    let schema = meta
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[5] == json!(format!("table_{table}")))
        .map(|r| Schema::parse(r[6].as_str().unwrap()).unwrap());
    let types: Vec<&str> = want["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| match (table, c.as_str().unwrap()) {
            ("_senders", "name") => "text",
            ("_senders", "id") => "integer",
            (_, "oml_tuple_id" | "oml_sender_id") => "integer",
            (_, "oml_seq") => "bigint",
            (_, "oml_ts_client") => "double precision",
            (_, field) => {
                let s = schema.as_ref().expect("schema row");
                pg_type(s.fields[s.field_index(field).unwrap()].ty)
            }
        })
        .collect();
    json!(types)
}

fn pg_type(ty: OmlType) -> &'static str {
    match ty {
        OmlType::Int32 => "integer",
        OmlType::UInt32 | OmlType::Int64 => "bigint",
        OmlType::UInt64 | OmlType::Guid => "numeric(20,0)",
        OmlType::Double => "double precision",
        OmlType::Bool => "boolean",
        OmlType::Blob => "bytea",
        _ => "text",
    }
}
