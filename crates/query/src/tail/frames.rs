//! Rows rendered once as Server-Sent Events text, and the response that
//! carries them.
//!
//! A batch of rows becomes one buffer: either one `event: row` / `id:` /
//! `data:` event per row (an object per row), or, with `batch=true`, one
//! `event: rows` whose `data:` lines hold one JSON array per row (values
//! in the order of the stream's opening `event: fields`; the row's
//! `oml_tuple_id` first unless the request chose where it goes) and whose
//! `id:` is the last row's. Every client following the same request is handed
//! the same buffer (a reference-counted [`Bytes`], not a copy), cut at the
//! first row it has not sent yet, and the HTTP layer writes it as one
//! chunk. Serving a row to ten browsers then costs ten pointer copies, not
//! ten JSON renderings, ten event objects and ten small writes: the work
//! that competes with ingestion for the cores grows with batches, not with
//! rows times clients. Batched events carry a row in less than half the
//! bytes (no field names, no per-row event) and cost a browser one event
//! dispatch per batch rather than per row.

use std::convert::Infallible;
use std::io::Write as _;
use std::time::Duration;

use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

/// A comment line (`:`) is sent when nothing else was for this long. It
/// keeps proxies and browsers from closing an idle stream, and it bounds
/// how long a tail outlives a client that went away without the server
/// seeing its connection close (a peer that vanished, a proxy that keeps
/// its side open): the write fails (the first one after the peer closed
/// draws a reset, the next one fails), the body is dropped and the tail
/// ends. A tail with a filter that matches nothing would otherwise hold
/// its connections until a row came.
const HEARTBEAT: Duration = Duration::from_secs(1);

/// The head of a batched event.
const ROWS_HEAD: &[u8] = b"event: rows\n";

/// A batch of rows as SSE text, ids ascending.
pub struct Frames {
    /// Every row's event (or the one batched event), in order.
    text: Bytes,
    /// Per row: its `oml_tuple_id` and where its event (or `data:` line)
    /// starts in `text`.
    rows: Vec<(i64, usize)>,
    /// One event for all rows (`data:` lines, then the `id:` trailer).
    batched: bool,
}

impl Frames {
    /// The events of the rows after `last`, and the id of the last one;
    /// `None` if every row is at or before `last`.
    pub fn after(&self, last: i64) -> Option<(Bytes, i64)> {
        let first = self.rows.partition_point(|(id, _)| *id <= last);
        let (_, at) = *self.rows.get(first)?;
        let (end, _) = *self.rows.last()?;
        if first == 0 {
            return Some((self.text.clone(), end));
        }
        if !self.batched {
            return Some((self.text.slice(at..), end));
        }
        // A batched event cut inside: its head, the unseen rows' lines and
        // the trailer, copied (once per client, when it joins mid-batch).
        let mut cut = Vec::with_capacity(self.text.len() - at + ROWS_HEAD.len());
        cut.extend_from_slice(ROWS_HEAD);
        cut.extend_from_slice(&self.text[at..]);
        Some((Bytes::from(cut), end))
    }

    /// No rows at all.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// Renders rows into [`Frames`].
pub struct FramesBuilder {
    buf: Vec<u8>,
    rows: Vec<(i64, usize)>,
    /// Each field's `"name":` (JSON-escaped), rendered once per batch;
    /// `None` for batched events (arrays, no names).
    keys: Option<Vec<Vec<u8>>>,
    /// Fields per row.
    width: usize,
    /// Batched: each array starts with the row's id (the request's fields
    /// do not include `oml_tuple_id`).
    with_id: bool,
}

impl FramesBuilder {
    /// A batch whose rows carry the fields `names`, in this order: one
    /// event per row, or one event for the whole batch if `batched`.
    pub fn new<'a>(names: impl Iterator<Item = &'a str>, batched: bool) -> FramesBuilder {
        let mut with_id = true;
        let keys: Vec<Vec<u8>> = names
            .inspect(|n| with_id &= *n != ID)
            .map(|n| {
                // A string into a Vec cannot fail.
                let mut k = serde_json::to_vec(n).unwrap_or_default();
                k.push(b':');
                k
            })
            .collect();
        let mut buf = Vec::with_capacity(64 << 10);
        if batched {
            buf.extend_from_slice(ROWS_HEAD);
        }
        FramesBuilder {
            buf,
            rows: Vec::new(),
            width: keys.len(),
            keys: (!batched).then_some(keys),
            with_id: batched && with_id,
        }
    }

    /// Appends row `id`; `value(i, buf)` writes the JSON value of field
    /// `i` into `buf`.
    pub fn row(&mut self, id: i64, mut value: impl FnMut(usize, &mut Vec<u8>)) {
        self.rows.push((id, self.buf.len()));
        let Some(keys) = &self.keys else {
            self.buf.extend_from_slice(b"data: [");
            if self.with_id {
                let _ = write!(self.buf, "{id}");
            }
            for i in 0..self.width {
                if i > 0 || self.with_id {
                    self.buf.push(b',');
                }
                value(i, &mut self.buf);
            }
            self.buf.extend_from_slice(b"]\n");
            return;
        };
        let _ = write!(self.buf, "event: row\nid: {id}\ndata: {{");
        for (i, key) in keys.iter().enumerate() {
            if i > 0 {
                self.buf.push(b',');
            }
            self.buf.extend_from_slice(key);
            value(i, &mut self.buf);
        }
        self.buf.extend_from_slice(b"}\n\n");
    }

    /// Rows so far.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// No rows yet.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The batch.
    pub fn finish(mut self) -> Frames {
        let batched = self.keys.is_none();
        if batched {
            match self.rows.last() {
                Some((last, _)) => {
                    let _ = write!(self.buf, "id: {last}\n\n");
                }
                None => self.buf.clear(),
            }
        }
        Frames {
            text: Bytes::from(self.buf),
            rows: self.rows,
            batched,
        }
    }
}

/// The id column: every batched row carries it, first if the request's
/// fields leave it out.
const ID: &str = "oml_tuple_id";

/// The `event: fields` that opens a batched tail of the fields `names`:
/// the names of the values in each row's array, in order.
pub fn fields<'a>(names: impl Iterator<Item = &'a str>) -> Bytes {
    let mut all: Vec<&str> = names.collect();
    if !all.contains(&ID) {
        all.insert(0, ID);
    }
    event("fields", &Value::from(all))
}

/// One event without an id (`error`, `lagged`) carrying `data` (JSON).
pub fn event(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// The `text/event-stream` response writing what arrives on `rx`, with a
/// comment line whenever nothing did for [`HEARTBEAT`]; it ends when every
/// sender is gone.
pub fn response(rx: mpsc::Receiver<Bytes>) -> Response {
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        let next = match tokio::time::timeout(HEARTBEAT, rx.recv()).await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return None,
            Err(_) => Bytes::from_static(b":\n"),
        };
        Some((Ok::<_, Infallible>(next), rx))
    });
    (
        [
            (CONTENT_TYPE, "text/event-stream"),
            (CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn frames(ids: &[i64]) -> Frames {
        rendered(ids, false)
    }

    fn rendered(ids: &[i64], batched: bool) -> Frames {
        let mut b = FramesBuilder::new(["n", "s"].into_iter(), batched);
        for id in ids {
            b.row(*id, |i, out| {
                let v = [json!(id), json!("a\"b\nc")];
                serde_json::to_writer(out, &v[i]).unwrap();
            });
        }
        b.finish()
    }

    #[test]
    fn rows_render_as_one_event_each_with_escaped_json() {
        let f = frames(&[7]);
        let (text, last) = f.after(0).unwrap();
        assert_eq!(last, 7);
        assert_eq!(
            &text[..],
            b"event: row\nid: 7\ndata: {\"n\":7,\"s\":\"a\\\"b\\nc\"}\n\n"
        );
    }

    #[test]
    fn after_cuts_at_the_first_unseen_row() {
        let f = frames(&[3, 4, 9]);
        let whole = f.after(2).unwrap().0;
        let cut = f.after(4).unwrap();
        assert_eq!(cut.1, 9);
        assert!(whole.ends_with(&cut.0));
        assert!(cut.0.starts_with(b"event: row\nid: 9\n"));
        assert!(f.after(3).unwrap().0.starts_with(b"event: row\nid: 4\n"));
        assert!(f.after(9).is_none());
        assert!(frames(&[]).after(0).is_none());
    }

    #[test]
    fn batched_rows_render_as_one_event_of_arrays() {
        let f = rendered(&[3, 4, 9], true);
        let (text, last) = f.after(0).unwrap();
        assert_eq!(last, 9);
        let want = "event: rows\ndata: [3,3,\"a\\\"b\\nc\"]\ndata: [4,4,\"a\\\"b\\nc\"]\n\
                    data: [9,9,\"a\\\"b\\nc\"]\nid: 9\n\n";
        assert_eq!(std::str::from_utf8(&text).unwrap(), want);
        // Cut inside: the same event with the unseen rows only.
        let (cut, last) = f.after(3).unwrap();
        assert_eq!(last, 9);
        assert_eq!(
            std::str::from_utf8(&cut).unwrap(),
            "event: rows\ndata: [4,4,\"a\\\"b\\nc\"]\ndata: [9,9,\"a\\\"b\\nc\"]\nid: 9\n\n"
        );
        assert!(f.after(9).is_none());
        let empty = rendered(&[], true);
        assert!(empty.is_empty() && empty.after(0).is_none());
        assert_eq!(
            &fields(["n", "s"].into_iter())[..],
            b"event: fields\ndata: [\"oml_tuple_id\",\"n\",\"s\"]\n\n"
        );
        // A request that chose where the id goes gets it there only.
        let mut b = FramesBuilder::new(["n", "oml_tuple_id"].into_iter(), true);
        b.row(5, |i, out| {
            out.extend_from_slice(if i == 0 { b"1" } else { b"5" })
        });
        let (text, _) = b.finish().after(0).unwrap();
        assert_eq!(&text[..], b"event: rows\ndata: [1,5]\nid: 5\n\n");
        assert_eq!(
            &fields(["n", "oml_tuple_id"].into_iter())[..],
            b"event: fields\ndata: [\"n\",\"oml_tuple_id\"]\n\n"
        );
    }
}
