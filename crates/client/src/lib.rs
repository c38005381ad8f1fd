//! The streamgauge injection-point library.
#![deny(missing_docs)]

pub mod spec;
