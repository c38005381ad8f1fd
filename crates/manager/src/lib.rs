//! # manager — the management plane of streamgauge
//!
//! One process serving the REST API of `spec/manager-api.md` and the web
//! front end (`web/`, built to `web/dist/` and embedded by [`assets`]).
#![deny(missing_docs)]

pub mod assets;
