//! `--user` / `--group`: give up root once the listening sockets are bound,
//! as oml2-server does, so that a bug reachable from the network cannot
//! write outside what that user may write.

use nix::unistd::{setgid, setgroups, setuid, Group, User};

use super::RunError;

/// Wraps a failed system call with what was being done.
fn os(context: impl Into<String>) -> impl FnOnce(nix::errno::Errno) -> RunError {
    let context = context.into();
    move |source| RunError::Os { context, source }
}

/// Who the server runs as after binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// User name (`--user`).
    pub user: String,
    /// Group name (`--group`); the user's primary group when absent.
    pub group: Option<String>,
}

impl Identity {
    /// Checks `--user`/`--group` before anything starts: both names must
    /// exist, and `--group` needs `--user` (as in the reference).
    pub fn resolve(user: Option<&str>, group: Option<&str>) -> Result<Option<Identity>, RunError> {
        match (user, group) {
            (None, None) => Ok(None),
            (None, Some(_)) => bail!("--group needs --user: name the user to run as too"),
            (Some(user), group) => {
                let id = Identity {
                    user: user.to_owned(),
                    group: group.map(str::to_owned),
                };
                id.lookup()?;
                Ok(Some(id))
            }
        }
    }

    fn lookup(&self) -> Result<(User, nix::unistd::Gid), RunError> {
        let Some(user) =
            User::from_name(&self.user).map_err(os(format!("looking up user {:?}", self.user)))?
        else {
            bail!("--user {:?}: no such user", self.user);
        };
        let gid = match &self.group {
            None => user.gid,
            Some(g) => match Group::from_name(g).map_err(os(format!("looking up group {g:?}")))? {
                Some(group) => group.gid,
                None => bail!("--group {g:?}: no such group"),
            },
        };
        Ok((user, gid))
    }

    /// Switches the whole process (every thread) to this user and group:
    /// supplementary groups first, then the group, then the user, so root
    /// cannot be regained. Then checks that the user can create databases in
    /// `data_dir` (SQLite), so a wrong owner is an error at start, not a
    /// refused client later.
    pub fn assume(&self, data_dir: Option<&std::path::Path>) -> Result<(), RunError> {
        let (user, gid) = self.lookup()?;
        setgroups(&[gid]).map_err(os("dropping supplementary groups (are we root?)"))?;
        setgid(gid).map_err(os(format!("switching to group id {gid}")))?;
        setuid(user.uid).map_err(os(format!("switching to user {:?}", self.user)))?;
        if nix::unistd::geteuid() != user.uid || nix::unistd::getegid() != gid {
            bail!("the process still runs as another user after dropping privileges");
        }
        if let Some(dir) = data_dir {
            use nix::unistd::{access, AccessFlags};
            access(dir, AccessFlags::W_OK | AccessFlags::X_OK).map_err(os(format!(
                "user {:?} cannot create files in the data directory {} \
                 (chown it to that user, or choose another --data-dir)",
                self.user,
                dir.display()
            )))?;
        }
        tracing::info!(user = %self.user, uid = %user.uid, gid = %gid, "dropped privileges");
        Ok(())
    }
}
