//! Programs timed alone (`inline::testrun`): every program runs on the
//! packet it is given and does its work on it (the source instruments it,
//! each sink-side program removes what its counterpart inserted), and a
//! filter that excludes the test packet is an error, not a cheap figure.

mod common;

use common::*;
use inline::testrun::{program_costs, test_packet, Part, Side};
use inline::Settings;

/// Settings on top of the defaults (any source address).
fn with(extra: &[&str]) -> Settings {
    let mut s = Settings::default();
    s.set_all(extra.iter().copied()).unwrap();
    s
}

#[test]
fn every_program_is_timed_on_a_packet_it_works_on() {
    if !require_root() {
        return;
    }
    for mode in ["loss", "both", "compact"] {
        let s = with(&["dst=fd00::2", "proto=udp", &format!("mode={mode}")]);
        let mut rounds = 0;
        let costs = program_costs(&s, 3, 50, |r| rounds = r).unwrap();
        assert_eq!(rounds, 3);
        assert_eq!(costs.len(), 9, "{costs:?}");
        for side in [Side::Source, Side::Sink] {
            let parts: Vec<Part> = costs
                .iter()
                .filter(|c| c.side == side)
                .map(|c| c.what)
                .collect();
            assert!(parts.contains(&Part::Empty) && parts.contains(&Part::MeasurementFloor));
            assert!(parts.contains(&Part::HeaderOnly) && parts.contains(&Part::Loaded));
        }
        for c in &costs {
            assert_eq!(c.ns.len(), 3);
            assert!(c.ns.iter().all(|&ns| ns > 0.0), "{c:?}");
        }
    }
}

#[test]
fn a_filter_that_excludes_the_test_packet_is_refused() {
    if !require_root() {
        return;
    }
    assert_eq!(test_packet().len(), 14 + 40 + 8 + 64);
    let s = with(&["dst=fd00::99", "mode=loss"]);
    let err = program_costs(&s, 1, 10, |_| {}).unwrap_err().to_string();
    assert!(err.contains("filters"), "{err}");
    // More runs than the sinks' rings hold is refused before anything runs.
    let s = with(&["mode=loss"]);
    let err = program_costs(&s, 100, 100_000, |_| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("ring buffer"), "{err}");
}
