//! Writing the audit log. Every successful state-changing request calls
//! [`record`] with names and ids only — never passwords, token secrets
//! or device credentials. A failure to write is logged, not answered: the
//! action already happened.

use crate::db::{audit, Db};

/// Appends an entry.
pub fn record(db: &Db, user: &str, action: &str, object: &str, summary: &str) {
    if let Err(e) = db.with(|c| audit::write(c, user, action, object, summary)) {
        tracing::error!(action, object, error = %e.message, "audit entry not written");
    }
}
