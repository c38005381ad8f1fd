//! Helpers shared by the CLI integration tests.

pub mod oml4py;
