//! The benchmark's calibration programs ([`inline_ebpf::FLOOR`]): attached
//! in place of the real ones, they show what the hook alone and carrying a
//! header alone cost on this machine, in the same run as the measurements.
//! Through tcx only (they exist to compare against tcx-attached programs).

use std::os::fd::{AsFd, OwnedFd};

use libbpf_rs::ObjectBuilder;

use crate::error::ProgramError;
use crate::maps::RunStats;
use crate::program::{ifindex, Role};
use crate::tcx;

/// Which calibration program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Calibration {
    /// Returns at once.
    Empty,
    /// Inserts (source) or removes (sink) an 8-byte header, nothing else.
    Floor,
}

impl Calibration {
    fn program(self, role: Role) -> &'static str {
        match (self, role) {
            (Calibration::Empty, _) => "sg_empty",
            (Calibration::Floor, Role::Source) => "sg_floor_push",
            (Calibration::Floor, Role::Sink) => "sg_floor_pop",
        }
    }
}

/// A calibration program attached through tcx; detached on drop.
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
        let program = kind.program(role);
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
        let link = tcx::attach(prog.as_fd(), idx, role).map_err(attach_err)?;
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
