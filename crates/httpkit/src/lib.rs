//! httpkit (skeleton; being written).
