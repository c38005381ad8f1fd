//! Who may read what, and the JSON error answers: `httpkit`'s types, used
//! by every handler (each calls `caller.require_read(domain)`).

pub use httpkit::{ApiError, ApiResult, Caller};
