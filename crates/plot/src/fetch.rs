//! The plotted points from the query API (docs/query-api.md): the
//! experiment's senders, the stream's fields and units, then the rows,
//! downsampled by the server (`points=`), with the gaps it reports.

use std::collections::BTreeMap;

use httpkit::client::Client;
use serde_json::Value;

use crate::data::{sort_points, PlotData, Point, Series};
use crate::definition::{Derive, PlotDef};

/// Why the data could not be fetched.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The server could not be reached or answered an error.
    #[error(transparent)]
    Http(#[from] httpkit::client::ClientError),
    /// The answer is not what the query API sends.
    #[error("{url}: unexpected answer ({what}): is --api the query API's base (http://HOST:PORT/api/v1)?")]
    Shape {
        /// The path asked.
        url: String,
        /// What was missing.
        what: String,
    },
    /// The definition names a field the stream lacks or cannot plot.
    #[error("{0}")]
    Field(String),
    /// The server ignored `derive=rate`.
    #[error("the query API at {0} did not compute derive=rate (its answer does not say \"derive\": \"rate\"): upgrade the collection server, or plot with \"derive\": \"none\"")]
    NoRate(String),
}

/// Percent-encodes a query parameter value or path segment.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn get_json(client: &Client, path: &str) -> Result<Value, FetchError> {
    let body = client.get(path).map_err(|e| match e {
        // A 404 that is not one of the query API's own: not its base URL.
        httpkit::client::ClientError::Status {
            status: 404,
            ref code,
            ref url,
            ..
        } if !code.starts_with("unknown_") => FetchError::Shape {
            url: url.clone(),
            what: "404, no such path".to_owned(),
        },
        e => FetchError::Http(e),
    })?;
    serde_json::from_str(&body).map_err(|e| FetchError::Shape {
        url: path.to_owned(),
        what: format!("not JSON: {e}"),
    })
}

fn shape(path: &str, what: &str) -> FetchError {
    FetchError::Shape {
        url: path.to_owned(),
        what: what.to_owned(),
    }
}

/// The path of the rows request for `def` (before pagination).
pub fn rows_path(def: &PlotDef) -> String {
    let mut fields = vec!["oml_sender_id", def.time.column()];
    fields.extend(def.all_fields().map(|(f, _)| f));
    let list: Vec<String> = fields.iter().map(|f| encode(f)).collect();
    let mut path = format!(
        "/domains/{}/streams/{}/rows?fields={}&points={}&format=json&timestamps=raw&time={}&gaps=true",
        encode(&def.domain),
        encode(&def.stream),
        list.join(","),
        def.points,
        def.time.name(),
    );
    if def.derive != Derive::None {
        path.push_str(&format!("&derive={}", def.derive.name()));
    }
    if !def.senders.is_empty() {
        let s: Vec<String> = def.senders.iter().map(|s| encode(s)).collect();
        path.push_str(&format!("&sender={}", s.join(",")));
    }
    for (k, v) in [("from", &def.from), ("to", &def.to)] {
        if let Some(v) = v {
            path.push_str(&format!("&{k}={}", encode(v)));
        }
    }
    path
}

/// Checks the definition's fields against the stream's description and
/// returns the units of those that declare one.
fn units(desc: &Value, def: &PlotDef, path: &str) -> Result<BTreeMap<String, String>, FetchError> {
    let fields = desc["fields"]
        .as_array()
        .ok_or_else(|| shape(path, "no \"fields\" array"))?;
    let mut units = BTreeMap::new();
    for (name, _) in def.all_fields() {
        let Some(f) = fields.iter().find(|f| f["name"] == name) else {
            let names: Vec<&str> = fields.iter().filter_map(|f| f["name"].as_str()).collect();
            return Err(FetchError::Field(format!(
                "stream {:?} of {:?} has no field {name:?}: its fields are {}",
                def.stream,
                def.domain,
                names.join(", ")
            )));
        };
        let ty = f["type"].as_str().unwrap_or("");
        let numeric = matches!(
            ty,
            "int32" | "uint32" | "int64" | "uint64" | "double" | "time" | "long" | "integer"
        );
        if !numeric {
            return Err(FetchError::Field(format!(
                "field {name:?} of stream {:?} is {ty}, not a number: only numeric fields can be plotted",
                def.stream
            )));
        }
        if let Some(u) = f["unit"].as_str().filter(|u| !u.is_empty()) {
            units.insert(name.to_owned(), u.to_owned());
        }
    }
    Ok(units)
}

/// A time in a `gaps` entry: seconds after the start, or an ISO instant.
fn gap_time(v: &Value, start: i64) -> Option<i64> {
    let unix = match v {
        Value::Number(n) => start as f64 + n.as_f64()?,
        Value::String(s) => query::request::instant::iso8601(s).ok()?,
        _ => return None,
    };
    Some((unix * 1e6).round() as i64)
}

/// Fetches everything `def` plots from the query API behind `client`.
pub fn fetch(client: &Client, def: &PlotDef) -> Result<PlotData, FetchError> {
    let dpath = format!("/domains/{}", encode(&def.domain));
    let domain = get_json(client, &dpath)?;
    let mut names: BTreeMap<i64, String> = BTreeMap::new();
    for s in domain["senders"]
        .as_array()
        .ok_or_else(|| shape(&dpath, "no \"senders\" array"))?
    {
        if let (Some(id), Some(name)) = (s["id"].as_i64(), s["name"].as_str()) {
            names.insert(id, name.to_owned());
        }
    }
    let spath = format!("{dpath}/streams/{}", encode(&def.stream));
    let units = units(&get_json(client, &spath)?, def, &spath)?;

    let base = rows_path(def);
    let n_fields = def.fields.len() + def.y2.len();
    let mut per_sender: BTreeMap<i64, Vec<Vec<Point>>> = BTreeMap::new();
    let mut gaps: Vec<(Value, i64, i64)> = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let path = match &after {
            Some(a) => format!("{base}&after={}", encode(a)),
            None => base.clone(),
        };
        let page = get_json(client, &path)?;
        if def.derive == Derive::Rate && page["derive"].as_str() != Some("rate") {
            return Err(FetchError::NoRate(client.base().to_owned()));
        }
        let start = page["start_time"]
            .as_i64()
            .ok_or_else(|| shape(&path, "no \"start_time\""))?;
        let rows = page["rows"]
            .as_array()
            .ok_or_else(|| shape(&path, "no \"rows\" array"))?;
        for row in rows {
            let cells = row
                .as_array()
                .filter(|c| c.len() == 2 + n_fields)
                .ok_or_else(|| shape(&path, "a row without the requested columns"))?;
            let (Some(sender), Some(t)) = (cells[0].as_i64(), cells[1].as_f64()) else {
                continue;
            };
            let t_us = ((start as f64 + t) * 1e6).round() as i64;
            let series = per_sender
                .entry(sender)
                .or_insert_with(|| vec![Vec::new(); n_fields]);
            for (k, cell) in cells[2..].iter().enumerate() {
                let v = cell.as_f64().filter(|v| v.is_finite());
                series[k].push(Point { t_us, v });
            }
        }
        for g in page["gaps"].as_array().into_iter().flatten() {
            if let (Some(from), Some(to)) = (gap_time(&g["from"], start), gap_time(&g["to"], start))
            {
                gaps.push((g["sender"].clone(), from, to));
            }
        }
        match page["next"].as_str() {
            Some(n) if !n.is_empty() => after = Some(n.to_owned()),
            _ => break,
        }
    }

    // Senders in the definition's order, else by id.
    let mut order: Vec<i64> = per_sender.keys().copied().collect();
    if !def.senders.is_empty() {
        let rank = |id: &i64| {
            def.senders
                .iter()
                .position(|s| names.get(id) == Some(s) || *s == id.to_string())
                .unwrap_or(usize::MAX)
        };
        order.sort_by_key(rank);
    }
    let mut data = PlotData {
        series: Vec::new(),
        units,
    };
    for id in order {
        let name = names.get(&id).cloned().unwrap_or_else(|| id.to_string());
        let is_this = |v: &Value| v.as_i64() == Some(id) || v.as_str() == Some(name.as_str());
        let breaks: Vec<(i64, i64)> = gaps
            .iter()
            .filter(|(s, _, _)| is_this(s))
            .map(|(_, f, t)| (*f, *t))
            .collect();
        let cols = per_sender.remove(&id).unwrap_or_default();
        for ((field, right), mut points) in def.all_fields().zip(cols) {
            sort_points(&mut points);
            let points = with_breaks(points, &breaks);
            data.series.push(Series {
                sender: name.clone(),
                field: field.to_owned(),
                right,
                points,
            });
        }
    }
    Ok(data)
}

/// Inserts a break into every step of `points` that crosses a gap
/// (`from`–`to`): the segment from one point to the next is not drawn
/// when it overlaps a stretch the server says holds no data.
pub fn with_breaks(points: Vec<Point>, gaps: &[(i64, i64)]) -> Vec<Point> {
    if gaps.is_empty() {
        return points;
    }
    let mut out: Vec<Point> = Vec::with_capacity(points.len() + gaps.len());
    for p in points {
        if let Some(prev) = out.last().filter(|q| q.v.is_some()) {
            let (a, b) = (prev.t_us, p.t_us);
            if let Some((from, _)) = gaps.iter().find(|(from, to)| a < *to && b > *from) {
                out.push(Point {
                    t_us: a.max(*from),
                    v: None,
                });
            }
        }
        out.push(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn breaks_go_where_a_step_crosses_a_gap() {
        let p = |t, v| Point {
            t_us: t,
            v: Some(v),
        };
        let pts = vec![p(0, 1.0), p(10, 2.0), p(50, 3.0), p(60, 4.0)];
        let out = with_breaks(pts.clone(), &[(10, 50)]);
        assert_eq!(out.len(), 5);
        assert_eq!(out[2], Point { t_us: 10, v: None });
        assert_eq!(with_breaks(pts.clone(), &[]), pts);
        // A gap between points that are not its ends still breaks.
        assert_eq!(with_breaks(pts, &[(20, 30)])[2].v, None);
    }

    #[test]
    fn request_path_carries_every_parameter() {
        let def = PlotDef::parse(
            r#"{"version":1,"domain":"lab 1","stream":"s","fields":["a"],"y2":["b"],
               "senders":["n/1","n2"],"from":"2026-11-25T21:00:00+01:00","to":"60",
               "time":"client","derive":"rate","points":100}"#,
        )
        .unwrap();
        assert_eq!(
            rows_path(&def),
            "/domains/lab%201/streams/s/rows?fields=oml_sender_id,oml_ts_client,a,b&points=100&format=json\
             &timestamps=raw&time=client&gaps=true&derive=rate&sender=n%2F1,n2\
             &from=2026-11-25T21%3A00%3A00%2B01%3A00&to=60"
        );
    }
}
