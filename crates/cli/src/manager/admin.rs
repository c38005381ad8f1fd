//! Offline administration: the database is opened directly (the manager
//! may be running: SQLite's WAL lets both write, and PostgreSQL is made
//! for it).

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use manager::db::users::Role;
use manager::run;

pub const RESERVATION_ABOUT: &str = include_str!("../../help/manager-admin-reservation.txt");

/// `streamgauge manager user`.
#[derive(Debug, Args)]
pub struct UserArgs {
    #[command(subcommand)]
    pub command: UserCommand,
}

/// User subcommands.
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a user, or set an existing user's password and role.
    Add {
        /// User name.
        username: String,
        /// The manager's data directory.
        #[arg(
            long,
            value_name = "DIR",
            env = "STREAMGAUGE_MANAGER_DATA",
            required_unless_present = "db"
        )]
        data_dir: Option<PathBuf>,
        #[command(flatten)]
        db: super::DbArgs,
        /// Role: user or admin.
        #[arg(long, default_value = "user", value_parser = ["user", "admin"])]
        role: String,
        /// File whose first line is the password (else STREAMGAUGE_PASSWORD).
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
    },
}

/// `streamgauge manager import-reservation`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Reservation description (TOML, or JSON by its .json extension).
    pub file: PathBuf,
    /// The manager's data directory.
    #[arg(
        long,
        value_name = "DIR",
        env = "STREAMGAUGE_MANAGER_DATA",
        required_unless_present = "db"
    )]
    pub data_dir: Option<PathBuf>,
    #[command(flatten)]
    pub db: super::DbArgs,
}

/// Runs a user subcommand.
pub fn user(args: &UserArgs) -> Result<bool> {
    let UserCommand::Add {
        username,
        data_dir,
        db,
        role,
        password_file,
    } = &args.command;
    let password = match password_file {
        Some(f) => run::first_line(f)?,
        None => match std::env::var("STREAMGAUGE_PASSWORD") {
            Ok(p) if !p.is_empty() => p,
            _ => bail!("give --password-file FILE or set STREAMGAUGE_PASSWORD"),
        },
    };
    let role = Role::parse(role);
    let id = run::add_user(&db.open(data_dir.as_deref())?, username, &password, role)?;
    println!("user {username} (id {id}, role {})", role.as_str());
    Ok(true)
}

/// Imports a reservation file.
pub fn import(args: &ImportArgs) -> Result<bool> {
    let db = args.db.open(args.data_dir.as_deref())?;
    let report = run::import_reservation(&db, &args.file)?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(true)
}
