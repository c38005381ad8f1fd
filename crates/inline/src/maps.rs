//! The maps of a loaded program: configuration, clock offset, counters and
//! (sink) the record ring buffer. Reachable from the agent that loaded them
//! or, for `streamgauge inline ctl`, from the program attached to an
//! interface (tc query → program id → map ids), without pinning.

use std::time::{SystemTime, UNIX_EPOCH};

use inline_common::{Config, Counter, COUNTERS, ZERO_KEY};
use libbpf_rs::query::{ProgInfoIter, ProgInfoQueryOptions};
use libbpf_rs::{MapCore, MapFlags, MapHandle};

use crate::error::ProgramError;
use crate::program::{self, Role};

/// Summed per-CPU counters of one program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters(pub [u64; COUNTERS]);

impl Counters {
    /// Value of one counter.
    pub fn get(&self, c: Counter) -> u64 {
        self.0[c as usize]
    }

    /// `(name, value)` of the counters that belong to `role`.
    pub fn named(&self, role: Role) -> Vec<(&'static str, u64)> {
        Counter::ALL
            .iter()
            .filter(|c| c.is_source() == (role == Role::Source))
            .map(|c| (c.name(), self.get(*c)))
            .collect()
    }
}

/// Run-time statistics the kernel keeps per program when
/// `kernel.bpf_stats_enabled=1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunStats {
    /// Total nanoseconds spent in the program.
    pub run_time_ns: u64,
    /// Number of runs.
    pub run_cnt: u64,
}

impl RunStats {
    /// Statistics of program `id`, if it exists.
    pub fn of(id: u32) -> Option<RunStats> {
        ProgInfoIter::default()
            .find(|p| p.id == id)
            .map(|p| RunStats {
                run_time_ns: p.run_time_ns,
                run_cnt: p.run_cnt,
            })
    }

    /// Mean nanoseconds per run between `earlier` and `self`.
    pub fn ns_per_run_since(&self, earlier: &RunStats) -> Option<f64> {
        let runs = self
            .run_cnt
            .checked_sub(earlier.run_cnt)
            .filter(|r| *r > 0)?;
        Some(self.run_time_ns.saturating_sub(earlier.run_time_ns) as f64 / runs as f64)
    }
}

/// Handles on one program's maps.
#[derive(Debug)]
pub struct ProgramMaps {
    config: MapHandle,
    /// The wall-clock offset for source timestamps; `None` for a sink found
    /// through its interface (the sink's program does not use the map: its
    /// arrival times are converted by the agent).
    clock: Option<MapHandle>,
    counters: MapHandle,
    /// The sink's ring buffer.
    pub(crate) records: Option<MapHandle>,
}

fn map_err(map: &'static str) -> impl Fn(libbpf_rs::Error) -> ProgramError {
    move |source| ProgramError::Map { map, source }
}

fn missing(map: &'static str) -> ProgramError {
    ProgramError::Map {
        map,
        source: libbpf_rs::Error::from_raw_os_error(nix::errno::Errno::ENOENT as i32),
    }
}

impl ProgramMaps {
    fn from_handles(mut handles: Vec<MapHandle>) -> Result<ProgramMaps, ProgramError> {
        let mut take = |name: &str| {
            let i = handles.iter().position(|m| m.name() == name)?;
            Some(handles.swap_remove(i))
        };
        Ok(ProgramMaps {
            config: take("sg_config").ok_or_else(|| missing("sg_config"))?,
            clock: take("sg_clock"),
            counters: take("sg_counters").ok_or_else(|| missing("sg_counters"))?,
            records: take("sg_records"),
        })
    }

    pub(crate) fn from_object(object: &libbpf_rs::Object) -> Result<ProgramMaps, ProgramError> {
        let handles = object
            .maps()
            .filter(|m| m.name().to_str().is_some_and(|n| n.starts_with("sg_")))
            .map(|m| MapHandle::try_from(&m).map_err(map_err("sg_*")))
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_handles(handles)
    }

    /// The maps of the `role` program attached to `ifname` in the calling
    /// thread's network namespace (by whichever agent attached it).
    pub fn find(ifname: &str, role: Role) -> Result<ProgramMaps, ProgramError> {
        let not_attached = || ProgramError::NotAttached {
            program: role.program(),
            ifname: ifname.to_owned(),
        };
        let id = program::query(ifname, role)?.ok_or_else(not_attached)?;
        let info =
            ProgInfoIter::with_query_opts(ProgInfoQueryOptions::default().include_map_ids(true))
                .find(|p| p.id == id)
                .ok_or_else(not_attached)?;
        let handles = info
            .map_ids
            .iter()
            .filter_map(|id| MapHandle::from_map_id(*id).ok())
            .filter(|m| m.name().to_str().is_some_and(|n| n.starts_with("sg_")))
            .collect();
        Self::from_handles(handles)
    }

    /// Independent handles on the same maps (for another thread).
    pub fn try_clone(&self) -> Result<ProgramMaps, ProgramError> {
        let dup = |m: &MapHandle| MapHandle::try_from(m).map_err(map_err("sg_*"));
        Ok(ProgramMaps {
            config: dup(&self.config)?,
            clock: self.clock.as_ref().map(dup).transpose()?,
            counters: dup(&self.counters)?,
            records: self.records.as_ref().map(dup).transpose()?,
        })
    }

    /// Current configuration.
    pub fn config(&self) -> Result<Config, ProgramError> {
        let mut cfg = Config::default();
        self.config
            .lookup_into(&ZERO_KEY, bytemuck::bytes_of_mut(&mut cfg), MapFlags::ANY)
            .map_err(map_err("sg_config"))?;
        Ok(cfg)
    }

    /// Replace the configuration; the programs use it from their next
    /// packet (the source through its general path: `cfg.loaded` is
    /// written as 0 whatever it holds).
    pub fn set_config(&self, cfg: &Config) -> Result<(), ProgramError> {
        self.write_config(&Config { loaded: 0, ..*cfg })
    }

    /// Write the configuration the source program was specialised for at
    /// load (its read-only `sg_loaded` holds the same values), marked so
    /// that the program takes its specialised path. The loader's call: with
    /// any other values the source would keep running the loaded ones (the
    /// tests use that to tell which path runs).
    #[doc(hidden)]
    pub fn set_loaded_config(&self, cfg: &Config) -> Result<(), ProgramError> {
        self.write_config(&Config { loaded: 1, ..*cfg })
    }

    fn write_config(&self, cfg: &Config) -> Result<(), ProgramError> {
        self.config
            .update(&ZERO_KEY, bytemuck::bytes_of(cfg), MapFlags::ANY)
            .map_err(map_err("sg_config"))
    }

    /// Counters summed over CPUs.
    pub fn counters(&self) -> Result<Counters, ProgramError> {
        let mut out = Counters::default();
        for (i, slot) in out.0.iter_mut().enumerate() {
            let key = (i as u32).to_ne_bytes();
            let per_cpu = self
                .counters
                .lookup_percpu(&key, MapFlags::ANY)
                .map_err(map_err("sg_counters"))?;
            *slot = per_cpu
                .unwrap_or_default()
                .iter()
                .filter_map(|v| v.get(..8).and_then(|b| b.try_into().ok()))
                .map(u64::from_ne_bytes)
                .sum();
        }
        Ok(out)
    }

    /// Write the current wall-clock minus monotonic offset, which the
    /// programs add to `bpf_ktime_get_ns()` for their timestamps.
    pub fn refresh_clock(&self) -> Result<(), ProgramError> {
        let Some(clock) = &self.clock else {
            return Ok(());
        };
        let offset = clock_offset_ns();
        clock
            .update(&ZERO_KEY, &offset.to_ne_bytes(), MapFlags::ANY)
            .map_err(map_err("sg_clock"))
    }
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC in nanoseconds, sampled so that the two
/// readings bracket each other as closely as possible. The source's map and
/// the sink's record reader each take it on their own: 32 tries (a few µs
/// with the vDSO) make it unlikely that a preemption spoils every one on a
/// loaded machine and skews delays by as much.
pub fn clock_offset_ns() -> u64 {
    use nix::time::{clock_gettime, ClockId};
    let mono_ns = || {
        clock_gettime(ClockId::CLOCK_MONOTONIC)
            .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
            .unwrap_or(0)
    };
    let mut best = (u64::MAX, 0u64);
    for _ in 0..32 {
        let a = mono_ns();
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let b = mono_ns();
        if b - a < best.0 {
            best = (b - a, wall.wrapping_sub(a + (b - a) / 2));
        }
    }
    best.1
}
