//! The benchmark's calibration programs ([`inline_ebpf::FLOOR`]): attached
//! in place of the real ones, they show what the hook alone and carrying a
//! header alone cost on this machine, in the same run as the measurements.
//! Through tcx (they exist to compare against tcx-attached programs), or at
//! XDP for the sink side ([`CalibrationProgram::attach_at`]).

use std::os::fd::{AsFd, OwnedFd};

use libbpf_rs::ObjectBuilder;

use crate::error::ProgramError;
use crate::maps::RunStats;
use crate::program::{ifindex, Role, SinkHook};
use crate::tcx;
use crate::xdp;

/// Which calibration program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Calibration {
    /// Returns at once.
    Empty,
    /// Inserts (source) or removes (sink) an 8-byte header, nothing else.
    Floor,
}

impl Calibration {
    fn program(self, role: Role, at_xdp: bool) -> &'static str {
        match (self, role, at_xdp) {
            (Calibration::Empty, Role::Sink, true) => "sg_empty_xdp",
            (Calibration::Floor, Role::Sink, true) => "sg_floor_pop_xdp",
            (Calibration::Empty, _, _) => "sg_empty",
            (Calibration::Floor, Role::Source, _) => "sg_floor_push",
            (Calibration::Floor, Role::Sink, _) => "sg_floor_pop",
        }
    }
}

/// A calibration program attached through a tcx or XDP link; detached on drop.
#[derive(Debug)]
pub struct CalibrationProgram {
    prog_id: u32,
    link: OwnedFd,
    _object: libbpf_rs::Object,
}

impl CalibrationProgram {
    /// Attach `kind` at the hook of `role` on `ifname` (calling thread's
    /// namespace).
    pub fn attach(
        ifname: &str,
        role: Role,
        kind: Calibration,
    ) -> Result<CalibrationProgram, ProgramError> {
        Self::attach_at(ifname, role, kind, SinkHook::Tc)
    }

    /// Like [`CalibrationProgram::attach`], with the sink side at `hook`
    /// (XDP in driver mode, no fallback: the comparison needs it there).
    pub fn attach_at(
        ifname: &str,
        role: Role,
        kind: Calibration,
        hook: SinkHook,
    ) -> Result<CalibrationProgram, ProgramError> {
        let at_xdp = role == Role::Sink && hook == SinkHook::Xdp;
        let program = kind.program(role, at_xdp);
        let load_err = |source| ProgramError::Load { program, source };
        let attach_err = |e: std::io::Error| ProgramError::Attach {
            program,
            ifname: ifname.to_owned(),
            source: libbpf_rs::Error::from(e),
        };
        let idx = ifindex(ifname)?;
        let object = ObjectBuilder::default()
            .open_memory(inline_ebpf::FLOOR)
            .map_err(load_err)?
            .load()
            .map_err(load_err)?;
        let prog = object
            .progs()
            .find(|p| p.name() == program)
            .ok_or_else(|| {
                load_err(libbpf_rs::Error::from_raw_os_error(
                    nix::errno::Errno::ENOENT as i32,
                ))
            })?;
        let link = if at_xdp {
            xdp::attach(prog.as_fd(), idx)
        } else {
            tcx::attach(prog.as_fd(), idx, role)
        }
        .map_err(attach_err)?;
        let prog_id = tcx::program_id(prog.as_fd()).map_err(attach_err)?;
        Ok(CalibrationProgram {
            prog_id,
            link,
            _object: object,
        })
    }

    /// Run-time statistics (needs `kernel.bpf_stats_enabled=1`).
    pub fn run_stats(&self) -> Option<RunStats> {
        RunStats::of(self.prog_id)
    }
}

impl Drop for CalibrationProgram {
    fn drop(&mut self) {
        let _ = tcx::detach(self.link.as_fd());
    }
}
