//! capture
#![deny(missing_docs)]
pub mod anon;
pub mod bpf;
pub mod checksum;
pub mod cryptopan;
pub mod cut;
pub mod filter;
pub mod flow;
pub mod ipfix;
pub mod output;
pub mod packet;
pub mod sample;
pub mod text;
mod timefmt;
