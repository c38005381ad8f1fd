//! The web front end's files, embedded in the binary at build time.
//!
//! (Boundary owned by the front end: `build.rs` embeds `web/dist/`; until the
//! front end is built this router answers every page with 404.)

use axum::Router;

/// Routes serving `/` and `/assets/…` from the embedded files.
pub fn router() -> Router {
    Router::new()
}
