//! The in-line measurement BPF programs, compiled from `bpf/*.c` by the
//! build script and embedded as ELF object bytes for the agent to load.
//!
//! - [`SOURCE`]: `sg_source`, tc egress, inserts the header.
//! - [`SINK`]: `sg_sink` (tc ingress) and `sg_sink_xdp` (XDP), which
//!   record and remove it; the agent loads one of the two.
//! - [`FLOOR`]: calibration programs for the benchmark only.
//!
//! ```
//! assert_eq!(&inline_ebpf::SOURCE[..4], b"\x7fELF");
//! ```
#![deny(missing_docs)]

/// ELF object holding the `sg_source` tc program and its maps.
pub static SOURCE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sg_source.o"));

/// ELF object holding the sink programs (`sg_sink` for tc, `sg_sink_xdp`
/// for XDP) and their maps.
pub static SINK: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sg_sink.o"));

/// ELF object holding the benchmark's calibration programs: `sg_empty`
/// (returns at once), `sg_floor_push`/`sg_floor_pop` (carry an 8-byte
/// header without measuring anything) and `sg_mfloor_push`/`sg_mfloor_pop`
/// (the measurement floor of the layout in `sg_mfloor_mode`, set before the
/// load: a header of its length plus the kernel work an exact measurement
/// with it needs, none of the real programs' logic), plus `sg_empty_xdp`,
/// `sg_floor_pop_xdp` and `sg_mfloor_pop_xdp` for a sink at XDP.
pub static FLOOR: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sg_floor.o"));
