//! Loading the embedded BPF objects and attaching them to tc hooks.
//!
//! Our filters are recognised by a fixed tc handle ([`TC_HANDLE`]) and
//! priority ([`TC_PRIORITY`]) on the clsact hook: attaching first removes
//! whatever sits there (a stale program left by a SIGKILLed agent), and
//! [`Attached`] detaches on drop, from the namespace it attached in. The
//! clsact qdisc itself is left in place because other tools may share it.

use std::fs::File;
use std::os::fd::AsFd;

use inline_common::Config;
use libbpf_rs::{ObjectBuilder, TcHook, TcHookBuilder, TC_EGRESS, TC_INGRESS};

use crate::error::ProgramError;
use crate::maps::ProgramMaps;
use crate::netns;

/// tc filter handle that marks a filter as ours ("SG").
pub const TC_HANDLE: u32 = 0x5347;
/// tc filter priority of our filters.
pub const TC_PRIORITY: u32 = 1;

/// Which program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `sg_source` on tc egress: inserts headers.
    Source,
    /// `sg_sink` on tc ingress: records and removes headers.
    Sink,
}

impl Role {
    /// The BPF program's name.
    pub fn program(self) -> &'static str {
        match self {
            Role::Source => "sg_source",
            Role::Sink => "sg_sink",
        }
    }

    fn object(self) -> &'static [u8] {
        match self {
            Role::Source => inline_ebpf::SOURCE,
            Role::Sink => inline_ebpf::SINK,
        }
    }

    fn hook(self, fd: std::os::fd::BorrowedFd<'_>, ifindex: i32) -> TcHook {
        let point = match self {
            Role::Source => TC_EGRESS,
            Role::Sink => TC_INGRESS,
        };
        TcHookBuilder::new(fd)
            .ifindex(ifindex)
            .replace(true)
            .handle(TC_HANDLE)
            .priority(TC_PRIORITY)
            .hook(point)
    }
}

/// Sizes fixed at load time (changing them means restarting the agent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOptions {
    /// Entries of the source's per-flow LRU table.
    pub max_flows: u32,
    /// Bytes of the sink's ring buffer (a power of two, at least one page).
    pub ring_bytes: u32,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            max_flows: 1000,
            ring_bytes: 1 << 22,
        }
    }
}

/// Index of `ifname` in the calling thread's namespace.
pub fn ifindex(ifname: &str) -> Result<i32, ProgramError> {
    nix::net::if_::if_nametoindex(ifname)
        .ok()
        .and_then(|i| i32::try_from(i).ok())
        .ok_or_else(|| ProgramError::NoInterface {
            ifname: ifname.to_owned(),
        })
}

/// Id of the program of `role` attached to `ifname` by any agent, if any.
pub fn query(ifname: &str, role: Role) -> Result<Option<u32>, ProgramError> {
    let idx = ifindex(ifname)?;
    let null = File::open("/dev/null").map_err(|source| ProgramError::Io {
        what: "open /dev/null",
        source,
    })?;
    let mut hook = role.hook(null.as_fd(), idx);
    Ok(hook.query().ok().filter(|id| *id != 0))
}

/// Remove the filter of `role` from `ifname`; returns whether one was there.
pub fn detach_stale(ifname: &str, role: Role) -> Result<bool, ProgramError> {
    let Some(id) = query(ifname, role)? else {
        return Ok(false);
    };
    let idx = ifindex(ifname)?;
    let null = File::open("/dev/null").map_err(|source| ProgramError::Io {
        what: "open /dev/null",
        source,
    })?;
    role.hook(null.as_fd(), idx)
        .detach()
        .map_err(|source| ProgramError::Attach {
            program: role.program(),
            ifname: ifname.to_owned(),
            source,
        })?;
    tracing::warn!(
        ifname,
        program = role.program(),
        prog_id = id,
        "removed a stale attachment"
    );
    Ok(true)
}

/// A loaded program attached to an interface; detaches on drop.
#[derive(Debug)]
pub struct Attached {
    role: Role,
    ifname: String,
    ifindex: i32,
    netns: File,
    prog_id: u32,
    maps: ProgramMaps,
    detached: bool,
    /// Keeps the object (and the program fd the hook refers to) alive.
    _object: libbpf_rs::Object,
}

impl Attached {
    /// Load `role`'s object, remove any stale filter of ours from `ifname`
    /// and attach, in the calling thread's network namespace. `config` and
    /// the clock offset are written before the program sees a packet.
    pub fn attach(
        ifname: &str,
        role: Role,
        opts: LoadOptions,
        config: &Config,
    ) -> Result<Attached, ProgramError> {
        route_libbpf_messages();
        let program = role.program();
        let load_err = |source| ProgramError::Load { program, source };
        let idx = ifindex(ifname)?;
        let mut open = ObjectBuilder::default()
            .open_memory(role.object())
            .map_err(load_err)?;
        for mut map in open.maps_mut() {
            let size = match map.name().to_str() {
                Some("sg_flows") => opts.max_flows,
                Some("sg_records") => opts.ring_bytes,
                _ => continue,
            };
            map.set_max_entries(size).map_err(load_err)?;
        }
        let object = open.load().map_err(load_err)?;
        let maps = ProgramMaps::from_object(&object)?;
        maps.refresh_clock()?;
        maps.set_config(config)?;
        let prog = object
            .progs()
            .find(|p| p.name() == program)
            .ok_or_else(|| load_err(libbpf_rs::Error::from_raw_os_error(libc_enoent())))?;
        detach_stale(ifname, role)?;
        let mut hook = role.hook(prog.as_fd(), idx);
        let attach_err = |source| ProgramError::Attach {
            program,
            ifname: ifname.to_owned(),
            source,
        };
        hook.create().map_err(attach_err)?;
        hook.attach().map_err(attach_err)?;
        let prog_id = hook.query().map_err(attach_err)?;
        let netns = netns::current()?;
        tracing::info!(ifname, program, prog_id, "attached");
        Ok(Attached {
            role,
            ifname: ifname.to_owned(),
            ifindex: idx,
            netns,
            prog_id,
            maps,
            detached: false,
            _object: object,
        })
    }

    /// The program's maps.
    pub fn maps(&self) -> &ProgramMaps {
        &self.maps
    }

    /// Kernel id of the attached program.
    pub fn prog_id(&self) -> u32 {
        self.prog_id
    }

    /// Which program this is.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Interface the program is attached to.
    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// Detach now (also done on drop); reports errors that drop can only log.
    pub fn detach(mut self) -> Result<(), ProgramError> {
        self.detach_inner()
    }

    fn detach_inner(&mut self) -> Result<(), ProgramError> {
        if self.detached {
            return Ok(());
        }
        self.detached = true;
        let (program, ifname) = (self.role.program(), self.ifname.clone());
        let (role, idx, prog_id) = (self.role, self.ifindex, self.prog_id);
        // Only remove the filter if it is still ours (not replaced by a newer agent).
        netns::run_in_file(&self.netns, move || {
            let null = File::open("/dev/null").map_err(libbpf_rs::Error::from)?;
            let mut hook = role.hook(null.as_fd(), idx);
            match hook.query() {
                Ok(id) if id == prog_id => hook.detach(),
                _ => Ok(()),
            }
        })?
        .map_err(|source| ProgramError::Attach {
            program,
            ifname,
            source,
        })?;
        tracing::info!(ifname = %self.ifname, program, "detached");
        Ok(())
    }

    /// Check whether the filter of this program is still attached.
    pub fn is_attached(&self) -> bool {
        let (role, idx) = (self.role, self.ifindex);
        let id = netns::run_in_file(&self.netns, move || {
            let null = File::open("/dev/null").ok()?;
            role.hook(null.as_fd(), idx).query().ok()
        });
        id.ok().flatten() == Some(self.prog_id)
    }

    /// Run-time statistics of the program (needs `kernel.bpf_stats_enabled=1`).
    pub fn run_stats(&self) -> Option<crate::maps::RunStats> {
        crate::maps::RunStats::of(self.prog_id)
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        if let Err(e) = self.detach_inner() {
            tracing::error!(error = %e, "detaching failed");
        }
    }
}

/// libbpf prints to stderr by default, including expected conditions
/// (an existing clsact qdisc, a query on an empty hook): send its messages
/// to `tracing` instead (warnings and the verifier log stay visible there).
fn route_libbpf_messages() {
    fn forward(level: libbpf_rs::PrintLevel, msg: String) {
        let msg = msg.trim_end();
        match level {
            // Netlink's answers to our probing queries are expected.
            libbpf_rs::PrintLevel::Warn if !msg.contains("Kernel error message") => {
                tracing::warn!(target: "libbpf", "{msg}")
            }
            _ => tracing::debug!(target: "libbpf", "{msg}"),
        }
    }
    libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Debug, forward)));
}

fn libc_enoent() -> i32 {
    nix::errno::Errno::ENOENT as i32
}
