//! Rows rendered once as Server-Sent Events text, and the response that
//! carries them.
//!
//! A batch of rows becomes one buffer of `event: row` / `id:` / `data:`
//! events. Every client following the same request is handed the same
//! buffer (a reference-counted [`Bytes`], not a copy), cut at the first
//! row it has not sent yet, and the HTTP layer writes it as one chunk.
//! Serving a row to ten browsers then costs ten pointer copies, not ten
//! JSON renderings, ten event objects and ten small writes: the work that
//! competes with ingestion for the cores grows with batches, not with
//! rows times clients.

use std::convert::Infallible;
use std::io::Write as _;
use std::time::Duration;

use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

/// A comment line sent when nothing else was for this long, so proxies and
/// browsers keep the connection open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A batch of rows as SSE text, ids ascending.
pub struct Frames {
    /// Every row's event, in order.
    text: Bytes,
    /// Per row: its `oml_tuple_id` and where its event starts in `text`.
    rows: Vec<(i64, usize)>,
}

impl Frames {
    /// The events of the rows after `last`, and the id of the last one;
    /// `None` if every row is at or before `last`.
    pub fn after(&self, last: i64) -> Option<(Bytes, i64)> {
        let first = self.rows.partition_point(|(id, _)| *id <= last);
        let (_, at) = *self.rows.get(first)?;
        let (end, _) = *self.rows.last()?;
        Some((self.text.slice(at..), end))
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
    /// Each field's `"name":` (JSON-escaped), rendered once per batch.
    keys: Vec<Vec<u8>>,
}

impl FramesBuilder {
    /// A batch whose rows carry the fields `names`, in this order.
    pub fn new<'a>(names: impl Iterator<Item = &'a str>) -> FramesBuilder {
        let keys = names
            .map(|n| {
                // A string into a Vec cannot fail.
                let mut k = serde_json::to_vec(n).unwrap_or_default();
                k.push(b':');
                k
            })
            .collect();
        FramesBuilder {
            buf: Vec::with_capacity(64 << 10),
            rows: Vec::new(),
            keys,
        }
    }

    /// Appends the event of row `id`; `value(i, buf)` writes the JSON value
    /// of field `i` into `buf`.
    pub fn row(&mut self, id: i64, mut value: impl FnMut(usize, &mut Vec<u8>)) {
        self.rows.push((id, self.buf.len()));
        let _ = write!(self.buf, "event: row\nid: {id}\ndata: {{");
        for (i, key) in self.keys.iter().enumerate() {
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
    pub fn finish(self) -> Frames {
        Frames {
            text: Bytes::from(self.buf),
            rows: self.rows,
        }
    }
}

/// One event without an id (`error`, `lagged`) carrying `data` (JSON).
pub fn event(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// The `text/event-stream` response writing what arrives on `rx`, with a
/// keep-alive comment whenever nothing did for [`KEEP_ALIVE`]; it ends
/// when every sender is gone.
pub fn response(rx: mpsc::Receiver<Bytes>) -> Response {
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        let next = match tokio::time::timeout(KEEP_ALIVE, rx.recv()).await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return None,
            Err(_) => Bytes::from_static(b":\n\n"),
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
        let mut b = FramesBuilder::new(["n", "s"].into_iter());
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
}
