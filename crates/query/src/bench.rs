//! Benchmark (being written).
