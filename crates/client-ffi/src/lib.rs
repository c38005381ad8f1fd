//! # client-ffi — liboml2 for C programs
//!
//! Builds `liboml2.so` and `liboml2.a` with the C API of OML's client
//! library (`omlc_init`, `omlc_add_mp`, `omlc_start`, `omlc_inject`,
//! `omlc_close`, the `OmlValueU` accessor macros, libocomm's logging), so
//! a C program written for liboml2 compiles unchanged against
//! `include/oml2/omlc.h` and links with `-loml2`. Underneath, the
//! streamgauge client ([`client`]) does the work: per-thread queues, Rust
//! filters, text and binary OMSP, TCP and file destinations.
//!
//! The manual is `docs/client-c.md`; the behaviour being reproduced is
//! `spec/omsp.md` §8.
//!
//! ```c
//! #include <oml2/omlc.h>
//!
//! int main(int argc, const char **argv) {
//!   static OmlMPDef defs[] = {{"rtt", OML_DOUBLE_VALUE}, {NULL, (OmlValueT)0}};
//!   if (omlc_init("ping", &argc, argv, NULL) == -1) return 1;
//!   OmlMP *mp = omlc_add_mp("probe", defs);
//!   if (omlc_start() != 0) return 1;
//!   OmlValueU v[1];
//!   omlc_zero_array(v, 1);
//!   omlc_set_double(v[0], 12.5);
//!   omlc_inject(mp, v);
//!   return omlc_close();
//! }
//! ```
//!
//! | Module | What |
//! |---|---|
//! | [`types`] | the `#[repr(C)]` types of the header |
//! | `api` | init, add_mp, start, close, argv compaction |
//! | `inject` | inject, process, inject_metadata |
//! | `values` | reading `OmlValueU` as declared types |
//! | `runtime` | the only glue to the `client` crate |
//! | `log` | libocomm logging, the `tracing` bridge |
//! | `alloc`, `guid`, `value_api`, `filter`, `signals` | the rest of the API |
//!
//! Every exported function catches panics (`guard`) and returns the
//! function's error value instead of unwinding into C.
#![deny(missing_docs)]

mod alloc;
mod api;
mod filter;
mod guard;
mod guid;
mod inject;
mod log;
pub mod mp;
mod runtime;
mod signals;
mod state;
pub mod types;
mod value_api;
mod value_parse;
mod values;
