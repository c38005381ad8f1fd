//! Sites and devices (capture daemons, in-line agents, collection
//! servers). A device names its credential (`credential_ref`); the secret
//! itself lives in the manager's credentials file, never here.

use super::{Conn, Result, Row};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A site (where devices are).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Site {
    /// Database id.
    #[serde(default)]
    pub id: i64,
    /// Unique name.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: String,
}

/// What kind of component a device is (which control API it speaks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A capture daemon (spec/capture-api.md).
    Capture,
    /// An in-line measurement agent.
    Inline,
    /// A collection server with the query API (docs/query-api.md).
    Collector,
}

impl Kind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Capture => "capture",
            Kind::Inline => "inline",
            Kind::Collector => "collector",
        }
    }

    fn parse(s: &str) -> Kind {
        match s {
            "capture" => Kind::Capture,
            "inline" => Kind::Inline,
            _ => Kind::Collector,
        }
    }
}

/// A device as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Device {
    /// Database id.
    pub id: i64,
    /// Unique name.
    pub name: String,
    /// Which API it speaks.
    pub kind: Kind,
    /// Its site, if any.
    pub site: Option<i64>,
    /// Host name or address of its HTTP API.
    pub hostname: String,
    /// Port of its HTTP API.
    pub port: u16,
    /// Free text.
    pub description: String,
    /// Name of its line in the credentials file (never the secret).
    pub credential_ref: Option<String>,
    /// SHA-256 of the certificate its API must present (`AB:CD:…`); with
    /// it, or with `ca_file`, the manager speaks HTTPS to the device.
    pub tls_fingerprint: Option<String>,
    /// PEM file (on the manager's host) of the CA that issued the
    /// device's certificate, checked with the device's host name.
    pub ca_file: Option<String>,
    /// Plain HTTP to a device beyond loopback is accepted: its token and
    /// data cross the network in clear (the UI marks the device).
    pub insecure: bool,
    /// What it answered last to a capabilities request.
    #[schema(value_type = Object)]
    pub capabilities: serde_json::Value,
    /// `up`, `down` or `unknown` (never polled).
    pub status: String,
    /// Last successful poll, Unix seconds.
    pub last_seen_unix_s: Option<i64>,
    /// Incremented by every edit.
    pub version: i64,
}

impl Device {
    /// Whether the manager speaks HTTPS to it (a fingerprint or CA file is set).
    pub fn tls(&self) -> bool {
        self.tls_fingerprint.is_some() || self.ca_file.is_some()
    }

    /// `https://host:port` (or `http://…` without TLS settings) of its API.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls() { "https" } else { "http" };
        if self.hostname.contains(':') && !self.hostname.starts_with('[') {
            format!("{scheme}://[{}]:{}", self.hostname, self.port)
        } else {
            format!("{scheme}://{}:{}", self.hostname, self.port)
        }
    }
}

/// The fields an administrator sets.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeviceInput {
    /// Unique name.
    pub name: String,
    /// Which API it speaks.
    pub kind: Kind,
    /// Its site.
    #[serde(default)]
    pub site: Option<i64>,
    /// Host name or address.
    pub hostname: String,
    /// Port.
    pub port: u16,
    /// Free text.
    #[serde(default)]
    pub description: String,
    /// Line of the credentials file to use.
    #[serde(default)]
    pub credential_ref: Option<String>,
    /// SHA-256 of the device's certificate, as `POST
    /// /api/v1/devices/certificate` reported it and the admin checked it
    /// against what the device printed (`AB:CD:…`, hex with or without
    /// colons, or `sha256:` and hex).
    #[serde(default)]
    pub tls_fingerprint: Option<String>,
    /// PEM file on the manager's host with the CA of the device's certificate.
    #[serde(default)]
    pub ca_file: Option<String>,
    /// Accept plain HTTP to a device that is not on loopback.
    #[serde(default)]
    pub insecure: bool,
    /// For PUT: the version being edited (409 when stale).
    #[serde(default)]
    pub version: Option<i64>,
}

const COLS: &str = "id, name, kind, site, hostname, port, description, credential_ref, \
                    capabilities, status, last_seen_unix_s, version, tls_fingerprint, ca_file, \
                    insecure";

fn device(r: &Row) -> Result<Device> {
    Ok(Device {
        id: r.get(0)?,
        name: r.get(1)?,
        kind: Kind::parse(&r.get::<String>(2)?),
        site: r.get(3)?,
        hostname: r.get(4)?,
        port: r.get(5)?,
        description: r.get(6)?,
        credential_ref: r.get(7)?,
        capabilities: super::json_col(r.get(8)?),
        status: r.get(9)?,
        last_seen_unix_s: r.get(10)?,
        version: r.get(11)?,
        tls_fingerprint: r.get(12)?,
        ca_file: r.get(13)?,
        insecure: r.get(14)?,
    })
}

/// Every device, by name.
pub fn list(c: &Conn<'_>) -> Result<Vec<Device>> {
    c.query_map(
        &format!("SELECT {COLS} FROM devices ORDER BY name"),
        (),
        device,
    )
}

/// One device.
pub fn get(c: &Conn<'_>, id: i64) -> Result<Option<Device>> {
    c.query_opt(
        &format!("SELECT {COLS} FROM devices WHERE id = ?1"),
        [id],
        device,
    )
}

/// One device by name.
pub fn by_name(c: &Conn<'_>, name: &str) -> Result<Option<Device>> {
    c.query_opt(
        &format!("SELECT {COLS} FROM devices WHERE name = ?1"),
        [name],
        device,
    )
}

/// Adds a device (status `unknown` until polled).
pub fn create(c: &Conn<'_>, d: &DeviceInput) -> Result<i64> {
    c.insert(
        "INSERT INTO devices (name, kind, site, hostname, port, description, credential_ref,
             tls_fingerprint, ca_file, insecure)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) RETURNING id",
        (
            &d.name,
            d.kind.as_str(),
            d.site,
            &d.hostname,
            d.port,
            &d.description,
            &d.credential_ref,
            &d.tls_fingerprint,
            &d.ca_file,
            d.insecure,
        ),
    )
}

/// Replaces the administrator's fields if the stored version is
/// `version`; returns whether it was.
pub fn update(c: &Conn<'_>, id: i64, version: i64, d: &DeviceInput) -> Result<bool> {
    let n = c.execute(
        "UPDATE devices SET name = ?3, kind = ?4, site = ?5, hostname = ?6, port = ?7,
             description = ?8, credential_ref = ?9, tls_fingerprint = ?10, ca_file = ?11,
             insecure = ?12, version = version + 1
         WHERE id = ?1 AND version = ?2",
        (
            id,
            version,
            &d.name,
            d.kind.as_str(),
            d.site,
            &d.hostname,
            d.port,
            &d.description,
            &d.credential_ref,
            &d.tls_fingerprint,
            &d.ca_file,
            d.insecure,
        ),
    )?;
    Ok(n == 1)
}

/// Records what a poll found.
pub fn set_seen(
    c: &Conn<'_>,
    id: i64,
    status: &str,
    capabilities: Option<&serde_json::Value>,
) -> Result<()> {
    if status == "up" {
        c.execute(
            "UPDATE devices SET status = 'up', last_seen_unix_s = ?2,
                 capabilities = COALESCE(?3, capabilities) WHERE id = ?1",
            (id, crate::now_s(), capabilities.map(|v| v.to_string())),
        )?;
    } else {
        c.execute("UPDATE devices SET status = ?2 WHERE id = ?1", (id, status))?;
    }
    Ok(())
}

/// Deletes a device.
pub fn delete(c: &Conn<'_>, id: i64) -> Result<u64> {
    c.execute("DELETE FROM devices WHERE id = ?1", [id])
}

/// Every site.
pub fn sites(c: &Conn<'_>) -> Result<Vec<Site>> {
    c.query_map(
        "SELECT id, name, description FROM sites ORDER BY name",
        (),
        |r| {
            Ok(Site {
                id: r.get(0)?,
                name: r.get(1)?,
                description: r.get(2)?,
            })
        },
    )
}

/// Adds a site.
pub fn create_site(c: &Conn<'_>, name: &str, description: &str) -> Result<i64> {
    c.insert(
        "INSERT INTO sites (name, description) VALUES (?1, ?2) RETURNING id",
        (name, description),
    )
}

/// Deletes a site (its devices keep existing, without a site).
pub fn delete_site(c: &Conn<'_>, id: i64) -> Result<u64> {
    c.execute("DELETE FROM sites WHERE id = ?1", [id])
}
