//! Collection servers: their query API (docs/query-api.md), read for an
//! experiment's domain with the collector's credential. URLs come only
//! from [`super::relay_path::upstream_url`].

use crate::app::App;
use crate::db::devices::Device;

/// An async request to the collector with its credential.
pub fn get(app: &App, d: &Device, url: url::Url) -> reqwest::RequestBuilder {
    let req = app.http.get(url);
    match app.credentials.token(d.credential_ref.as_deref()) {
        Some(t) => req.bearer_auth(t),
        None => req,
    }
}
