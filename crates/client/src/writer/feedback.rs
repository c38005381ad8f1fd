//! Control messages from a receiver (spec/omsp.md §3.7), applied by the
//! writer thread between two samples.
//!
//! The sender thread reads `streamgauge-control <id> <json>` lines off the
//! back-channel and queues them on the destination; the writer takes them
//! here, changes the destination's streams (or pauses its sender), and
//! answers on the forward path with a schema-0 tuple (subject `.`, key
//! `streamgauge_control`, value `<id> ok` or `<id> error <reason>`), so the
//! answer is stored next to the data it changed.
//!
//! Sampling changes keep every stream's columns: a windowed stream gets a
//! new window, a pass-through stream (one row per sample) is thinned to one
//! sample in N or one per interval instead of switching to averages, which
//! would change its schema mid-session.

use serde_json::{Map, Value as Json};

use super::output::Output;
use crate::queue::dest::ControlMsg;
use crate::stream::{Body, Stream, Thin, Window};

/// Metadata key of the answers.
pub(crate) const ANSWER_KEY: &str = "streamgauge_control";

/// Applies `msg` to destination `out` at client time `now` and sends the
/// answer.
pub(crate) fn handle(out: &mut Output, msg: &ControlMsg, now: f64) {
    let answer = match apply(out, &msg.json, now) {
        Ok(()) => format!("{} ok", msg.id),
        Err(reason) => {
            tracing::warn!(id = msg.id, message = %msg.json, %reason, "control message refused");
            format!("{} error {reason}", msg.id)
        }
    };
    tracing::info!(id = msg.id, message = %msg.json, %answer, "control message");
    out.schema0(now, omsp::metadata::ROOT_SUBJECT, ANSWER_KEY, &answer);
}

/// Applies one message; the error is the reason sent back.
fn apply(out: &mut Output, json: &str, now: f64) -> Result<(), String> {
    let v: Json = serde_json::from_str(json).map_err(|e| format!("bad JSON: {e}"))?;
    let Json::Object(m) = v else {
        return Err("not a JSON object".into());
    };
    let action = m
        .get("action")
        .and_then(Json::as_str)
        .ok_or("no \"action\" string")?;
    match action {
        "pause" => {
            out.queue.set_paused(true);
            Ok(())
        }
        "resume" => {
            out.queue.set_paused(false);
            Ok(())
        }
        "set-samples" => {
            let n = m
                .get("samples")
                .and_then(Json::as_u64)
                .filter(|&n| n >= 1)
                .ok_or("\"samples\" must be an integer >= 1")?;
            for_streams(out, &m, |s| set_samples(s, n))
        }
        "set-interval" => {
            let secs = m
                .get("interval")
                .and_then(Json::as_f64)
                .filter(|&d| d > 0.0 && d.is_finite())
                .ok_or("\"interval\" must be a number of seconds > 0")?;
            for_streams(out, &m, |s| set_interval(s, secs, now))
        }
        "enable" => for_streams(out, &m, |s| {
            s.enabled = true;
            Ok(())
        }),
        "disable" => for_streams(out, &m, |s| {
            s.enabled = false;
            Ok(())
        }),
        "set-filter" => {
            let field = str_arg(&m, "field")?;
            let property = str_arg(&m, "property")?;
            let value = match m.get("value") {
                Some(Json::String(s)) => s.clone(),
                Some(v @ (Json::Number(_) | Json::Bool(_))) => v.to_string(),
                _ => return Err("\"value\" must be a string".into()),
            };
            for_streams(out, &m, |s| set_filter(s, &field, &property, &value))
        }
        _ => Err("unknown action".into()),
    }
}

fn str_arg(m: &Map<String, Json>, key: &str) -> Result<String, String> {
    m.get(key)
        .and_then(Json::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("no \"{key}\" string"))
}

/// Runs `f` on every stream of `out` named by the message's `stream`
/// (a destination may carry one table once, so at most one matches).
fn for_streams(
    out: &mut Output,
    m: &Map<String, Json>,
    mut f: impl FnMut(&mut Stream) -> Result<(), String>,
) -> Result<(), String> {
    let name = str_arg(m, "stream")?;
    let mut found = false;
    for s in out.streams.iter_mut().filter(|s| s.schema.name == name) {
        found = true;
        f(s)?;
    }
    if found {
        Ok(())
    } else {
        Err(format!("unknown stream {name}"))
    }
}

fn set_samples(s: &mut Stream, n: u64) -> Result<(), String> {
    match s.body {
        Body::Pass(_) => {
            s.thin = if n == 1 {
                Thin::All
            } else {
                Thin::Every { n, seen: 0 }
            };
        }
        Body::Filters { .. } => {
            s.window = Window::Count {
                n: i64::try_from(n).map_err(|_| "\"samples\" is too large")?,
                seen: 0,
            };
        }
    }
    Ok(())
}

fn set_interval(s: &mut Stream, secs: f64, now: f64) -> Result<(), String> {
    match s.body {
        Body::Pass(_) => {
            s.thin = Thin::Period {
                period: secs,
                next: now,
            }
        }
        Body::Filters { .. } => {
            s.window = Window::Interval {
                period: secs,
                due: now + secs,
            };
        }
    }
    Ok(())
}

/// Remakes the filter whose columns start with `field` with `property`
/// set to `value`; refused if that would change the stream's columns.
fn set_filter(s: &mut Stream, field: &str, property: &str, value: &str) -> Result<(), String> {
    let Body::Filters {
        filters, recipes, ..
    } = &mut s.body
    else {
        return Err("the stream has no filters (one row per sample)".into());
    };
    let i = recipes
        .iter()
        .position(|r| r.prefix == field)
        .ok_or_else(|| format!("no filter with column prefix {field}"))?;
    let mut recipe = recipes[i].clone();
    match recipe.properties.iter_mut().find(|p| p.name == property) {
        Some(p) => p.value = value.to_owned(),
        None => recipe.properties.push(filters::Property {
            name: property.to_owned(),
            ty: "string".into(),
            value: value.to_owned(),
        }),
    }
    let new = filters::create(&recipe.op, &recipe.prefix, recipe.ty, &recipe.properties)
        .map_err(|e| e.to_string())?;
    let same_columns = {
        let old = filters[i].1.outputs();
        let now = new.outputs();
        old.len() == now.len()
            && old
                .iter()
                .zip(now)
                .all(|(a, b)| a.suffix == b.suffix && a.ty == b.ty)
    };
    if !same_columns {
        return Err(format!(
            "{property}={value} would change the columns of filter {field}"
        ));
    }
    filters[i].1 = new;
    recipes[i] = recipe;
    Ok(())
}
