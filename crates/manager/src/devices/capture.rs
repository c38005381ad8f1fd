//! Capture daemons (spec/capture-api.md), driven through the capture
//! crate's blocking control client.

use capture::daemon::ctl::CtlClient;
use serde_json::Value;

use super::{json, DeviceError};
use crate::app::App;
use crate::db::devices::Device;

/// The control client for a daemon, with its credential.
pub fn ctl(app: &App, d: &Device) -> CtlClient {
    CtlClient::new(
        &d.base_url(),
        app.credentials.token(d.credential_ref.as_deref()),
    )
}

/// Whether `name` is a plain session or file name of the daemon
/// (`[A-Za-z0-9_.-]`, not starting with `.`), safe as a path segment.
pub fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

/// `POST /api/v1/sessions?experiment=…[&archive=…]`.
pub fn create_session(
    ctl: &CtlClient,
    experiment: &str,
    archive: Option<&str>,
    session: &Value,
) -> Result<Value, DeviceError> {
    let mut path = format!("/api/v1/sessions?experiment={experiment}");
    if let Some(a) = archive {
        path.push_str("&archive=");
        path.push_str(a);
    }
    json(&ctl.post(&path, &session.to_string())?)
}

/// `POST /api/v1/sessions/{id}/{action}`: the status after the transition.
pub fn action(ctl: &CtlClient, session: &str, action: &str) -> Result<Value, DeviceError> {
    json(&ctl.post(&format!("/api/v1/sessions/{session}/{action}"), "{}")?)
}

/// `GET /api/v1/sessions/{id}/{what}` (`status`, `log`, `files`).
pub fn read(ctl: &CtlClient, session: &str, what: &str) -> Result<Value, DeviceError> {
    json(&ctl.get(&format!("/api/v1/sessions/{session}/{what}"))?)
}

/// The URL of one file of a session.
pub fn file_url(d: &Device, session: &str, name: &str) -> String {
    format!("{}/api/v1/sessions/{session}/files/{name}", d.base_url())
}
