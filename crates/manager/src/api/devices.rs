//! `/sites`, `/devices` (changes: admin), capability refresh, monitoring
//! snapshots and `/alerts`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use httpkit::tls::{ClientTls, Fingerprint};
use httpkit::{ApiError, ApiResult};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{invalid, not_found, scope, JsonBody, P, Q};
use crate::app::App;
use crate::audit::record;
use crate::auth::caller::Me;
use crate::db::devices::{self, Device, DeviceInput, Site};
use crate::db::monitor::{self, Alert, Snapshot};
use crate::devices::transport;

/// Every site.
#[utoipa::path(get, path = "/api/v1/sites", responses((status = 200, body = [Site])))]
pub async fn sites(State(app): State<Arc<App>>, _me: Me) -> ApiResult<Json<Vec<Site>>> {
    Ok(Json(app.db.with(devices::sites)?))
}

/// Adds a site (admin).
#[utoipa::path(post, path = "/api/v1/sites", request_body = Site, responses((status = 201, body = Site)))]
pub async fn create_site(
    State(app): State<Arc<App>>,
    me: Me,
    JsonBody(mut s): JsonBody<Site>,
) -> ApiResult<(StatusCode, Json<Site>)> {
    me.require_admin()?;
    if s.name.trim().is_empty() {
        return Err(invalid("name", "give the site a name"));
    }
    s.id = app
        .db
        .with(|c| devices::create_site(c, &s.name, &s.description))?;
    record(
        &app.db,
        me.name(),
        "site.create",
        &format!("site/{}", s.id),
        &s.name,
    );
    Ok((StatusCode::CREATED, Json(s)))
}

/// Deletes a site (admin).
#[utoipa::path(delete, path = "/api/v1/sites/{id}", responses((status = 200)))]
pub async fn delete_site(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
) -> ApiResult<Json<serde_json::Value>> {
    me.require_admin()?;
    if app.db.with(|c| devices::delete_site(c, id))? == 0 {
        return Err(not_found("site", id));
    }
    record(
        &app.db,
        me.name(),
        "site.delete",
        &format!("site/{id}"),
        "deleted",
    );
    Ok(Json(serde_json::json!({"deleted": id})))
}

/// Every device (credentials are references, never secrets).
#[utoipa::path(get, path = "/api/v1/devices", responses((status = 200, body = [Device])))]
pub async fn list(State(app): State<Arc<App>>, me: Me) -> ApiResult<Json<Vec<Device>>> {
    let all = app.db.with(devices::list)?;
    let seen: ApiResult<Vec<Device>> = all
        .into_iter()
        .map(|d| scope::device(&app, &me, d))
        .collect();
    Ok(Json(seen?))
}

/// One device.
#[utoipa::path(get, path = "/api/v1/devices/{id}", responses((status = 200, body = Device)))]
pub async fn one(State(app): State<Arc<App>>, me: Me, P(id): P<i64>) -> ApiResult<Json<Device>> {
    let d = app
        .db
        .with(|c| devices::get(c, id))?
        .ok_or_else(|| not_found("device", id))?;
    Ok(Json(scope::device(&app, &me, d)?))
}

/// Checks the fields and writes the fingerprint in its one form (`AB:CD:…`).
fn check(app: &App, d: &mut DeviceInput) -> ApiResult<()> {
    if d.name.trim().is_empty() || d.name.len() > 64 {
        return Err(invalid("name", "give a name of 1-64 characters"));
    }
    if d.hostname.trim().is_empty() || d.hostname.contains(['/', ' ', '?', '#', '@']) {
        return Err(invalid("hostname", "a host name or address"));
    }
    if d.port == 0 {
        return Err(invalid("port", "1-65535"));
    }
    if let Some(r) = &d.credential_ref {
        if !app.credentials.knows(r) {
            return Err(invalid(
                "credential_ref",
                format!("the credentials file has no line {r:?}: add '<name> <token>' to the file given with --credentials and restart"),
            ));
        }
    }
    d.tls_fingerprint = d.tls_fingerprint.take().filter(|f| !f.trim().is_empty());
    d.ca_file = d.ca_file.take().filter(|f| !f.trim().is_empty());
    if d.tls_fingerprint.is_some() && d.ca_file.is_some() {
        return Err(invalid(
            "ca_file",
            "give tls_fingerprint or ca_file, not both: a pinned certificate needs no CA",
        ));
    }
    if let Some(f) = &d.tls_fingerprint {
        let fp = Fingerprint::parse(f).ok_or_else(|| {
            invalid(
                "tls_fingerprint",
                "a SHA-256 fingerprint: 64 hex digits, with or without ':' (as \
                 POST /api/v1/devices/certificate and the device's start-up line show it)",
            )
        })?;
        d.tls_fingerprint = Some(fp.to_string());
    }
    if let Some(ca) = &d.ca_file {
        ClientTls::ca_file(std::path::Path::new(ca))
            .map_err(|e| invalid("ca_file", e.to_string()))?;
    }
    if d.tls_fingerprint.is_none() && d.ca_file.is_none() {
        if let Some(why) = transport::plain_refusal(&d.hostname, d.insecure) {
            return Err(ApiError::bad_request("insecure_transport", why));
        }
    }
    Ok(())
}

/// Where to ask a device for its certificate.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CertificateQuery {
    /// Host name or address of its API.
    pub hostname: String,
    /// Port of its API.
    pub port: u16,
}

/// The certificate a device presented.
#[derive(Debug, Serialize, ToSchema)]
pub struct PresentedCertificate {
    /// As asked.
    pub hostname: String,
    /// As asked.
    pub port: u16,
    /// SHA-256 of the certificate, `AB:CD:…`: compare it with the line
    /// the device printed at its first start, then send it as the
    /// device's `tls_fingerprint`.
    pub tls_fingerprint: String,
    /// Devices that already pin this certificate.
    pub pinned_by: Vec<String>,
}

/// Connects to a device's API and reports the certificate it presents,
/// without sending any request or credential (admin). The manager trusts
/// nothing by this: an admin confirms the fingerprint by saving it.
#[utoipa::path(post, path = "/api/v1/devices/certificate", request_body = CertificateQuery,
    responses((status = 200, body = PresentedCertificate), (status = 502, description = "device_unreachable: no TLS server answered")))]
pub async fn certificate(
    State(app): State<Arc<App>>,
    me: Me,
    JsonBody(q): JsonBody<CertificateQuery>,
) -> ApiResult<Json<PresentedCertificate>> {
    me.require_admin()?;
    if q.hostname.trim().is_empty() || q.hostname.contains(['/', ' ', '?', '#', '@']) || q.port == 0
    {
        return Err(invalid(
            "hostname",
            "a host name or address and a port 1-65535",
        ));
    }
    let (host, port) = (q.hostname.clone(), q.port);
    let seen = tokio::task::spawn_blocking(move || {
        httpkit::tls::presented_fingerprint(&host, port, std::time::Duration::from_secs(5))
    })
    .await
    .map_err(|e| ApiError::internal(format!("certificate task: {e}")))?
    .map_err(|why| {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            "device_unreachable",
            format!(
                "no TLS server at {}:{}: {why} (is the device serving HTTPS there?)",
                q.hostname, q.port
            ),
        )
    })?;
    let fp = seen.to_string();
    let pinned_by = app
        .db
        .with(devices::list)?
        .into_iter()
        .filter(|d| d.tls_fingerprint.as_deref() == Some(fp.as_str()))
        .map(|d| d.name)
        .collect();
    Ok(Json(PresentedCertificate {
        hostname: q.hostname,
        port: q.port,
        tls_fingerprint: fp,
        pinned_by,
    }))
}

/// Adds a device (admin).
#[utoipa::path(post, path = "/api/v1/devices", request_body = DeviceInput, responses((status = 201, body = Device)))]
pub async fn create(
    State(app): State<Arc<App>>,
    me: Me,
    JsonBody(mut d): JsonBody<DeviceInput>,
) -> ApiResult<(StatusCode, Json<Device>)> {
    me.require_admin()?;
    check(&app, &mut d)?;
    let id = app.db.with(|c| devices::create(c, &d))?;
    record(
        &app.db,
        me.name(),
        "device.create",
        &format!("device/{id}"),
        &format!(
            "{} ({} at {}:{}, {})",
            d.name,
            d.kind.as_str(),
            d.hostname,
            d.port,
            transport_summary(&d)
        ),
    );
    let dev = app
        .db
        .with(|c| devices::get(c, id))?
        .ok_or_else(|| not_found("device", id))?;
    Ok((StatusCode::CREATED, Json(dev)))
}

/// How the manager will reach the device, for the audit log.
fn transport_summary(d: &DeviceInput) -> String {
    match (&d.tls_fingerprint, &d.ca_file) {
        (Some(f), _) => format!("https pinned {f}"),
        (None, Some(ca)) => format!("https with CA file {ca}"),
        _ if d.insecure => "plain http, insecure".into(),
        _ => "plain http on loopback".into(),
    }
}

/// Edits a device (admin); `version` must be the stored one.
#[utoipa::path(put, path = "/api/v1/devices/{id}", request_body = DeviceInput, responses((status = 200, body = Device), (status = 409, description = "edit_conflict")))]
pub async fn update(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
    JsonBody(mut d): JsonBody<DeviceInput>,
) -> ApiResult<Json<Device>> {
    me.require_admin()?;
    check(&app, &mut d)?;
    let current = app
        .db
        .with(|c| devices::get(c, id))?
        .ok_or_else(|| not_found("device", id))?;
    let version = d
        .version
        .ok_or_else(|| invalid("version", "send the version you edit"))?;
    if !app.db.with(|c| devices::update(c, id, version, &d))? {
        return Err(conflict(serde_json::to_value(&current).unwrap_or_default()));
    }
    record(
        &app.db,
        me.name(),
        "device.update",
        &format!("device/{id}"),
        &format!("{} ({})", d.name, transport_summary(&d)),
    );
    let dev = app
        .db
        .with(|c| devices::get(c, id))?
        .ok_or_else(|| not_found("device", id))?;
    Ok(Json(dev))
}

/// 409 `edit_conflict` with the stored object.
pub fn conflict(current: serde_json::Value) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "edit_conflict",
        "someone changed this since you loaded it: reload, reapply your change, save again",
    )
    .with_details(serde_json::json!({ "current": current }))
}

/// Deletes a device (admin; refused while configurations use it).
#[utoipa::path(delete, path = "/api/v1/devices/{id}", responses((status = 200)))]
pub async fn remove(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
) -> ApiResult<Json<serde_json::Value>> {
    me.require_admin()?;
    let d = app
        .db
        .with(|c| devices::get(c, id))?
        .ok_or_else(|| not_found("device", id))?;
    app.db.with(|c| devices::delete(c, id))?;
    record(
        &app.db,
        me.name(),
        "device.delete",
        &format!("device/{id}"),
        &d.name,
    );
    Ok(Json(serde_json::json!({"deleted": id})))
}

/// Fetches the device's capabilities now (admin).
#[utoipa::path(post, path = "/api/v1/devices/{id}/refresh", responses((status = 200, body = Device), (status = 502, description = "device_unreachable; device_certificate: not the pinned certificate (or not from the CA); device_transport: plain HTTP refused or unusable TLS settings")))]
pub async fn refresh(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
) -> ApiResult<Json<Device>> {
    me.require_admin()?;
    let d = app
        .db
        .with(|c| devices::get(c, id))?
        .ok_or_else(|| not_found("device", id))?;
    let r = crate::devices::probe(&app, &d).await;
    record(
        &app.db,
        me.name(),
        "device.refresh",
        &format!("device/{id}"),
        &d.name,
    );
    match r {
        Ok(p) => app
            .db
            .with(|c| devices::set_seen(c, id, "up", Some(&p.capabilities)))?,
        Err(e) => {
            app.db.with(|c| devices::set_seen(c, id, "down", None))?;
            let code = match e {
                crate::devices::DeviceError::Certificate(_) => "device_certificate",
                crate::devices::DeviceError::Transport(_) => "device_transport",
                _ => "device_unreachable",
            };
            return Err(ApiError::new(
                StatusCode::BAD_GATEWAY,
                code,
                format!("device {}: {e}", d.name),
            ));
        }
    }
    let d = app
        .db
        .with(|c| devices::get(c, id))?
        .ok_or_else(|| not_found("device", id))?;
    Ok(Json(d))
}

/// `?since=UNIX_S`.
#[derive(Debug, Deserialize, IntoParams)]
pub struct Since {
    /// Oldest snapshot time wanted (default: the last hour).
    pub since: Option<i64>,
}

/// A device's monitoring snapshots, oldest first.
#[utoipa::path(get, path = "/api/v1/devices/{id}/snapshots", params(Since), responses((status = 200, body = [Snapshot])))]
pub async fn snapshots(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
    Q(q): Q<Since>,
) -> ApiResult<Json<Vec<Snapshot>>> {
    let since = q.since.unwrap_or(crate::now_s() - 3600);
    let all = app.db.with(|c| monitor::since(c, id, since))?;
    Ok(Json(scope::snapshots(&app, &me, id, all)?))
}

/// Active alerts.
#[utoipa::path(get, path = "/api/v1/alerts", responses((status = 200, body = [Alert])))]
pub async fn alerts(State(app): State<Arc<App>>, me: Me) -> ApiResult<Json<Vec<Alert>>> {
    Ok(Json(scope::alerts(&me, app.db.with(monitor::active)?)))
}
