//! query (skeleton; being written).
