//! A running source or sink: the attached program, a thread that keeps
//! its clock offset current and (sink) a thread draining its records.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use libbpf_rs::MapHandle;

use crate::error::ProgramError;
use crate::maps::{Counters, RunStats};
use crate::program::{Attached, LoadOptions, Role};
use crate::record::Measurement;
use crate::settings::Settings;

/// How often the wall-clock offset is rewritten (follows NTP slewing).
const CLOCK_REFRESH: Duration = Duration::from_secs(1);

/// A program attached by this process; stops its threads and detaches on
/// drop.
#[derive(Debug)]
pub struct Agent {
    /// `None` only after [`Agent::stop`] took it out to detach.
    attached: Option<Attached>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    reader: Option<JoinHandle<Result<u64, ProgramError>>>,
}

impl Agent {
    /// Load and attach `role` on `ifname` (calling thread's namespace) with `settings`.
    pub fn start(
        ifname: &str,
        role: Role,
        settings: &Settings,
        load: LoadOptions,
    ) -> Result<Agent, ProgramError> {
        let attached = Attached::attach(ifname, role, load, &settings.to_config())?;
        let stop = Arc::new(AtomicBool::new(false));
        let clock = {
            let (maps, stop) = (attached.maps().try_clone()?, stop.clone());
            std::thread::Builder::new()
                .name("sg-inline-clock".into())
                .spawn(move || {
                    let mut waited = Duration::ZERO;
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(50));
                        waited += Duration::from_millis(50);
                        if waited >= CLOCK_REFRESH {
                            waited = Duration::ZERO;
                            if let Err(e) = maps.refresh_clock() {
                                tracing::warn!(error = %e, "clock refresh failed");
                            }
                        }
                    }
                })
                .map_err(|source| ProgramError::Io {
                    what: "spawn clock thread",
                    source,
                })?
        };
        Ok(Agent {
            attached: Some(attached),
            stop,
            threads: vec![clock],
            reader: None,
        })
    }

    /// Start draining records (sink only) into `on_record`, on its own thread.
    pub fn read_records(
        &mut self,
        on_record: impl FnMut(Measurement) + Send + 'static,
    ) -> Result<(), ProgramError> {
        let attached = self.attached();
        let map = attached
            .maps()
            .records
            .as_ref()
            .ok_or(ProgramError::NotAttached {
                program: "sg_sink",
                ifname: attached.ifname().to_owned(),
            })?;
        let map = MapHandle::try_from(map).map_err(|source| ProgramError::Map {
            map: "sg_records",
            source,
        })?;
        let stop = self.stop.clone();
        let handle = std::thread::Builder::new()
            .name("sg-inline-records".into())
            .spawn(move || crate::reader::run(&map, &stop, on_record))
            .map_err(|source| ProgramError::Io {
                what: "spawn record thread",
                source,
            })?;
        self.reader = Some(handle);
        Ok(())
    }

    /// The attached program.
    pub fn program(&self) -> &Attached {
        self.attached()
    }

    fn attached(&self) -> &Attached {
        self.attached.as_ref().expect("attached until stop")
    }

    /// Current counters.
    pub fn counters(&self) -> Result<Counters, ProgramError> {
        self.attached().maps().counters()
    }

    /// Replace the settings while running.
    pub fn reconfigure(&self, settings: &Settings) -> Result<(), ProgramError> {
        self.attached().maps().set_config(&settings.to_config())
    }

    /// Run-time statistics (needs `kernel.bpf_stats_enabled=1`).
    pub fn run_stats(&self) -> Option<RunStats> {
        self.attached().run_stats()
    }

    /// Stop the threads (draining the ring buffer once more), then detach.
    /// Returns the number of records read.
    pub fn stop(mut self) -> Result<u64, ProgramError> {
        let n = self.halt()?;
        if let Some(attached) = self.attached.take() {
            attached.detach()?;
        }
        Ok(n)
    }

    fn halt(&mut self) -> Result<u64, ProgramError> {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        match self.reader.take() {
            Some(r) => r.join().unwrap_or(Ok(0)),
            None => Ok(0),
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.halt();
    }
}
