//! capture
#![deny(missing_docs)]
pub mod anon;
pub mod bpf;
pub mod checksum;
pub mod config;
pub mod counters;
pub mod cryptopan;
pub mod cut;
pub mod demux;
pub mod filter;
pub mod flow;
pub mod ipfix;
pub mod metadata;
pub mod offline;
pub mod output;
pub mod packet;
pub mod policy;
pub mod sample;
pub mod session;
pub mod text;
mod timefmt;
