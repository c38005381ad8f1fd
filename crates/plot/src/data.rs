//! The plotted points, one series per sender × field, and their CSV form
//! (`sender,time,field,value`), which is both what the command writes
//! beside the figure and what `--csv-in` reads back to draw it again.
//!
//! A row with an empty value is a break in the line (a gap the server
//! reported, or a value that is not a number): pandas reads it as NaN,
//! which matplotlib also draws as a break, so the CSV means the same
//! thing there as in this figure.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use query::export::{csv_field, Timestamps};

use crate::definition::PlotDef;

/// The CSV header.
pub const CSV_HEADER: &str = "sender,time,field,value";

/// One point of a series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Unix time in microseconds (the CSV's resolution, so a figure drawn
    /// from the CSV is the figure drawn from the server).
    pub t_us: i64,
    /// The value; `None` breaks the line here.
    pub v: Option<f64>,
}

/// The points of one sender's field.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Sender name.
    pub sender: String,
    /// Field name.
    pub field: String,
    /// Drawn against the right-hand axis (`y2`).
    pub right: bool,
    /// Points in time order.
    pub points: Vec<Point>,
}

impl Series {
    /// The runs of consecutive points between breaks, each in time order.
    pub fn runs(&self) -> Vec<Vec<(i64, f64)>> {
        let mut runs = vec![Vec::new()];
        for p in &self.points {
            match p.v {
                Some(v) => runs.last_mut().map(|r| r.push((p.t_us, v))).unwrap_or(()),
                None => runs.push(Vec::new()),
            }
        }
        runs.retain(|r| !r.is_empty());
        runs
    }
}

/// Everything a figure is drawn from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlotData {
    /// Series in legend order.
    pub series: Vec<Series>,
    /// Stored unit of each field that has one (from the stream's metadata
    /// or `--unit`).
    pub units: BTreeMap<String, String>,
}

impl PlotData {
    /// True when no series holds a value.
    pub fn is_empty(&self) -> bool {
        self.series
            .iter()
            .all(|s| s.points.iter().all(|p| p.v.is_none()))
    }

    /// The CSV of exactly the plotted points, series after series.
    pub fn to_csv(&self) -> String {
        let times = Timestamps::new(Some(0));
        let mut out = String::with_capacity(64 * self.series.len());
        out.push_str(CSV_HEADER);
        out.push('\n');
        for s in &self.series {
            let (sender, field) = (csv_field(&s.sender), csv_field(&s.field));
            for p in &s.points {
                let value = p.v.map(|v| v.to_string()).unwrap_or_default();
                let time = times.format(p.t_us as f64 / 1e6);
                let _ = writeln!(out, "{sender},{time},{field},{value}");
            }
        }
        out
    }
}

/// Why a CSV could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    /// The first line is not the header this command writes.
    #[error("the first line is {found:?}, not {CSV_HEADER:?}: --csv-in reads the CSV that streamgauge plot wrote beside a figure")]
    Header {
        /// What was found.
        found: String,
    },
    /// A line is malformed.
    #[error("line {line}: {message}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// Splits one CSV record (RFC 4180 quoting; records here never span lines).
fn record(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut was_quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => cur.push(c),
            (false, '"') if cur.is_empty() && !was_quoted => {
                quoted = true;
                was_quoted = true;
            }
            (false, ',') => {
                fields.push(std::mem::take(&mut cur));
                was_quoted = false;
            }
            (false, '"') => return Err("a quote inside an unquoted field".into()),
            (false, c) => cur.push(c),
        }
    }
    if quoted {
        return Err("a quoted field is not closed".into());
    }
    fields.push(cur);
    Ok(fields)
}

/// Reads a CSV written by this command, keeping the series `def` plots
/// (its fields and y2, its senders if it names any), in legend order.
pub fn from_csv(text: &str, def: &PlotDef) -> Result<PlotData, CsvError> {
    let mut lines = text.lines().enumerate();
    let header = lines.next().map(|(_, l)| l.trim_end()).unwrap_or("");
    if header != CSV_HEADER {
        return Err(CsvError::Header {
            found: header.to_owned(),
        });
    }
    let axis: BTreeMap<&str, bool> = def.all_fields().collect();
    let mut senders: Vec<String> = def.senders.clone();
    let mut points: BTreeMap<(String, String), Vec<Point>> = BTreeMap::new();
    for (i, line) in lines {
        let bad = |message: String| CsvError::Line {
            line: i + 1,
            message,
        };
        if line.trim().is_empty() {
            continue;
        }
        let rec = record(line).map_err(&bad)?;
        let [sender, time, field, value] = <[String; 4]>::try_from(rec)
            .map_err(|r| bad(format!("{} columns, want 4 ({CSV_HEADER})", r.len())))?;
        if !axis.contains_key(field.as_str()) {
            return Err(bad(format!(
                "field {field:?} is not in the definition's \"fields\" or \"y2\": use the definition the CSV was written with"
            )));
        }
        if !def.senders.is_empty() && !def.senders.contains(&sender) {
            continue;
        }
        let unix = query::request::instant::iso8601(&time)
            .map_err(|e| bad(format!("time {time:?}: {e}")))?;
        let v = if value.is_empty() {
            None
        } else {
            Some(
                value
                    .parse::<f64>()
                    .map_err(|_| bad(format!("value {value:?} is not a number")))?,
            )
        };
        if !senders.contains(&sender) {
            senders.push(sender.clone());
        }
        points.entry((sender, field)).or_default().push(Point {
            t_us: (unix * 1e6).round() as i64,
            v,
        });
    }
    let mut data = PlotData::default();
    for sender in &senders {
        for (field, right) in def.all_fields() {
            if let Some(mut pts) = points.remove(&(sender.clone(), field.to_owned())) {
                sort_points(&mut pts);
                data.series.push(Series {
                    sender: sender.clone(),
                    field: field.to_owned(),
                    right,
                    points: pts,
                });
            }
        }
    }
    Ok(data)
}

/// Time order; at equal times values before breaks (a gap starts after
/// the last point before it).
pub fn sort_points(points: &mut [Point]) {
    points.sort_by_key(|p| (p.t_us, p.v.is_none()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def() -> PlotDef {
        PlotDef::parse(r#"{"version":1,"domain":"d","stream":"s","fields":["rtt"],"y2":["loss"]}"#)
            .unwrap()
    }

    #[test]
    fn csv_round_trip_keeps_points_breaks_and_order() {
        let data = PlotData {
            series: vec![
                Series {
                    sender: "node,1".into(),
                    field: "rtt".into(),
                    right: false,
                    points: vec![
                        Point {
                            t_us: 1_795_310_976_000_001,
                            v: Some(0.1),
                        },
                        Point {
                            t_us: 1_795_310_977_000_000,
                            v: None,
                        },
                        Point {
                            t_us: 1_795_310_978_250_000,
                            v: Some(-1e300),
                        },
                    ],
                },
                Series {
                    sender: "node,1".into(),
                    field: "loss".into(),
                    right: true,
                    points: vec![Point {
                        t_us: 0,
                        v: Some(3.0),
                    }],
                },
            ],
            units: BTreeMap::new(),
        };
        let csv = data.to_csv();
        assert!(csv.starts_with("sender,time,field,value\n\"node,1\",2026-11-22T01:29:36.000001Z,rtt,0.1\n\"node,1\",2026-11-22T01:29:37.000000Z,rtt,\n"), "{csv}");
        let back = from_csv(&csv, &def()).unwrap();
        assert_eq!(back, data);
        assert_eq!(back.series[0].runs().len(), 2);
    }

    #[test]
    fn bad_csv_lines_are_named() {
        let e = from_csv("a,b\n", &def()).unwrap_err().to_string();
        assert!(e.contains("--csv-in reads"), "{e}");
        let e = from_csv(
            "sender,time,field,value\nn,2026-01-01T00:00:00Z,ttl,1\n",
            &def(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("line 2") && e.contains("ttl"), "{e}");
        let e = from_csv("sender,time,field,value\nn,yesterday,rtt,1\n", &def())
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("yesterday"), "{e}");
        let e = from_csv(
            "sender,time,field,value\nn,2026-01-01T00:00:00Z,rtt,x\n",
            &def(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("not a number"), "{e}");
        let e = from_csv("sender,time,field,value\n\"n,2026\n", &def())
            .unwrap_err()
            .to_string();
        assert!(e.contains("not closed"), "{e}");
    }
}
