//! Capture daemons (spec/capture-api.md), driven through the capture
//! crate's blocking control client.

use capture::daemon::ctl::CtlClient;
use serde_json::Value;

use super::{json, DeviceError};
use crate::app::App;
use crate::db::devices::Device;

/// The control client for a daemon, with its credential and the
/// verification of its certificate.
pub fn ctl(app: &App, d: &Device) -> Result<CtlClient, DeviceError> {
    let tls = super::transport::client_tls(d)?;
    Ok(CtlClient::new(
        &d.base_url(),
        app.credentials.token(d.credential_ref.as_deref()),
    )
    .with_tls(tls))
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

/// Creates the session, or finds it already there from a lost answer to
/// an earlier attempt: then it belongs to this experiment (domain) and
/// was never started. Any other session of that name is refused without
/// saying anything about it: it is another tenant's (or a deleted
/// experiment's, whose domain and run id came again), and acting on it
/// would start or stop their capture and show their files.
pub fn create_or_find(
    ctl: &CtlClient,
    experiment: &str,
    archive: Option<&str>,
    session: &Value,
) -> Result<(), DeviceError> {
    match create_session(ctl, experiment, archive, session) {
        Ok(_) => Ok(()),
        Err(DeviceError::Refused { status: 409, .. }) => {
            let name = session["name"].as_str().unwrap_or_default();
            let found = json(&ctl.get(&format!("/api/v1/sessions/{name}"))?)?;
            let ours = found["experiment"].as_str() == Some(experiment)
                && found["state"].as_str() == Some("created");
            if ours {
                Ok(())
            } else {
                Err(DeviceError::Refused {
                    status: 409,
                    code: "session_name_taken".into(),
                    message: "the device already keeps a session of this name that is not \
                              this experiment's: copy the configuration under another name and \
                              start a new run"
                        .into(),
                })
            }
        }
        Err(e) => Err(e),
    }
}

/// `POST /api/v1/sessions/{id}/{action}`: the status after the transition.
pub fn action(ctl: &CtlClient, session: &str, action: &str) -> Result<Value, DeviceError> {
    json(&ctl.post(&format!("/api/v1/sessions/{session}/{action}"), "{}")?)
}

/// `GET /api/v1/sessions/{id}/{what}` (`status`, `log`, `files`).
pub fn read(ctl: &CtlClient, session: &str, what: &str) -> Result<Value, DeviceError> {
    json(&ctl.get(&format!("/api/v1/sessions/{session}/{what}"))?)
}

/// The path of one file of a session on its daemon.
pub fn file_path(session: &str, name: &str) -> String {
    format!("/api/v1/sessions/{session}/files/{name}")
}
