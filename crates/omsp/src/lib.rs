//! # omsp — the OML Measurement Stream Protocol, without I/O
//!
//! OMSP is how OML clients send measurement streams to a collection point: a
//! text header of `key: value` lines declaring the session and its stream
//! schemas, then tuples in a text (tab-separated lines) or binary (`AA AA`
//! framed packets) encoding. This crate reads and writes every version (1–5)
//! and both encodings, byte-compatible with the reference implementation
//! (liboml2 / oml2-server), and does no I/O: it turns bytes into
//! [`Event`]s and tuples into bytes, so it can be fuzzed, bound to C and
//! Python, and tested without sockets. The protocol is specified in
//! `spec/omsp.md` at the root of the repository.
//!
//! ## Decoding
//! ```
//! use omsp::{Decoder, Event, Value};
//!
//! let input = b"protocol: 5\ndomain: d\nschema: 1 app_rtt ms:double host:string\ncontent: text\n\n\
//!               1.25\t1\t1\t0.5\tnode\\t1\n";
//! let mut decoder = Decoder::new();
//! decoder.feed(input); // any chunking works, one byte at a time included
//! decoder.finish();
//! let mut samples = Vec::new();
//! while let Some(event) = decoder.next_event() {
//!     match event.expect("valid input") {
//!         Event::Header(h) => assert_eq!(h.domain.as_deref(), Some("d")),
//!         Event::Sample(s) => samples.push(s),
//!         Event::Schema(_) => {}
//!     }
//! }
//! assert_eq!(samples[0].values, [Value::Double(0.5), Value::String("node\t1".into())]);
//! ```
//!
//! ## Encoding
//! ```
//! use omsp::{Content, Encoder, Header, Schema, Value};
//!
//! let mut header = Header::new("d", "sender", "app", 1_700_000_000, Content::Binary);
//! header.schemas.push(Schema::parse("1 app_rtt ms:double").unwrap());
//! let mut enc = Encoder::new(Content::Binary);
//! let mut out = Vec::new();
//! enc.header(&header, &mut out);
//! enc.tuple(&mut out, 1, 1, 0.25, [Value::Double(0.5).as_value_ref()]).unwrap();
//! assert_eq!(&out[out.len() - 24..][..5], &[0xAA, 0xAA, 0x01, 0x00, 19]);
//! ```
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod admission;
pub mod backoff;
pub mod binary;
pub mod convert;
mod decoder;
mod encoder;
mod error;
pub mod exact_doubles;
pub mod header;
pub mod json;
pub mod metadata;
pub mod names;
mod sample;
pub mod schema;
pub mod session;
mod table;
pub mod text;
pub mod types;
mod value;

pub use decoder::{Decoder, Event, Limits};
pub use encoder::Encoder;
pub use error::{DecodeError, EncodeError, ErrorKind, ValueError};
pub use header::{Content, Header, HeaderError, HeaderLimits};
pub use sample::Sample;
pub use schema::{Field, Schema, SchemaError};
pub use table::SchemaTable;
pub use types::OmlType;
pub use value::{Value, ValueRef};
