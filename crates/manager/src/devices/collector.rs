//! Collection servers: their query API (docs/query-api.md), read for an
//! experiment's domain with the collector's credential. URLs come only
//! from [`super::relay_path::upstream_url`].

use crate::app::App;
use crate::db::devices::Device;

use super::DeviceError;

/// An async request to the device with its credential, over the
/// transport its record asks for ([`super::transport`]).
pub fn get(app: &App, d: &Device, url: url::Url) -> Result<reqwest::RequestBuilder, DeviceError> {
    let req = super::transport::http(&app.http, d)?.get(url);
    Ok(match app.credentials.token(d.credential_ref.as_deref()) {
        Some(t) => req.bearer_auth(t),
        None => req,
    })
}
