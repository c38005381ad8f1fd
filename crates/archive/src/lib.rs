//! archive (skeleton; being written).
