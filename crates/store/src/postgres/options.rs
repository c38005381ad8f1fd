//! Where the PostgreSQL server is and how to log in, and the work done on
//! the maintenance database: the start-up privilege check and the creation
//! of one database per experiment domain.

use std::str::FromStr;
use std::time::Duration;

use ::postgres::error::SqlState;
use ::postgres::{Client, Config, NoTls};
use omsp::names::is_valid_domain;

use super::columns::Uint64Layout;
use super::lock;
use super::partition::{self, Partitioning};
use crate::error::StoreError;
use crate::sql::quote;

/// Database the server connects to for administration (it always exists).
const MAINTENANCE_DB: &str = "postgres";

/// How to reach PostgreSQL (the reference's `--pg-*` options).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgOptions {
    /// Host name, address, or Unix socket directory (starting with `/`).
    pub host: String,
    /// TCP port (also names the Unix socket).
    pub port: u16,
    /// Role to log in as.
    pub user: String,
    /// Its password (empty: none).
    pub password: String,
    /// Extra libpq-style `key=value` connection parameters; they win over
    /// the fields above, as the reference appends them last.
    pub conninfo: String,
    /// How long to wait for a connection.
    pub connect_timeout: Duration,
    /// How uint64 and guid fields of new tables are laid out.
    pub uint64: Uint64Layout,
    /// Partition new stream tables with pg_partman (`None`: plain tables,
    /// as the reference).
    pub partition: Option<Partitioning>,
}

impl Default for PgOptions {
    /// The reference's defaults: `oml@localhost:5432`, no password.
    fn default() -> PgOptions {
        PgOptions {
            host: "localhost".into(),
            port: 5432,
            user: "oml".into(),
            password: String::new(),
            conninfo: String::new(),
            connect_timeout: Duration::from_secs(10),
            uint64: Uint64Layout::Numeric,
            partition: None,
        }
    }
}

impl PgOptions {
    /// The event hook's URI of a domain's database:
    /// `postgresql://<user>@<host>:<port>/<domain>`.
    pub fn uri(&self, domain: &str) -> String {
        format!(
            "postgresql://{}@{}:{}/{domain}",
            self.user, self.host, self.port
        )
    }

    /// Connection settings for database `dbname`.
    pub fn config(&self, dbname: &str) -> Result<Config, StoreError> {
        let mut cfg = if self.conninfo.trim().is_empty() {
            Config::new()
        } else {
            Config::from_str(&self.conninfo)?
        };
        if cfg.get_hosts().is_empty() {
            cfg.host(&self.host);
        }
        if cfg.get_ports().is_empty() {
            cfg.port(self.port);
        }
        if cfg.get_user().is_none() {
            cfg.user(&self.user);
        }
        if cfg.get_password().is_none() && !self.password.is_empty() {
            cfg.password(&self.password);
        }
        if cfg.get_connect_timeout().is_none() {
            cfg.connect_timeout(self.connect_timeout);
        }
        cfg.application_name("streamgauge-server");
        cfg.dbname(dbname);
        Ok(cfg)
    }

    /// Connects to database `dbname`. Blocking; must not run on an async
    /// runtime's thread (the client drives its own small runtime).
    pub fn connect(&self, dbname: &str) -> Result<Client, StoreError> {
        Ok(self.config(dbname)?.connect(NoTls)?)
    }

    /// Start-up check: the server can log in, and its role may create the
    /// per-domain databases (CREATEDB, or superuser); with partitioning,
    /// that new domain databases will have pg_partman.
    pub fn check_can_create_databases(&self) -> Result<(), StoreError> {
        let mut client = self.connect(MAINTENANCE_DB)?;
        let row = client.query_one(
            "SELECT current_user::text, rolcreatedb OR rolsuper FROM pg_roles \
             WHERE rolname = current_user",
            &[],
        )?;
        let (role, allowed): (String, bool) = (row.get(0), row.get(1));
        if !allowed {
            return Err(StoreError::CannotCreateDatabases { role });
        }
        if self.partition.is_some() {
            partition::check_available(&mut client, || self.connect("template1"))?;
        }
        Ok(())
    }

    /// Creates database `domain` (`CREATE DATABASE "<domain>"`) unless it
    /// exists; returns whether it created it. The domain is validated, then
    /// quoted: it is the only text from a client that reaches SQL unbound.
    pub fn ensure_database(&self, domain: &str) -> Result<bool, StoreError> {
        if !is_valid_domain(domain) {
            return Err(StoreError::InvalidDomain(domain.to_owned()));
        }
        let mut client = self.connect(MAINTENANCE_DB)?;
        let exists = |c: &mut Client| -> Result<bool, StoreError> {
            Ok(
                c.query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&domain])?
                    .is_some(),
            )
        };
        if exists(&mut client)? {
            return Ok(false);
        }
        // Servers sharing this PostgreSQL create a domain's database one at
        // a time (CREATE DATABASE cannot run in a transaction, so the lock
        // is a session lock, released below or when the connection ends).
        lock::database(&mut client, domain)?;
        let res = if exists(&mut client)? {
            Ok(false)
        } else {
            match client.batch_execute(&format!("CREATE DATABASE {}", quote(domain))) {
                Ok(()) => Ok(true),
                // Created meanwhile by a writer that does not take the lock
                // (the reference, an operator): 42P04, or 23505 on
                // pg_database's unique index when both ran at once.
                Err(e)
                    if e.code() == Some(&SqlState::DUPLICATE_DATABASE)
                        || e.code() == Some(&SqlState::UNIQUE_VIOLATION) =>
                {
                    Ok(false)
                }
                Err(e) => Err(e.into()),
            }
        };
        lock::release_database(&mut client, domain)?;
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_conninfo_wins() {
        let opts = PgOptions {
            conninfo: "user=alice port=6543 sslmode=disable".into(),
            password: "secret".into(),
            ..PgOptions::default()
        };
        let cfg = opts.config("exp").unwrap();
        assert_eq!(cfg.get_user(), Some("alice"));
        assert_eq!(cfg.get_ports(), [6543]);
        assert_eq!(cfg.get_dbname(), Some("exp"));
        assert_eq!(cfg.get_password(), Some(&b"secret"[..]));
        assert_eq!(
            PgOptions::default().uri("exp"),
            "postgresql://oml@localhost:5432/exp"
        );
    }

    #[test]
    fn bad_conninfo_is_an_error() {
        let opts = PgOptions {
            conninfo: "nonsense=1".into(),
            ..PgOptions::default()
        };
        assert!(opts.config("x").is_err());
    }
}
