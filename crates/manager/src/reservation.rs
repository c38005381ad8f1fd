//! Control-framework adapter: a testbed reservation (a slice with its
//! users, nodes and links) becomes a manager experiment with members and
//! devices.
//!
//! [`ReservationSource`] is the interface a testbed's control framework
//! implements (or feeds); [`FileReservation`] is the concrete adapter
//! over a documented TOML or JSON description (`docs/manager.md`,
//! *Reservations*), used by `streamgauge manager import-reservation`.
//! [`import`] is idempotent: importing the same reservation twice changes
//! nothing the second time; devices are matched by name, users by name.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::db::devices::{self, DeviceInput, Kind};
use crate::db::experiments;
use crate::db::users::{self, Role};
use crate::db::Db;
use crate::names::default_domain;

/// A slice as a testbed describes it.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Reservation {
    /// Slice name: the experiment's name.
    pub slice: String,
    /// Domain of its data (default: from the slice name).
    #[serde(default)]
    pub domain: Option<String>,
    /// Free text.
    #[serde(default)]
    pub description: String,
    /// Owner (one of `users`; default the first).
    #[serde(default)]
    pub owner: Option<String>,
    /// The slice's users: the experiment's members.
    pub users: Vec<SliceUser>,
    /// Reserved nodes and the measurement devices on them.
    #[serde(default)]
    pub nodes: Vec<Node>,
    /// Links between nodes (recorded in the description).
    #[serde(default)]
    pub links: Vec<Link>,
    /// Name of the device (kind `collector`) holding the slice's streams.
    #[serde(default)]
    pub collector: Option<String>,
}

/// A user of the slice.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SliceUser {
    /// User name in the manager.
    pub name: String,
}

/// A reserved node.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Node {
    /// Node name.
    pub name: String,
    /// Site (created if unknown).
    #[serde(default)]
    pub site: Option<String>,
    /// Measurement devices on the node.
    #[serde(default)]
    pub devices: Vec<NodeDevice>,
}

/// A device on a node.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NodeDevice {
    /// Unique device name.
    pub name: String,
    /// `capture`, `inline` or `collector`.
    pub kind: Kind,
    /// Address of its API.
    pub hostname: String,
    /// Port of its API.
    pub port: u16,
    /// Line of the manager's credentials file.
    #[serde(default)]
    pub credential_ref: Option<String>,
    /// SHA-256 of its API's certificate (the manager pins it).
    #[serde(default)]
    pub tls_fingerprint: Option<String>,
    /// CA file (on the manager's host) of its API's certificate.
    #[serde(default)]
    pub ca_file: Option<String>,
    /// Accept plain HTTP to it beyond loopback.
    #[serde(default)]
    pub insecure: bool,
    /// Free text.
    #[serde(default)]
    pub description: String,
}

/// A link of the slice.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// Link name.
    pub name: String,
    /// The nodes it joins.
    pub endpoints: Vec<String>,
}

/// Why a reservation cannot be imported.
#[derive(Debug, thiserror::Error)]
pub enum ReservationError {
    /// The description could not be read.
    #[error("reservation {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// Not valid TOML/JSON or not the documented shape.
    #[error("reservation {path}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's message.
        message: String,
    },
    /// Consistent syntax, inconsistent content.
    #[error("reservation: {0}")]
    Invalid(String),
    /// The database refused.
    #[error("reservation: database: {0}")]
    Db(String),
}

/// Where reservations come from (a control framework's adapter).
pub trait ReservationSource {
    /// The reservation to import.
    fn reservation(&self) -> Result<Reservation, ReservationError>;
}

/// A reservation described in a file: JSON when the name ends in
/// `.json`, TOML otherwise.
#[derive(Debug, Clone)]
pub struct FileReservation {
    /// The file.
    pub path: PathBuf,
}

impl FileReservation {
    /// An adapter over `path`.
    pub fn new(path: &Path) -> FileReservation {
        FileReservation {
            path: path.to_owned(),
        }
    }
}

impl ReservationSource for FileReservation {
    fn reservation(&self) -> Result<Reservation, ReservationError> {
        let path = self.path.display().to_string();
        let text =
            std::fs::read_to_string(&self.path).map_err(|source| ReservationError::Read {
                path: path.clone(),
                source,
            })?;
        let parsed = if self.path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(&text).map_err(|e| e.to_string())
        } else {
            toml::from_str(&text).map_err(|e| e.to_string())
        };
        parsed.map_err(|message| ReservationError::Parse { path, message })
    }
}

/// What an import did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportReport {
    /// The experiment's id.
    pub experiment: i64,
    /// Whether it was created (else updated).
    pub created: bool,
    /// Users created (without a usable password: an admin sets one).
    pub users_created: Vec<String>,
    /// Devices created.
    pub devices_created: Vec<String>,
    /// Devices updated to the reservation's address.
    pub devices_updated: Vec<String>,
}

fn check(r: &Reservation) -> Result<(), ReservationError> {
    let bad = |m: String| Err(ReservationError::Invalid(m));
    if r.slice.trim().is_empty() {
        return bad("slice: give the slice a name".into());
    }
    if r.users.is_empty() {
        return bad("users: list at least one user".into());
    }
    if let Some(o) = &r.owner {
        if !r.users.iter().any(|u| &u.name == o) {
            return bad(format!("owner {o:?} is not one of users"));
        }
    }
    let names: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
    for l in &r.links {
        if let Some(e) = l.endpoints.iter().find(|e| !names.contains(&e.as_str())) {
            return bad(format!("link {}: endpoint {e:?} is not a node", l.name));
        }
    }
    if let Some(c) = &r.collector {
        let ok = r
            .nodes
            .iter()
            .flat_map(|n| &n.devices)
            .any(|d| &d.name == c && d.kind == Kind::Collector);
        if !ok {
            return bad(format!(
                "collector {c:?} is not a collector device of a node"
            ));
        }
    }
    Ok(())
}

/// Imports a reservation (one transaction); `actor` goes to the audit log.
pub fn import(db: &Db, r: &Reservation, actor: &str) -> Result<ImportReport, ReservationError> {
    check(r)?;
    let mut report = ImportReport::default();
    let links: Vec<String> = r
        .links
        .iter()
        .map(|l| format!("{} ({})", l.name, l.endpoints.join(" - ")))
        .collect();
    let mut description = r.description.clone();
    if !links.is_empty() {
        description = format!("{description}\nlinks: {}", links.join("; "))
            .trim()
            .to_owned();
    }
    let domain = r.domain.clone().unwrap_or_else(|| default_domain(&r.slice));
    db.tx(|c| {
        let mut user_ids = Vec::new();
        for u in &r.users {
            let id = match users::by_name(c, &u.name)? {
                Some(x) => x.id,
                None => {
                    // No password anyone knows: an admin sets one (PATCH /users/{id}).
                    let locked = format!("!locked:{}", crate::auth::random_hex(16));
                    report.users_created.push(u.name.clone());
                    users::create(c, &u.name, &locked, Role::User)?.id
                }
            };
            user_ids.push(id);
        }
        let mut collector = None;
        for n in &r.nodes {
            let site = match &n.site {
                Some(s) => Some(
                    match devices::sites(c)?.into_iter().find(|x| &x.name == s) {
                        Some(x) => x.id,
                        None => devices::create_site(c, s, "")?,
                    },
                ),
                None => None,
            };
            for d in &n.devices {
                let input = DeviceInput {
                    name: d.name.clone(),
                    kind: d.kind,
                    site,
                    hostname: d.hostname.clone(),
                    port: d.port,
                    description: if d.description.is_empty() {
                        format!("node {} of slice {}", n.name, r.slice)
                    } else {
                        d.description.clone()
                    },
                    credential_ref: d.credential_ref.clone(),
                    tls_fingerprint: d.tls_fingerprint.as_deref().map(|f| {
                        match httpkit::tls::Fingerprint::parse(f) {
                            Some(fp) => fp.to_string(),
                            None => f.to_owned(),
                        }
                    }),
                    ca_file: d.ca_file.clone(),
                    insecure: d.insecure,
                    version: None,
                };
                let id = match devices::by_name(c, &d.name)? {
                    Some(old) => {
                        let same = old.hostname == d.hostname
                            && old.port == d.port
                            && old.kind == d.kind
                            && old.credential_ref == d.credential_ref
                            && old.tls_fingerprint == input.tls_fingerprint
                            && old.ca_file == input.ca_file
                            && old.insecure == input.insecure;
                        if !same {
                            devices::update(c, old.id, old.version, &input)?;
                            report.devices_updated.push(d.name.clone());
                        }
                        old.id
                    }
                    None => {
                        report.devices_created.push(d.name.clone());
                        devices::create(c, &input)?
                    }
                };
                if r.collector.as_deref() == Some(d.name.as_str()) {
                    collector = Some(id);
                }
            }
        }
        let owner_name = r.owner.clone().unwrap_or_else(|| r.users[0].name.clone());
        let owner = users::by_name(c, &owner_name)?
            .map(|u| u.id)
            .unwrap_or(user_ids[0]);
        let existing = experiments::list(c, None)?
            .into_iter()
            .find(|e| e.name == r.slice);
        let id = match existing {
            Some(mut e) => {
                e.domain = domain.clone();
                e.collector = collector.or(e.collector);
                e.description = description.clone();
                experiments::update(c, e.id, e.version, &e)?;
                e.id
            }
            None => {
                report.created = true;
                experiments::create(c, &r.slice, &domain, owner, collector, &description)?
            }
        };
        for u in user_ids.iter().filter(|u| **u != owner) {
            experiments::add_member(c, id, *u)?;
        }
        report.experiment = id;
        crate::db::audit::write(
            c,
            actor,
            "reservation.import",
            &format!("experiment/{id}"),
            &format!(
                "slice {}: {} users, {} devices created, {} updated",
                r.slice,
                r.users.len(),
                report.devices_created.len(),
                report.devices_updated.len()
            ),
        )?;
        Ok(())
    })
    .map_err(|e| ReservationError::Db(e.message))?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLICE: &str = r#"
slice = "wifi-handover"
owner = "alice"
collector = "coll"
users = [{ name = "alice" }, { name = "bob" }]

[[nodes]]
name = "east"
site = "lab-east"
devices = [{ name = "tap-east", kind = "capture", hostname = "10.0.0.1", port = 7300, credential_ref = "tap-east" }]

[[nodes]]
name = "core"
devices = [{ name = "coll", kind = "collector", hostname = "10.0.0.9", port = 3004 }]

[[links]]
name = "l1"
endpoints = ["east", "core"]
"#;

    #[test]
    fn imports_once_and_idempotently() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("slice.toml");
        std::fs::write(&f, SLICE).unwrap();
        let r = FileReservation::new(&f).reservation().unwrap();
        let db = Db::memory().unwrap();
        let a = import(&db, &r, "test").unwrap();
        assert!(a.created);
        assert_eq!(a.users_created, ["alice", "bob"]);
        assert_eq!(a.devices_created, ["tap-east", "coll"]);
        let e = db
            .with(|c| experiments::get(c, a.experiment))
            .unwrap()
            .unwrap();
        assert_eq!(
            (e.owner.as_str(), e.members.clone()),
            ("alice", vec!["bob".to_string()])
        );
        assert_eq!(e.domain, "wifi_handover");
        assert!(e.collector.is_some() && e.description.contains("l1 (east - core)"));
        let b = import(&db, &r, "test").unwrap();
        assert!(!b.created && b.devices_created.is_empty() && b.devices_updated.is_empty());
        assert_eq!(b.experiment, a.experiment);
        let mut bad = r.clone();
        bad.links[0].endpoints.push("mars".into());
        assert!(import(&db, &bad, "t")
            .unwrap_err()
            .to_string()
            .contains("mars"));
    }
}
