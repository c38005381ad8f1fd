//! Draining the sink's ring buffer.
//!
//! The sink submits records without waking the reader (a wake-up per
//! record costs microseconds per packet) and forces a wake-up once per
//! 1024 records a CPU submits (~64 KiB); the reader therefore also
//! polls with a short timeout.
//! Records from different CPUs may arrive slightly out of order.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use libbpf_rs::{MapHandle, RingBufferBuilder};

use crate::error::ProgramError;
use crate::record::Measurement;

/// How long one poll waits for a wake-up before draining anyway.
pub const POLL: Duration = Duration::from_millis(20);

/// Drain `map` into `on_record` until `stop` is set, then drain once more.
/// Returns the number of records read.
pub fn run(
    map: &MapHandle,
    stop: &AtomicBool,
    mut on_record: impl FnMut(Measurement),
) -> Result<u64, ProgramError> {
    let mut count = 0u64;
    {
        let mut builder = RingBufferBuilder::new();
        builder
            .add(map, |bytes: &[u8]| {
                if let Some(m) = Measurement::decode(bytes) {
                    count += 1;
                    on_record(m);
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
        while !stop.load(Ordering::Relaxed) {
            // EINTR and friends are not fatal: poll again. A poll that
            // times out consumes nothing (libbpf only drains rings that
            // signalled), so drain explicitly every round.
            let _ = rb.poll(POLL);
            let _ = rb.consume();
        }
        let _ = rb.consume();
    }
    Ok(count)
}
