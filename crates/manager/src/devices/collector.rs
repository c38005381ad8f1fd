//! Collection servers: their query API (docs/query-api.md), read for an
//! experiment's domain with the collector's credential. URLs come only
//! from [`super::relay_path::upstream_url`].

use axum::http::{HeaderName, HeaderValue, Response};
use httpkit::client::Body;

use crate::app::App;
use crate::db::devices::Device;

use super::DeviceError;

/// `GET url` on the device with its credential, over the transport its
/// record asks for ([`super::transport`]): the answer whatever its
/// status, its body to be read as it comes ([`super::streamed`]).
/// `url` is one of [`super::relay_path::upstream_url`], built on the
/// device's base URL: only its path and query are sent.
pub async fn get(
    app: &App,
    d: &Device,
    url: &url::Url,
    headers: Vec<(HeaderName, HeaderValue)>,
) -> Result<Response<Body>, DeviceError> {
    let client = super::client(app, d)?;
    let path = url[url::Position::BeforePath..].to_owned();
    super::streamed::get(client, path, headers).await
}
