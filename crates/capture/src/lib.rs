//! capture
#![deny(missing_docs)]
pub mod bpf;
pub mod checksum;
pub mod cryptopan;
pub mod filter;
pub mod packet;
pub mod text;
