//! Collection servers: their query API (docs/query-api.md), read for an
//! experiment's domain with the collector's credential.

use crate::app::App;
use crate::db::devices::Device;

/// The URL of `/api/v1/domains/{domain}/{rest}?{query}` on the collector.
pub fn query_url(d: &Device, domain: &str, rest: &str, query: Option<&str>) -> String {
    let mut url = format!(
        "{}/api/v1/domains/{domain}/{}",
        d.base_url(),
        rest.trim_start_matches('/')
    );
    if url.ends_with('/') {
        url.pop();
    }
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        url.push('?');
        url.push_str(q);
    }
    url
}

/// An async request to the collector with its credential.
pub fn get(app: &App, d: &Device, url: &str) -> reqwest::RequestBuilder {
    let req = app.http.get(url);
    match app.credentials.token(d.credential_ref.as_deref()) {
        Some(t) => req.bearer_auth(t),
        None => req,
    }
}
