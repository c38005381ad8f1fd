//! The benchmark's calibration programs ([`inline_ebpf::FLOOR`]): attached
//! in place of the real ones, they show what the hook alone, carrying a
//! header alone, and the kernel work any exact per-flow loss measurement
//! needs cost on this machine, in the same run as the measurements.
//! Through tcx (they exist to compare against tcx-attached programs), or at
//! XDP for the sink side ([`CalibrationProgram::attach_at`]).

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use libbpf_rs::{MapCore, MapFlags, MapHandle, ObjectBuilder};

use crate::error::ProgramError;
use crate::maps::RunStats;
use crate::program::{ifindex, LoadOptions, Role, SinkHook};
use crate::settings::Mode;
use crate::tcx;
use crate::xdp;

/// Which calibration program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Calibration {
    /// Returns at once.
    Empty,
    /// Inserts (source) or removes (sink) an 8-byte header, nothing else.
    Floor,
    /// The measurement floor for a layout: [`Calibration::Floor`] plus the
    /// kernel work an exact measurement with that layout cannot avoid,
    /// without any of the real programs' logic. The header has the
    /// layout's length (8 to 32 bytes: a longer one costs the head
    /// reallocation the real one costs). Where the layout carries a
    /// sequence number (loss, PDM), the source looks the flow's 8-byte key
    /// up in an LRU hash map (inserting it if missing) and writes the
    /// flow's atomically incremented sequence number; where it carries a
    /// timestamp (delay, both, compact), the source reads the clock. The
    /// sink reads the clock the real sink reads for that layout, writes a
    /// record into a per-CPU batch and pushes every full batch into a ring
    /// buffer, which a thread drains with the real sink's reader. The
    /// layout is set in the program's read-only data before the load, so
    /// the verifier keeps only that layout's code.
    MeasurementFloor(Mode),
}

impl Calibration {
    pub(crate) fn program(self, role: Role, at_xdp: bool) -> &'static str {
        match (self, role, at_xdp) {
            (Calibration::Empty, Role::Sink, true) => "sg_empty_xdp",
            (Calibration::Floor, Role::Sink, true) => "sg_floor_pop_xdp",
            (Calibration::MeasurementFloor(_), Role::Sink, true) => "sg_mfloor_pop_xdp",
            (Calibration::Empty, _, _) => "sg_empty",
            (Calibration::Floor, Role::Source, _) => "sg_floor_push",
            (Calibration::Floor, Role::Sink, _) => "sg_floor_pop",
            (Calibration::MeasurementFloor(_), Role::Source, _) => "sg_mfloor_push",
            (Calibration::MeasurementFloor(_), Role::Sink, _) => "sg_mfloor_pop",
        }
    }
}

/// The thread draining the measurement floor's ring buffer.
#[derive(Debug)]
struct Drain {
    stop: Arc<AtomicBool>,
    records: Arc<AtomicU64>,
    drops: MapHandle,
    thread: Option<JoinHandle<Result<u64, ProgramError>>>,
}

/// A calibration program attached through a tcx or XDP link; detached on drop.
#[derive(Debug)]
pub struct CalibrationProgram {
    prog_id: u32,
    link: OwnedFd,
    drain: Option<Drain>,
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
        let attach_err = |e: std::io::Error| ProgramError::Attach {
            program,
            ifname: ifname.to_owned(),
            source: libbpf_rs::Error::from(e),
        };
        let idx = ifindex(ifname)?;
        let object = load(kind, program)?;
        let prog = object
            .progs()
            .find(|p| p.name() == program)
            .ok_or_else(|| ProgramError::Load {
                program,
                source: libbpf_rs::Error::from_raw_os_error(nix::errno::Errno::ENOENT as i32),
            })?;
        let link = if at_xdp {
            xdp::attach(prog.as_fd(), idx)
        } else {
            tcx::attach(prog.as_fd(), idx, role)
        }
        .map_err(attach_err)?;
        let prog_id = tcx::program_id(prog.as_fd()).map_err(attach_err)?;
        let drain = if matches!(kind, Calibration::MeasurementFloor(_)) && role == Role::Sink {
            Some(Drain::start(&object)?)
        } else {
            None
        };
        Ok(CalibrationProgram {
            prog_id,
            link,
            drain,
            _object: object,
        })
    }

    /// Records the measurement floor's sink has pushed into its ring
    /// buffer and the reader has read so far (`None` for other programs).
    /// A partial batch stays in the program until the next packets.
    pub fn records_read(&self) -> Option<u64> {
        Some(self.drain.as_ref()?.records.load(Ordering::Relaxed))
    }

    /// Records the measurement floor's sink could not push because its
    /// ring buffer was full (`None` for other programs, or if unreadable).
    /// A phase with drops did less work than a measurement needs.
    pub fn ring_drops(&self) -> Option<u64> {
        let d = self.drain.as_ref()?;
        let v = d.drops.lookup(&0u32.to_ne_bytes(), MapFlags::ANY).ok()??;
        Some(u64::from_ne_bytes(v.get(..8)?.try_into().ok()?))
    }

    /// Run-time statistics (needs `kernel.bpf_stats_enabled=1`).
    pub fn run_stats(&self) -> Option<RunStats> {
        RunStats::of(self.prog_id)
    }
}

impl Drop for CalibrationProgram {
    fn drop(&mut self) {
        let _ = tcx::detach(self.link.as_fd());
        if let Some(mut d) = self.drain.take() {
            d.stop.store(true, Ordering::Relaxed);
            if let Some(t) = d.thread.take() {
                let _ = t.join();
            }
        }
    }
}

impl Drain {
    fn start(object: &libbpf_rs::Object) -> Result<Drain, ProgramError> {
        let handle = |name: &'static str| {
            let map_err = |source| ProgramError::Map { map: name, source };
            let map = object.maps().find(|m| m.name() == name).ok_or_else(|| {
                map_err(libbpf_rs::Error::from_raw_os_error(
                    nix::errno::Errno::ENOENT as i32,
                ))
            })?;
            MapHandle::try_from(&map).map_err(map_err)
        };
        let ring = handle("sg_mfloor_records")?;
        let drops = handle("sg_mfloor_drops")?;
        let stop = Arc::new(AtomicBool::new(false));
        let records = Arc::new(AtomicU64::new(0));
        let thread = {
            let (stop, records) = (stop.clone(), records.clone());
            std::thread::Builder::new()
                .name("sg-floor-records".into())
                .spawn(move || {
                    crate::reader::run(&ring, &stop, |_| {
                        records.fetch_add(1, Ordering::Relaxed);
                    })
                })
                .map_err(|source| ProgramError::Io {
                    what: "spawn record thread",
                    source,
                })?
        };
        Ok(Drain {
            stop,
            records,
            drops,
            thread: Some(thread),
        })
    }
}

/// Load `program` (one of `kind`'s) from the calibration object, without
/// attaching it.
pub(crate) fn load(
    kind: Calibration,
    program: &'static str,
) -> Result<libbpf_rs::Object, ProgramError> {
    let load_err = |source| ProgramError::Load { program, source };
    let mut open = ObjectBuilder::default()
        .open_memory(inline_ebpf::FLOOR)
        .map_err(load_err)?;
    for mut map in open.maps_mut() {
        if map.name() == "sg_mfloor_records" {
            // The real sink's ring size.
            map.set_max_entries(LoadOptions::default().ring_bytes)
                .map_err(load_err)?;
        } else if let (Calibration::MeasurementFloor(mode), true) =
            (kind, map.name().to_string_lossy().ends_with(".rodata"))
        {
            set_layout(&mut map, mode).map_err(load_err)?;
        }
    }
    // Load only the program in use.
    for mut prog in open.progs_mut() {
        let used = prog.name() == program;
        prog.set_autoload(used);
    }
    let object = open.load().map_err(load_err)?;
    Ok(object)
}

/// Write `mode`'s bits into `sg_mfloor_mode`, the only variable of the
/// calibration object's read-only data (`bpf/sg_floor.c`).
fn set_layout(map: &mut libbpf_rs::OpenMapMut, mode: Mode) -> Result<(), libbpf_rs::Error> {
    let data = map
        .initial_value_mut()
        .ok_or_else(|| libbpf_rs::Error::from_raw_os_error(nix::errno::Errno::ENOENT as i32))?;
    match data {
        [b] => {
            *b = mode.bits();
            Ok(())
        }
        _ => Err(libbpf_rs::Error::from_raw_os_error(
            nix::errno::Errno::EINVAL as i32,
        )),
    }
}
