//! Delay before the next attempt of a failed upload.

use std::time::Duration;

use crate::config::BackoffConfig;

/// Delay after `failures` consecutive failed attempts (1 = first failure):
/// `initial * 2^(failures-1)` capped at `max`, then "equal jitter" — a
/// uniform pick in `[d/2, d]` — so that many files failing together (a server
/// outage) do not all retry in the same instant, while never retrying sooner
/// than half the nominal delay.
pub fn delay(cfg: &BackoffConfig, failures: u32) -> Duration {
    let nominal = omsp::backoff::Backoff::after_failures(
        Duration::from_millis(cfg.initial_ms),
        Duration::from_millis(cfg.max_ms),
        failures,
    )
    .as_millis() as u64;
    let low = nominal / 2;
    let ms = if nominal > low {
        // The OS generator; without it, the nominal delay (no jitter).
        getrandom::u64().map_or(nominal, |r| low + r % (nominal - low + 1))
    } else {
        nominal
    };
    Duration::from_millis(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_then_caps_with_jitter_in_range() {
        let cfg = BackoffConfig {
            initial_ms: 100,
            max_ms: 1_000,
        };
        for _ in 0..200 {
            let d1 = delay(&cfg, 1).as_millis();
            assert!((50..=100).contains(&d1), "{d1}");
            let d3 = delay(&cfg, 3).as_millis();
            assert!((200..=400).contains(&d3), "{d3}");
            let d40 = delay(&cfg, 40).as_millis();
            assert!((500..=1_000).contains(&d40), "{d40}");
        }
    }
}
