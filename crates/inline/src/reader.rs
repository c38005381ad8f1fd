//! Draining the sink's ring buffer.
//!
//! The sink packs up to [`inline_common::RECORD_BATCH`] records per CPU
//! into one sample and pushes a partial batch at the latest 20 ms after its
//! first record (a timer in the program). It submits without waking the
//! reader, except once per 64 batches of a CPU and for those timed pushes:
//! the reader therefore also polls with a short timeout. Arrival times come
//! as monotonic readings and are converted here to wall-clock time with an
//! offset refreshed every second, as the programs' own offset is.
//! Records from different CPUs may arrive slightly out of order.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use inline_common::Record;
use libbpf_rs::{MapHandle, RingBufferBuilder};

use crate::error::ProgramError;
use crate::maps::clock_offset_ns;
use crate::record::Measurement;

/// How long one poll waits for a wake-up before draining anyway.
pub const POLL: Duration = Duration::from_millis(20);

/// How long after the stop request the reader waits before its last drain:
/// over twice the program's 20 ms limit on a partial batch.
const LAST_FLUSH: Duration = Duration::from_millis(50);

/// How often the wall-clock offset for arrival times is re-read.
const OFFSET_REFRESH: Duration = Duration::from_secs(1);

/// Drain `map` into `on_record` until `stop` is set, then drain once more.
/// Returns the number of records read.
pub fn run(
    map: &MapHandle,
    stop: &AtomicBool,
    mut on_record: impl FnMut(Measurement),
) -> Result<u64, ProgramError> {
    let mut count = 0u64;
    let offset = Cell::new(clock_offset_ns());
    {
        let mut builder = RingBufferBuilder::new();
        builder
            .add(map, |bytes: &[u8]| {
                for one in bytes.chunks_exact(std::mem::size_of::<Record>()) {
                    if let Some(m) = Measurement::decode_at(one, offset.get()) {
                        count += 1;
                        on_record(m);
                    }
                }
                0
            })
            .map_err(|source| ProgramError::Map {
                map: "sg_records",
                source,
            })?;
        let rb = builder.build().map_err(|source| ProgramError::Map {
            map: "sg_records",
            source,
        })?;
        let mut refreshed = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            // EINTR and friends are not fatal: poll again. A poll that
            // times out consumes nothing (libbpf only drains rings that
            // signalled), so drain explicitly every round.
            let _ = rb.poll(POLL);
            let _ = rb.consume();
            if refreshed.elapsed() >= OFFSET_REFRESH {
                offset.set(clock_offset_ns());
                refreshed = Instant::now();
            }
        }
        std::thread::sleep(LAST_FLUSH);
        let _ = rb.consume();
    }
    Ok(count)
}
