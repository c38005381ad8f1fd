//! Loading the embedded BPF objects and attaching them to tc hooks.
//!
//! Programs attach through tcx links where the kernel has them (Linux ≥ 6.6;
//! see [`crate::tcx`] for why), the sink at XDP when asked for
//! ([`SinkHook::Xdp`], driver mode; [`crate::xdp`]), and otherwise as a
//! cls_bpf filter on the
//! clsact qdisc, recognised by a fixed tc handle ([`TC_HANDLE`]) and
//! priority ([`TC_PRIORITY`]). Either way there is one program per role and
//! interface: attaching first removes whatever of ours sits there (a program
//! left by a SIGKILLed clsact agent, or another agent's), and [`Attached`]
//! detaches on drop, from the namespace it attached in. A clsact qdisc is
//! left in place because other tools may share it.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};

use inline_common::Config;
use libbpf_rs::{ObjectBuilder, TcHook, TcHookBuilder, TC_EGRESS, TC_INGRESS};

use crate::error::ProgramError;
use crate::maps::ProgramMaps;
use crate::netns;
use crate::tcx;
use crate::xdp;

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

/// Where the sink program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SinkHook {
    /// tc ingress (tcx link, else clsact): any interface.
    #[default]
    Tc,
    /// XDP in driver mode, before the kernel builds an skb; falls back to
    /// [`SinkHook::Tc`] where the driver has no native XDP.
    Xdp,
}

impl SinkHook {
    /// Parse `tc` or `xdp`.
    pub fn parse(s: &str) -> Option<SinkHook> {
        match s {
            "tc" => Some(SinkHook::Tc),
            "xdp" => Some(SinkHook::Xdp),
            _ => None,
        }
    }

    /// `tc` or `xdp`.
    pub fn name(self) -> &'static str {
        match self {
            SinkHook::Tc => "tc",
            SinkHook::Xdp => "xdp",
        }
    }
}

/// Name of the sink's XDP program.
pub const SINK_XDP_PROGRAM: &str = "sg_sink_xdp";

/// Sizes and hooks fixed at load time (changing them means restarting the
/// agent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOptions {
    /// Entries of the source's per-flow LRU table.
    pub max_flows: u32,
    /// Bytes of the sink's ring buffer (a power of two, at least one page).
    pub ring_bytes: u32,
    /// Where the sink runs (ignored by the source).
    pub sink_hook: SinkHook,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            max_flows: 1000,
            ring_bytes: 1 << 22,
            sink_hook: SinkHook::default(),
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

/// Our programs of `role` attached through tcx: (program id, link id).
fn ours_on_tcx(idx: i32, role: Role) -> Vec<(u32, u32)> {
    tcx::attached(idx, role)
        .into_iter()
        .filter(|(prog, _)| tcx::program_name(*prog).as_deref() == Some(role.program()))
        .collect()
}

/// Our sink's program attached at XDP, if `role` is the sink and it is there.
fn ours_on_xdp(idx: i32, role: Role) -> Option<u32> {
    if role != Role::Sink {
        return None;
    }
    xdp::attached(idx).filter(|prog| tcx::program_name(*prog).as_deref() == Some(SINK_XDP_PROGRAM))
}

/// Id of the program of `role` attached to `ifname` by any agent, if any.
pub fn query(ifname: &str, role: Role) -> Result<Option<u32>, ProgramError> {
    let idx = ifindex(ifname)?;
    if let Some((prog, _)) = ours_on_tcx(idx, role).first() {
        return Ok(Some(*prog));
    }
    if let Some(prog) = ours_on_xdp(idx, role) {
        return Ok(Some(prog));
    }
    let null = File::open("/dev/null").map_err(|source| ProgramError::Io {
        what: "open /dev/null",
        source,
    })?;
    let mut hook = role.hook(null.as_fd(), idx);
    Ok(hook.query().ok().filter(|id| *id != 0))
}

/// Remove our program of `role` from `ifname` (tcx links and the clsact
/// filter); returns whether one was there.
pub fn detach_stale(ifname: &str, role: Role) -> Result<bool, ProgramError> {
    let idx = ifindex(ifname)?;
    let mut found = false;
    for (prog_id, link_id) in ours_on_tcx(idx, role) {
        tcx::detach_id(link_id).map_err(|e| ProgramError::Attach {
            program: role.program(),
            ifname: ifname.to_owned(),
            source: libbpf_rs::Error::from(e),
        })?;
        tracing::warn!(
            ifname,
            program = role.program(),
            prog_id,
            "removed another agent's attachment"
        );
        found = true;
    }
    if let Some(prog_id) = ours_on_xdp(idx, role) {
        xdp::detach_prog(prog_id).map_err(|e| ProgramError::Attach {
            program: SINK_XDP_PROGRAM,
            ifname: ifname.to_owned(),
            source: libbpf_rs::Error::from(e),
        })?;
        tracing::warn!(ifname, prog_id, "removed another agent's XDP attachment");
        found = true;
    }
    let null = File::open("/dev/null").map_err(|source| ProgramError::Io {
        what: "open /dev/null",
        source,
    })?;
    let Some(id) = role
        .hook(null.as_fd(), idx)
        .query()
        .ok()
        .filter(|id| *id != 0)
    else {
        return Ok(found);
    };
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
    /// The tcx or XDP link; `None` when attached as a clsact filter.
    link: Option<OwnedFd>,
    /// Whether `link` is an XDP link (the sink at XDP).
    at_xdp: bool,
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
        let want_xdp = role == Role::Sink && opts.sink_hook == SinkHook::Xdp;
        let program = if want_xdp {
            SINK_XDP_PROGRAM
        } else {
            role.program()
        };
        let idx = ifindex(ifname)?;
        let (object, maps) = load(role, program, opts, config)?;
        let prog = object
            .progs()
            .find(|p| p.name() == program)
            .ok_or_else(|| ProgramError::Load {
                program,
                source: libbpf_rs::Error::from_raw_os_error(libc_enoent()),
            })?;
        detach_stale(ifname, role)?;
        let attach_err = |source| ProgramError::Attach {
            program,
            ifname: ifname.to_owned(),
            source,
        };
        let xdp_link = if want_xdp {
            match xdp::attach(prog.as_fd(), idx) {
                Ok(link) => Some(link),
                Err(e) => {
                    tracing::warn!(ifname, error = %e, "no native XDP here; the sink attaches at tc");
                    let tc = LoadOptions {
                        sink_hook: SinkHook::Tc,
                        ..opts
                    };
                    return Attached::attach(ifname, role, tc, config);
                }
            }
        } else {
            None
        };
        let at_xdp = xdp_link.is_some();
        let attached = match xdp_link {
            Some(link) => Ok(link),
            None => tcx::attach(prog.as_fd(), idx, role),
        };
        let (link, prog_id) = match attached {
            Ok(link) => {
                let id = tcx::program_id(prog.as_fd())
                    .map_err(|e| attach_err(libbpf_rs::Error::from(e)))?;
                (Some(link), id)
            }
            Err(e) => {
                tracing::debug!(error = %e, "no tcx here; attaching through clsact");
                let mut hook = role.hook(prog.as_fd(), idx);
                hook.create().map_err(attach_err)?;
                hook.attach().map_err(attach_err)?;
                (None, hook.query().map_err(attach_err)?)
            }
        };
        let netns = netns::current()?;
        tracing::info!(ifname, program, prog_id, "attached");
        Ok(Attached {
            role,
            ifname: ifname.to_owned(),
            ifindex: idx,
            netns,
            prog_id,
            link,
            at_xdp,
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

    /// Where the program runs: [`SinkHook::Xdp`] only for a sink attached
    /// at XDP (a source, or a sink that fell back, says [`SinkHook::Tc`]).
    pub fn hook(&self) -> SinkHook {
        if self.at_xdp {
            SinkHook::Xdp
        } else {
            SinkHook::Tc
        }
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
        if let Some(link) = self.link.take() {
            // A newer agent may have detached it already: that is fine.
            let _ = tcx::detach(link.as_fd());
            tracing::info!(ifname = %self.ifname, program, "detached");
            return Ok(());
        }
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
        let (tcx, prog_id, at_xdp) = (self.link.is_some(), self.prog_id, self.at_xdp);
        let found = netns::run_in_file(&self.netns, move || {
            if at_xdp {
                return xdp::attached(idx) == Some(prog_id);
            }
            if tcx {
                return tcx::attached(idx, role)
                    .iter()
                    .any(|(id, _)| *id == prog_id);
            }
            let null = File::open("/dev/null").ok();
            null.and_then(|n| role.hook(n.as_fd(), idx).query().ok()) == Some(prog_id)
        });
        found.unwrap_or(false)
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
/// Load `program` (`role`'s entry point, or the sink's XDP one) from
/// `role`'s object with `opts`' sizes, specialised for `config` (the
/// source), without attaching it. `config` and the clock offset are in
/// the maps when this returns.
pub(crate) fn load(
    role: Role,
    program: &'static str,
    opts: LoadOptions,
    config: &Config,
) -> Result<(libbpf_rs::Object, ProgramMaps), ProgramError> {
    route_libbpf_messages();
    let load_err = |source| ProgramError::Load { program, source };
    let mut open = ObjectBuilder::default()
        .open_memory(role.object())
        .map_err(load_err)?;
    let cpus = libbpf_rs::num_possible_cpus().map_err(load_err)? as u32;
    for mut map in open.maps_mut() {
        let size = match map.name().to_str() {
            Some("sg_flows") => opts.max_flows,
            Some("sg_records") => opts.ring_bytes,
            Some("sg_batches") => cpus,
            Some(name) if role == Role::Source && name.ends_with(".rodata") => {
                specialise(&mut map, config).map_err(load_err)?;
                continue;
            }
            _ => continue,
        };
        map.set_max_entries(size).map_err(load_err)?;
    }
    // Load only the entry point in use (an old kernel may refuse the other).
    for mut prog in open.progs_mut() {
        let name = prog.name().to_str().unwrap_or_default().to_owned();
        if name == role.program() || name == SINK_XDP_PROGRAM {
            prog.set_autoload(name == program);
        }
    }
    let object = open.load().map_err(load_err)?;
    let maps = ProgramMaps::from_object(&object)?;
    maps.refresh_clock()?;
    if role == Role::Source {
        maps.set_loaded_config(config)?;
    } else {
        maps.set_config(config)?;
    }
    Ok((object, maps))
}

/// Write `config` into the source's read-only data (`sg_loaded` in
/// `bpf/sg_source.c`, its only variable) before the load: the verifier
/// then knows the configuration and keeps, in the path that uses it, only
/// the code this configuration needs. The program takes that path while
/// the configuration map holds the same values ([`Config::loaded`]).
fn specialise(map: &mut libbpf_rs::OpenMapMut, config: &Config) -> Result<(), libbpf_rs::Error> {
    let data = map
        .initial_value_mut()
        .ok_or_else(|| libbpf_rs::Error::from_raw_os_error(libc_enoent()))?;
    let bytes = bytemuck::bytes_of(config);
    if data.len() != bytes.len() {
        return Err(libbpf_rs::Error::from_raw_os_error(
            nix::errno::Errno::EINVAL as i32,
        ));
    }
    data.copy_from_slice(bytes);
    Ok(())
}

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
