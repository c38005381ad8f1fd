//! Each program's own cost per packet, without traffic: the kernel runs a
//! loaded (not attached) program on a packet we give it
//! (`BPF_PROG_TEST_RUN`) and reports how long the run took.
//!
//! The rate phases of `streamgauge inline bench` measure what users pay,
//! but on a shared 2-vCPU machine their ratios wander by ±30 % from round
//! to round. A test run times the program alone: no sender, no veth, no
//! receive path, no scheduler between the clock reads. So differences of
//! a few nanoseconds between programs (the measurement floor, the real
//! source on its specialised and on its general path) show, where the
//! rate phases cannot resolve them.
//!
//! Every run gets a fresh copy of the packet (one run per call: with
//! `repeat` the kernel would reuse a packet our source has already
//! instrumented, and the second run would skip it). The sink-side
//! programs get what their source-side counterpart made of it, so each
//! removes a header it recognises. Test packets have more headroom than a
//! UDP socket leaves, so the head reallocation of a header over 10 bytes
//! (docs/benchmarks.md) is not in these figures: they are the programs'
//! code, helpers and maps.

use inline_common::Counter;
use libbpf_rs::{MapCore, MapFlags, Object};

use crate::calibration::{self, Calibration};
use crate::error::ProgramError;
use crate::program::{self, LoadOptions, Role};
use crate::settings::Settings;

/// Which side of the path a program runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// tc egress of the sending host.
    Source,
    /// tc ingress of the receiving host.
    Sink,
}

/// What a program is, for the comparisons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// `sg_empty`: the hook's and the timing's own cost.
    Empty,
    /// Inserts or removes an 8-byte header, nothing else.
    HeaderOnly,
    /// The measurement floor of the settings' layout.
    MeasurementFloor,
    /// The real program, specialised for the settings it was loaded with.
    Loaded,
    /// The real source after a live change (its general path).
    General,
}

/// One program's timings.
#[derive(Debug, Clone)]
pub struct Cost {
    /// Its side.
    pub side: Side,
    /// What it is.
    pub what: Part,
    /// A name for tables.
    pub name: &'static str,
    /// Mean ns per run, one per round.
    pub ns: Vec<f64>,
}

/// UDP payload bytes of the test packet (the rate benchmark's default).
const PAYLOAD: usize = 64;

/// A program to time, its input, and the object that keeps it loaded.
struct Timed {
    object: Object,
    program: &'static str,
    input: Vec<u8>,
    cost: Cost,
}

impl Timed {
    /// One run on a fresh copy of the input: ns, return code, packet out.
    fn run_once(&mut self, out: &mut [u8]) -> Result<(u64, u32, usize), ProgramError> {
        let name = self.program;
        let prog = self
            .object
            .progs_mut()
            .find(|p| p.name() == name)
            .ok_or_else(|| not_found(name))?;
        let input = libbpf_rs::ProgramInput {
            data_in: Some(&self.input),
            data_out: Some(out),
            repeat: 1,
            ..Default::default()
        };
        let output = prog.test_run(input).map_err(|source| ProgramError::Load {
            program: self.program,
            source,
        })?;
        let len = output.data.map(|d| d.len()).unwrap_or(0);
        Ok((output.duration.as_nanos() as u64, output.return_value, len))
    }
}

fn not_found(program: &'static str) -> ProgramError {
    ProgramError::Load {
        program,
        source: libbpf_rs::Error::from_raw_os_error(nix::errno::Errno::ENOENT as i32),
    }
}

/// An Ethernet frame with an IPv6/UDP datagram from `fd00::1` port 6000 to
/// `fd00::2` port 7000 carrying `PAYLOAD` bytes (the rate benchmark's
/// addresses; the checksum is not checked by any program here).
pub fn test_packet() -> Vec<u8> {
    let mut p = Vec::with_capacity(14 + 40 + 8 + PAYLOAD);
    p.extend_from_slice(&[0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x86, 0xdd]);
    let udp_len = (8 + PAYLOAD) as u16;
    p.extend_from_slice(&[0x60, 0, 0, 0]);
    p.extend_from_slice(&udp_len.to_be_bytes());
    p.extend_from_slice(&[17, 64]);
    let addr = |last: u8| {
        let mut a = [0u8; 16];
        a[0] = 0xfd;
        a[15] = last;
        a
    };
    p.extend_from_slice(&addr(1));
    p.extend_from_slice(&addr(2));
    p.extend_from_slice(&6000u16.to_be_bytes());
    p.extend_from_slice(&7000u16.to_be_bytes());
    p.extend_from_slice(&udp_len.to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend((0..PAYLOAD).map(|i| i as u8));
    p
}

/// Times every program `rounds` times, `runs` runs each per round, the
/// programs taking turns within each round (so a slow spell of the
/// machine falls on all of them): the calibration programs, the real
/// source specialised for `settings` and on its general path, and the
/// real sink. Fails if the source does not instrument the test packet
/// (a filter in `settings` that excludes it) or a sink-side program does
/// not remove the header, or a ring buffer overflowed (a full ring makes
/// the sink cheaper).
pub fn program_costs(
    settings: &Settings,
    rounds: u32,
    runs: u32,
    mut progress: impl FnMut(u32),
) -> Result<Vec<Cost>, ProgramError> {
    let cfg = settings.to_config();
    let mode = settings.mode;
    let hlen = inline_common::header_len(mode.bits());
    let packet = test_packet();
    let opts = LoadOptions::default();
    let ring_records = (opts.ring_bytes / 64) as u64;
    if u64::from(rounds) * u64::from(runs) > ring_records * 9 / 10 {
        return Err(ProgramError::Io {
            what: "test runs",
            source: std::io::Error::other(format!(
                "{rounds} rounds of {runs} runs would overflow the sink's ring buffer \
                 ({ring_records} records): use fewer"
            )),
        });
    }
    let calib = |kind: Calibration, role: Role, side, what, name| -> Result<Timed, ProgramError> {
        let program = kind.program(role, false);
        Ok(Timed {
            object: calibration::load(kind, program)?,
            program,
            input: packet.clone(),
            cost: Cost {
                side,
                what,
                name,
                ns: Vec::new(),
            },
        })
    };
    let real = |role: Role, what, name| -> Result<Timed, ProgramError> {
        let program = role.program();
        let (object, maps) = program::load(role, program, opts, &cfg)?;
        if what == Part::General {
            // Any write but the loader's takes the general path.
            maps.set_config(&cfg)?;
        }
        Ok(Timed {
            object,
            program,
            input: packet.clone(),
            cost: Cost {
                side: if role == Role::Source {
                    Side::Source
                } else {
                    Side::Sink
                },
                what,
                name,
                ns: Vec::new(),
            },
        })
    };
    let floor = Calibration::MeasurementFloor(mode);
    let mut timed = vec![
        calib(
            Calibration::Empty,
            Role::Source,
            Side::Source,
            Part::Empty,
            "empty program",
        )?,
        calib(
            Calibration::Floor,
            Role::Source,
            Side::Source,
            Part::HeaderOnly,
            "header only",
        )?,
        calib(
            floor,
            Role::Source,
            Side::Source,
            Part::MeasurementFloor,
            "measurement floor",
        )?,
        real(Role::Source, Part::Loaded, "source, loaded settings")?,
        real(Role::Source, Part::General, "source, after a live change")?,
        calib(
            Calibration::Empty,
            Role::Sink,
            Side::Sink,
            Part::Empty,
            "empty program",
        )?,
        calib(
            Calibration::Floor,
            Role::Sink,
            Side::Sink,
            Part::HeaderOnly,
            "header only",
        )?,
        calib(
            floor,
            Role::Sink,
            Side::Sink,
            Part::MeasurementFloor,
            "measurement floor",
        )?,
        real(Role::Sink, Part::Loaded, "sink")?,
    ];
    // Each sink-side program removes what its source-side counterpart
    // inserts.
    let mut out = vec![0u8; packet.len() + 64];
    for (from, to, grows) in [(1, 6, 8), (2, 7, hlen), (3, 8, hlen)] {
        let (_, _, len) = timed[from].run_once(&mut out)?;
        if len != packet.len() + grows {
            return Err(ProgramError::Io {
                what: "test runs",
                source: std::io::Error::other(format!(
                    "{} made a {len}-byte packet of {} bytes, not {} more: do the settings' \
                     filters let a UDP datagram from fd00::1 to fd00::2 through?",
                    timed[from].program,
                    packet.len(),
                    grows
                )),
            });
        }
        timed[to].input = out[..len].to_vec();
    }
    for round in 0..rounds {
        for t in timed.iter_mut() {
            let mut total = 0u64;
            for _ in 0..runs {
                let (ns, _, len) = t.run_once(&mut out)?;
                if t.cost.side == Side::Sink && t.cost.what != Part::Empty && len != packet.len() {
                    return Err(ProgramError::Io {
                        what: "test runs",
                        source: std::io::Error::other(format!(
                            "{} left {len} bytes of {}: the header was not removed",
                            t.program,
                            t.input.len()
                        )),
                    });
                }
                total += ns;
            }
            t.cost.ns.push(total as f64 / f64::from(runs.max(1)));
        }
        progress(round + 1);
    }
    check_rings(&timed)?;
    Ok(timed.into_iter().map(|t| t.cost).collect())
}

/// A ring buffer that overflowed made its program cheaper: refuse the
/// figures.
fn check_rings(timed: &[Timed]) -> Result<(), ProgramError> {
    for t in timed.iter().filter(|t| t.cost.side == Side::Sink) {
        let drops = match t.cost.what {
            Part::Loaded => crate::maps::ProgramMaps::from_object(&t.object)?
                .counters()?
                .get(Counter::SinkRingDrops),
            Part::MeasurementFloor => {
                let map = t
                    .object
                    .maps()
                    .find(|m| m.name() == "sg_mfloor_drops")
                    .ok_or_else(|| not_found("sg_mfloor_drops"))?;
                let v = map
                    .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
                    .map_err(|source| ProgramError::Map {
                        map: "sg_mfloor_drops",
                        source,
                    })?
                    .unwrap_or_default();
                v.get(..8)
                    .and_then(|b| b.try_into().ok())
                    .map(u64::from_ne_bytes)
                    .unwrap_or(0)
            }
            _ => 0,
        };
        if drops > 0 {
            return Err(ProgramError::Io {
                what: "test runs",
                source: std::io::Error::other(format!(
                    "{}'s ring buffer overflowed ({drops} records dropped): use fewer runs",
                    t.program
                )),
            });
        }
    }
    Ok(())
}
