//! capture (skeleton; being written).
