//! The plan of a factorial experiment (TOML), validated before any run:
//! its structure and levels without I/O ([`Plan::parse`]), then what this
//! host must provide for it (root for namespaces, [`Plan::check_host`]).

use std::path::Path;

use anyhow::{bail, ensure, Context, Result};
use serde::Deserialize;

/// Replications below this leave Shapiro-Wilk (3 values per treatment at
/// least) and the ANOVA's error term without enough data.
pub const MIN_REPLICATIONS: u32 = 3;

/// The factors the workload knows, and what their levels mean.
pub const FACTORS: &[(&str, &str)] = &[
    (
        "flavour",
        "uninstrumented | per-packet (one inject per packet) | filtered (per-packet inject, --oml-samples 100) \
         | c-uninstrumented | c-per-packet | c-filtered (the same sender in C through liboml2's API, our library) \
         | c-per-packet-reference | c-filtered-reference (the C sender linked against the reference liboml2) \
         | iperf3 | iperf3-wrapped (iperf3 over UDP between the veth namespaces, plain or under `streamgauge wrap iperf3`; network = \"veth\")",
    ),
    (
        "rate",
        "set rate in packets/s (a positive integer) or \"max\"",
    ),
    ("size", "UDP payload bytes, 8 to 65000"),
    (
        "threads",
        "sender threads, 1 to 16, each with its own socket and an even share of the set rate",
    ),
    (
        "inline",
        "in-line agent, source on the sender's veth, sink on the receiver's: off | every (every packet measured) | one-in-N (one packet in N per flow, N >= 2); network = \"veth\"",
    ),
    (
        "inline_mode",
        "options the in-line source inserts: loss (8-byte header) | both (delay and loss, 32 bytes)",
    ),
    (
        "capture",
        "capture session on the receiving interface: off | header (header-only pcap) | anon-flows (header-only pcap, Crypto-PAn on both addresses, IPFIX flows to a file); network = \"veth\"",
    ),
];

/// Responses the runner measures.
pub const RESPONSES: &[(&str, &str)] = &[
    (
        "recv_pps",
        "packets/s counted by an uninstrumented receiver socket in the trimmed window",
    ),
    (
        "sent_pps",
        "packets/s the sender itself counted in the trimmed window (not independent of it; the C sender's own counter; for iperf3 the sending interface's tx_packets)",
    ),
    (
        "loss",
        "1 - received / sent over the whole run (after a 100 ms drain)",
    ),
    (
        "iperf3_bps",
        "bits/s iperf3 itself measured at its receiver (the client's JSON, end.sum_received); iperf3 flavours only",
    ),
    (
        "iperf3_loss",
        "lost fraction of the datagrams iperf3 sent, by iperf3's own count (end.sum.lost_percent / 100); iperf3 flavours only",
    ),
    (
        "if_rx_pps",
        "packets/s the receiving interface's kernel counter (rx_packets, read in the receiver's namespace) counted in the trimmed window; network = \"veth\"",
    ),
];

/// Where the workload runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// Sender and receiver on 127.0.0.1 in this process's namespace.
    Loopback,
    /// Sender and receiver in two namespaces of their own joined by a veth
    /// pair (created for the plan, removed after it): the in-line agent and
    /// the capture session need real interfaces, and the receiving
    /// interface's counters count only the workload.
    Veth,
}

/// Every flavour level, in the order of [`FACTORS`]' description.
pub const FLAVOURS: &[&str] = &[
    "uninstrumented",
    "per-packet",
    "filtered",
    "c-uninstrumented",
    "c-per-packet",
    "c-filtered",
    "c-per-packet-reference",
    "c-filtered-reference",
    "iperf3",
    "iperf3-wrapped",
];

/// A C flavour: the C sender, and how it reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CFlavour {
    /// Calls liboml2 (otherwise it never enters the library).
    pub instrumented: bool,
    /// With `--oml-samples 100`.
    pub filtered: bool,
    /// Linked against the reference liboml2 instead of ours.
    pub reference: bool,
}

/// Which program sends, from the flavour's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sender {
    /// The Rust sender threads of the runner (`uninstrumented`, `per-packet`, `filtered`).
    Rust,
    /// The C sender process (`c-*`).
    C(CFlavour),
    /// iperf3 (`iperf3`, `iperf3-wrapped`).
    Iperf3 {
        /// Both iperf3 sides run under `streamgauge wrap iperf3`.
        wrapped: bool,
    },
}

impl Sender {
    /// The sender of a known flavour (None for an unknown name).
    pub fn of(flavour: &str) -> Option<Sender> {
        let c = |instrumented, filtered, reference| {
            Some(Sender::C(CFlavour {
                instrumented,
                filtered,
                reference,
            }))
        };
        match flavour {
            "uninstrumented" | "per-packet" | "filtered" => Some(Sender::Rust),
            "c-uninstrumented" => c(false, false, false),
            "c-per-packet" => c(true, false, false),
            "c-filtered" => c(true, true, false),
            "c-per-packet-reference" => c(true, false, true),
            "c-filtered-reference" => c(true, true, true),
            "iperf3" => Some(Sender::Iperf3 { wrapped: false }),
            "iperf3-wrapped" => Some(Sender::Iperf3 { wrapped: true }),
            _ => None,
        }
    }
}

/// The in-line agent's level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inline {
    /// Nothing attached.
    Off,
    /// Source and sink attached, one packet in N per flow measured (1 = every packet).
    OneIn(u32),
}

/// Options the in-line source inserts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InlineMode {
    /// The loss option alone (8-byte header).
    Loss,
    /// Delay and loss options (32-byte header).
    Both,
}

impl InlineMode {
    /// The in-line agent's `mode` setting.
    pub fn setting(self) -> &'static str {
        match self {
            InlineMode::Loss => "loss",
            InlineMode::Both => "both",
        }
    }
}

/// The capture session on the receiving interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capture {
    /// No capture.
    Off,
    /// One header-only pcap session.
    Header,
    /// Header-only pcap with Crypto-PAn on both addresses and IPFIX flow export to a file.
    AnonFlows,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: String,
    replications: u32,
    seconds: f64,
    #[serde(default)]
    warmup: f64,
    #[serde(default)]
    cooldown: f64,
    #[serde(default = "default_interval")]
    interval: f64,
    #[serde(default)]
    seed: u64,
    responses: Vec<String>,
    #[serde(default)]
    collect: Option<String>,
    #[serde(default)]
    network: Option<String>,
    #[serde(default)]
    defaults: toml::Table,
    factors: toml::Table,
    #[serde(default)]
    power: Option<PowerGoal>,
}

/// What a plan must be able to detect (`[power]`, optional): the plan is
/// refused when its replications cannot reach this power (see
/// [`crate::analysis::replications_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerGoal {
    /// Smallest relative difference to the baseline worth detecting (0.05 = 5 %).
    pub effect: f64,
    /// Within-cell standard deviation as a fraction of the mean (from a pilot run).
    pub cv: f64,
    /// Wanted probability of detecting `effect` in a cell.
    #[serde(default = "default_power")]
    pub power: f64,
    /// Significance level, split over the compared cells (Holm's first step).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
}

fn default_power() -> f64 {
    0.8
}

fn default_alpha() -> f64 {
    0.05
}

fn default_interval() -> f64 {
    0.1
}

/// The settings of one run: every known factor has a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// How the sender reports its packets (uninstrumented, per-packet, filtered).
    pub flavour: String,
    /// Packets/s; None = as fast as possible.
    pub rate: Option<u64>,
    /// UDP payload bytes.
    pub size: usize,
    /// Sender threads.
    pub threads: usize,
    /// The in-line agent on the path.
    pub inline: Inline,
    /// Its options.
    pub inline_mode: InlineMode,
    /// The capture session on the receiving interface.
    pub capture: Capture,
}

impl Settings {
    /// Which program sends.
    pub fn sender(&self) -> Sender {
        Sender::of(&self.flavour).unwrap_or(Sender::Rust)
    }

    /// What needs real interfaces (the veth network), if anything.
    fn needs_veth(&self) -> Option<&'static str> {
        if matches!(self.sender(), Sender::Iperf3 { .. }) {
            Some("iperf3 runs between the two namespaces, and the interfaces' counters are its independent responses")
        } else if self.inline != Inline::Off {
            Some("the in-line agent attaches to the veth pair's interfaces")
        } else if self.capture != Capture::Off {
            Some("the capture session reads the receiving veth interface")
        } else {
            None
        }
    }
}

/// A varied factor and its levels, as written in the plan.
#[derive(Debug, Clone)]
pub struct Factor {
    /// One of [`FACTORS`].
    pub name: String,
    /// Its levels as written (numbers as decimal text); the first is the baseline.
    pub levels: Vec<String>,
}

/// A validated plan.
#[derive(Debug)]
pub struct Plan {
    /// Names the output folder and is checked on resume.
    pub name: String,
    /// Runs per treatment.
    pub replications: u32,
    /// Length of each run.
    pub seconds: f64,
    /// Seconds trimmed from the start of each run (before the rates settle).
    pub warmup: f64,
    /// Seconds trimmed from its end.
    pub cooldown: f64,
    /// Sampling interval of the counters.
    pub interval: f64,
    /// Seed of the run order.
    pub seed: u64,
    /// Names from [`RESPONSES`].
    pub responses: Vec<String>,
    /// A collection URI that receives every sample as a measurement stream.
    pub collect: Option<String>,
    /// Where the workload runs.
    pub network: Network,
    /// The varied factors; the first is the treatment.
    pub factors: Vec<Factor>,
    /// The effect the plan must be able to detect, if it states one.
    pub power: Option<PowerGoal>,
    defaults: Settings,
}

/// One run in standard order (its index in `Plan::runs`): replication and level per factor.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// 0-based replication.
    pub replication: u32,
    /// The level of each factor, in the plan's factor order.
    pub levels: Vec<String>,
}

impl Plan {
    /// Reads and validates a plan file ([`Plan::parse`], then [`Plan::check_host`]).
    pub fn load(path: &Path) -> Result<Plan> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let plan = Plan::parse(&text).with_context(|| format!("plan {}", path.display()))?;
        plan.check_host()
            .with_context(|| format!("plan {}", path.display()))?;
        Ok(plan)
    }

    /// What this host must provide: root and `ip` for the veth network.
    pub fn check_host(&self) -> Result<()> {
        if self.network == Network::Veth {
            ensure!(
                nix::unistd::geteuid().is_root(),
                "network = \"veth\" needs root (network namespaces and veth pairs; the in-line agent loads BPF programs, capture opens AF_PACKET sockets)"
            );
            let ip = std::process::Command::new("ip").arg("-V").output();
            ensure!(
                ip.is_ok_and(|o| o.status.success()),
                "network = \"veth\" needs the `ip` command (iproute2)"
            );
        }
        let senders = self.senders();
        let runs = |tool: &str| {
            std::process::Command::new(tool)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if senders.iter().any(|s| matches!(s, Sender::C(_))) {
            ensure!(
                runs("cc"),
                "the c-* flavours compile their sender: install a C compiler as `cc` (apt install gcc)"
            );
        }
        if senders.iter().any(|s| matches!(s, Sender::Iperf3 { .. })) {
            ensure!(
                runs("iperf3"),
                "the iperf3 flavours need iperf3 (apt install iperf3)"
            );
        }
        Ok(())
    }

    /// Validates a plan's text without I/O.
    pub fn parse(text: &str) -> Result<Plan> {
        let raw: Raw = toml::from_str(text)?;
        let network = match raw.network.as_deref().unwrap_or("loopback") {
            "loopback" => Network::Loopback,
            "veth" => Network::Veth,
            other => bail!("unknown network {other:?}; known: loopback, veth"),
        };
        ensure!(!raw.name.is_empty(), "name must not be empty");
        ensure!(
            raw.replications >= MIN_REPLICATIONS,
            "replications = {}: the tests need at least {MIN_REPLICATIONS} runs per treatment (Shapiro-Wilk needs 3 values per group)",
            raw.replications
        );
        ensure!(raw.seconds > 0.0, "seconds must be positive");
        ensure!(
            raw.warmup >= 0.0 && raw.cooldown >= 0.0,
            "warmup and cooldown must not be negative"
        );
        ensure!(
            raw.seconds - raw.warmup - raw.cooldown >= 2.0 * raw.interval && raw.interval > 0.0,
            "seconds ({}) minus warmup ({}) and cooldown ({}) must leave at least two sampling intervals ({} s)",
            raw.seconds,
            raw.warmup,
            raw.cooldown,
            raw.interval
        );
        ensure!(
            !raw.responses.is_empty(),
            "responses must name at least one of: {}",
            names(RESPONSES)
        );
        for r in &raw.responses {
            ensure!(
                RESPONSES.iter().any(|(n, _)| n == r),
                "unknown response {r:?}; known: {}",
                names(RESPONSES)
            );
            ensure!(
                r != "if_rx_pps" || network == Network::Veth,
                "response if_rx_pps needs network = \"veth\" (the loopback interface's counter counts every process's loopback traffic)"
            );
        }
        let mut defaults = Settings {
            flavour: "uninstrumented".into(),
            rate: None,
            size: 64,
            threads: 1,
            inline: Inline::Off,
            inline_mode: InlineMode::Both,
            capture: Capture::Off,
        };
        let usable = |s: &Settings| -> Result<()> {
            if let (Some(why), Network::Loopback) = (s.needs_veth(), network) {
                bail!("needs network = \"veth\": {why}");
            }
            Ok(())
        };
        for (k, v) in &raw.defaults {
            apply(&mut defaults, k, &level_text(k, v)?)
                .and_then(|()| usable(&defaults))
                .with_context(|| format!("defaults.{k}"))?;
        }
        ensure!(
            !raw.factors.is_empty(),
            "[factors] must name at least one factor: {}",
            names(FACTORS)
        );
        let mut factors = Vec::new();
        for (k, v) in &raw.factors {
            let Some(list) = v.as_array() else {
                bail!("factors.{k} must be a list of levels");
            };
            ensure!(
                list.len() >= 2,
                "factors.{k} needs at least 2 levels to compare"
            );
            let mut levels = Vec::new();
            for l in list {
                let text = level_text(k, l)?;
                let mut probe = defaults.clone();
                apply(&mut probe, k, &text)
                    .and_then(|()| usable(&probe))
                    .with_context(|| format!("factors.{k}"))?;
                ensure!(
                    !levels.contains(&text),
                    "factors.{k}: level {text} given twice"
                );
                levels.push(text);
            }
            factors.push(Factor {
                name: k.to_string(),
                levels,
            });
        }
        let flavours: Vec<String> = match factors.iter().find(|f| f.name == "flavour") {
            Some(f) => f.levels.clone(),
            None => vec![defaults.flavour.clone()],
        };
        check_flavours(&flavours, &raw.responses, raw.seconds)?;
        if let Some(goal) = raw.power {
            ensure!(
                goal.effect.is_finite() && goal.effect != 0.0,
                "power.effect: give the smallest relative difference worth detecting, e.g. 0.05 for 5 %"
            );
            ensure!(
                goal.cv.is_finite() && goal.cv > 0.0,
                "power.cv: give the within-cell standard deviation as a fraction of the mean, e.g. 0.1 (a pilot run's report shows it)"
            );
            ensure!(
                goal.power > 0.0 && goal.power < 1.0 && goal.alpha > 0.0 && goal.alpha < 1.0,
                "power.power and power.alpha must lie strictly between 0 and 1"
            );
            let cells = compared_cells(&factors);
            let needed = crate::analysis::replications_for(&goal, cells);
            ensure!(
                raw.replications >= needed,
                "replications = {}: detecting a {} % difference with {} % power when the within-cell SD is {} % of the mean \
                 needs at least {needed} runs per treatment ({cells} cells compared to the baseline, alpha {} / {cells}); \
                 raise replications, or `python3 -m streamgauge.observe plan --effect {} --cv {} --power {} --alpha {} --cells {cells}` \
                 gives the exact figure",
                raw.replications,
                goal.effect.abs() * 100.0,
                goal.power * 100.0,
                goal.cv * 100.0,
                goal.alpha,
                goal.effect,
                goal.cv,
                goal.power,
                goal.alpha,
            );
        }
        Ok(Plan {
            power: raw.power,
            name: raw.name,
            replications: raw.replications,
            seconds: raw.seconds,
            warmup: raw.warmup,
            cooldown: raw.cooldown,
            interval: raw.interval,
            seed: raw.seed,
            responses: raw.responses,
            collect: raw.collect,
            network,
            factors,
            defaults,
        })
    }

    /// Every run in standard order: treatments with the first factor
    /// varying slowest, replications innermost.
    pub fn runs(&self) -> Vec<RunSpec> {
        let mut combos: Vec<Vec<String>> = vec![vec![]];
        for f in &self.factors {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    f.levels.iter().map(move |l| {
                        let mut c = c.clone();
                        c.push(l.clone());
                        c
                    })
                })
                .collect();
        }
        let mut out = Vec::new();
        for levels in combos {
            for replication in 0..self.replications {
                out.push(RunSpec {
                    replication,
                    levels: levels.clone(),
                });
            }
        }
        out
    }

    /// The run order (indices into [`Plan::runs`]), shuffled from the seed (Fisher-Yates over splitmix64).
    pub fn order(&self) -> Vec<usize> {
        let mut ids: Vec<usize> = (0..self.runs().len()).collect();
        let mut state = self.seed;
        for i in (1..ids.len()).rev() {
            let j = (splitmix64(&mut state) % (i as u64 + 1)) as usize;
            ids.swap(i, j);
        }
        ids
    }

    /// The settings of a run: the defaults with the run's levels applied.
    pub fn settings(&self, run: &RunSpec) -> Settings {
        let mut s = self.defaults.clone();
        for (f, l) in self.factors.iter().zip(&run.levels) {
            apply(&mut s, &f.name, l).expect("levels were validated when the plan was read");
        }
        s
    }
}

/// What the flavours a plan uses need of its other settings.
fn check_flavours(flavours: &[String], responses: &[String], seconds: f64) -> Result<()> {
    let iperf3: Vec<&String> = flavours
        .iter()
        .filter(|f| matches!(Sender::of(f), Some(Sender::Iperf3 { .. })))
        .collect();
    if let Some(f) = iperf3.first() {
        ensure!(
            seconds >= 1.0 && seconds.fract() == 0.0,
            "flavour {f}: seconds = {seconds}: iperf3 runs whole seconds (its -t); give a whole number, at least 1"
        );
        for r in ["recv_pps", "loss"] {
            ensure!(
                !responses.iter().any(|x| x == r),
                "flavour {f}: response {r} counts the runner's own receiver socket, which iperf3's datagrams do not reach; \
                 use if_rx_pps (the receiving interface), iperf3_bps or iperf3_loss"
            );
        }
    }
    for r in ["iperf3_bps", "iperf3_loss"] {
        if responses.iter().any(|x| x == r) {
            let other = flavours
                .iter()
                .find(|f| !matches!(Sender::of(f), Some(Sender::Iperf3 { .. })));
            if let Some(other) = other {
                bail!("response {r} is iperf3's own figure; flavour {other} runs no iperf3 (compare it on if_rx_pps or sent_pps)");
            }
        }
    }
    Ok(())
}

impl Plan {
    /// Every flavour the plan's runs use.
    pub fn flavours(&self) -> Vec<String> {
        match self.factors.iter().find(|f| f.name == "flavour") {
            Some(f) => f.levels.clone(),
            None => vec![self.defaults.flavour.clone()],
        }
    }

    /// The senders the plan's runs use.
    pub fn senders(&self) -> Vec<Sender> {
        self.flavours()
            .iter()
            .filter_map(|f| Sender::of(f))
            .collect()
    }
}

/// Cells whose effect the verdict tests: each level of the treatment (the
/// first factor) but the baseline, in each combination of the others' levels.
pub fn compared_cells(factors: &[Factor]) -> u32 {
    let others: usize = factors.iter().skip(1).map(|f| f.levels.len()).product();
    let treatment = factors.first().map_or(1, |f| f.levels.len());
    u32::try_from(treatment.saturating_sub(1) * others).unwrap_or(u32::MAX)
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn names(list: &[(&str, &str)]) -> String {
    list.iter()
        .map(|(n, d)| format!("{n} ({d})"))
        .collect::<Vec<_>>()
        .join("; ")
}

fn level_text(factor: &str, v: &toml::Value) -> Result<String> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        other => bail!("{factor}: level {other:?} must be a string or an integer"),
    }
}

/// Sets one factor of `s`, refusing unknown factors and impossible levels.
fn apply(s: &mut Settings, factor: &str, level: &str) -> Result<()> {
    match factor {
        "flavour" => {
            ensure!(
                Sender::of(level).is_some(),
                "unknown flavour {level:?}; known: {}",
                FLAVOURS.join(", ")
            );
            s.flavour = level.to_owned();
        }
        "rate" => {
            s.rate = if level == "max" {
                None
            } else {
                let r: u64 = level.parse().ok().filter(|r| *r > 0).with_context(|| {
                    format!("rate {level:?} is not a positive number of packets/s or \"max\"")
                })?;
                Some(r)
            };
        }
        "size" => {
            let n: usize = level
                .parse()
                .ok()
                .filter(|n| (8..=65_000).contains(n))
                .with_context(|| format!("size {level:?} is not 8 to 65000 bytes"))?;
            s.size = n;
        }
        "threads" => {
            s.threads = level
                .parse()
                .ok()
                .filter(|n| (1..=16).contains(n))
                .with_context(|| format!("threads {level:?} is not 1 to 16"))?;
        }
        "inline" => {
            s.inline = match level {
                "off" => Inline::Off,
                "every" => Inline::OneIn(1),
                _ => {
                    let n = level
                        .strip_prefix("one-in-")
                        .and_then(|n| n.parse().ok())
                        .filter(|n| *n >= 2)
                        .with_context(|| {
                            format!("unknown inline level {level:?}; known: off, every, one-in-N (N >= 2)")
                        })?;
                    Inline::OneIn(n)
                }
            };
            ensure!(
                s.inline == Inline::Off || cfg!(feature = "inline"),
                "inline {level:?}: this build has no in-line agent (built without the `inline` feature)"
            );
        }
        "inline_mode" => {
            s.inline_mode = match level {
                "loss" => InlineMode::Loss,
                "both" => InlineMode::Both,
                _ => bail!("unknown inline_mode {level:?}; known: loss, both"),
            };
        }
        "capture" => {
            s.capture = match level {
                "off" => Capture::Off,
                "header" => Capture::Header,
                "anon-flows" => Capture::AnonFlows,
                _ => bail!("unknown capture level {level:?}; known: off, header, anon-flows"),
            };
        }
        other => bail!("unknown factor {other:?}; known: {}", names(FACTORS)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"
name = "t"
replications = 3
seconds = 1.0
seed = 7
responses = ["recv_pps"]
[factors]
flavour = ["uninstrumented", "per-packet"]
rate = [1000, "max"]
"#;

    #[test]
    fn a_valid_plan_expands_to_all_runs_in_a_seeded_order() {
        let p = Plan::parse(OK).unwrap();
        let runs = p.runs();
        assert_eq!(runs.len(), 12);
        assert_eq!(runs[3].levels, ["uninstrumented", "max"]);
        assert_eq!(p.settings(&runs[3]).rate, None);
        let mut order = p.order();
        assert_eq!(order, p.order());
        assert_ne!(order, (0..12).collect::<Vec<_>>());
        order.sort_unstable();
        assert_eq!(order, (0..12).collect::<Vec<_>>());
    }

    #[test]
    fn a_power_goal_the_replications_meet_is_accepted() {
        // 10 % with 5 % noise: d = 2, 2 cells -> 7 runs (the exact figure is 7 too)
        let text = format!(
            "{}[power]\neffect = -0.1\ncv = 0.05\n",
            OK.replace("replications = 3", "replications = 7")
        );
        let p = Plan::parse(&text).unwrap();
        assert_eq!(compared_cells(&p.factors), 2);
        assert_eq!(p.power.map(|g| g.power), Some(0.8));
        let short = text.replace("replications = 7", "replications = 6");
        let err = format!("{:#}", Plan::parse(&short).unwrap_err());
        assert!(err.contains("at least 7 runs"), "{err}");
    }

    #[test]
    fn veth_plans_know_the_components() {
        let text = OK
            .replace("seed = 7", "seed = 7\nnetwork = \"veth\"")
            .replace("recv_pps", "if_rx_pps")
            .replace(
                "rate = [1000, \"max\"]",
                "capture = [\"off\", \"header\", \"anon-flows\"]",
            );
        let p = Plan::parse(&text).unwrap();
        assert_eq!(p.network, Network::Veth);
        let runs = p.runs();
        assert_eq!(runs.len(), 18);
        // Replications innermost: runs 6-8 are the third capture level.
        assert_eq!(p.settings(&runs[5]).capture, Capture::Header);
        assert_eq!(p.settings(&runs[6]).capture, Capture::AnonFlows);
        assert_eq!(p.settings(&runs[6]).inline, Inline::Off);
    }

    #[test]
    fn the_c_and_iperf3_flavours_name_their_sender() {
        let text = OK.replace(
            "[\"uninstrumented\", \"per-packet\"]",
            "[\"c-uninstrumented\", \"c-per-packet\", \"c-filtered-reference\"]",
        );
        let p = Plan::parse(&text).unwrap();
        let senders = p.senders();
        assert_eq!(
            senders[2],
            Sender::C(CFlavour {
                instrumented: true,
                filtered: true,
                reference: true
            })
        );
        assert_eq!(p.settings(&p.runs()[0]).sender(), senders[0]);
        let iperf = "name = \"i\"\nreplications = 3\nseconds = 2\nnetwork = \"veth\"\n\
                     responses = [\"if_rx_pps\", \"iperf3_bps\", \"iperf3_loss\"]\n\
                     [factors]\nflavour = [\"iperf3\", \"iperf3-wrapped\"]\n";
        let p = Plan::parse(iperf).unwrap();
        assert_eq!(p.senders()[1], Sender::Iperf3 { wrapped: true });
        assert!(FLAVOURS.iter().all(|f| Sender::of(f).is_some()));
    }

    #[test]
    fn bad_plans_are_refused_with_the_reason() {
        let cases = [
            (
                OK.replace("rate =", "jitter ="),
                "unknown factor \"jitter\"",
            ),
            (
                OK.replace("\"per-packet\"", "\"sampled\""),
                "unknown flavour",
            ),
            (OK.replace("1000", "0"), "not a positive number"),
            (
                OK.replace("replications = 3", "replications = 2"),
                "at least 3 runs",
            ),
            (OK.replace("recv_pps", "jitter"), "unknown response"),
            (
                OK.replace("[factors]", "[defaults]\nthreads = 0\n[factors]"),
                "threads \"0\" is not 1 to 16",
            ),
            (OK.replace("[1000, \"max\"]", "[1000]"), "at least 2 levels"),
            (
                OK.replace("seconds = 1.0", "seconds = 1.0\nwarmup = 0.95"),
                "two sampling intervals",
            ),
            (OK.replace("seed = 7", "sede = 7"), "unknown field"),
            (
                OK.replace("seed = 7", "seed = 7\nnetwork = \"wifi\""),
                "unknown network \"wifi\"",
            ),
            (
                OK.replace("recv_pps", "if_rx_pps"),
                "if_rx_pps needs network = \"veth\"",
            ),
            (
                OK.replace("rate = [1000, \"max\"]", "capture = [\"off\", \"header\"]"),
                "factors.capture: needs network = \"veth\"",
            ),
            (
                OK.replace("[factors]", "network = \"veth\"\n[factors]")
                    .replace("rate = [1000, \"max\"]", "capture = [\"off\", \"full\"]"),
                "unknown capture level \"full\"",
            ),
            (
                OK.replace("[factors]", "network = \"veth\"\n[factors]")
                    .replace("rate = [1000, \"max\"]", "inline = [\"off\", \"one-in-1\"]"),
                "unknown inline level \"one-in-1\"",
            ),
            (
                OK.replace(
                    "rate = [1000, \"max\"]",
                    "inline_mode = [\"loss\", \"pdm\"]",
                ),
                "unknown inline_mode \"pdm\"",
            ),
            (
                format!("{OK}[power]\neffect = 0.1\ncv = 0.15\n"),
                "needs at least 45 runs per treatment (2 cells compared",
            ),
            (format!("{OK}[power]\neffect = 0.1\ncv = 0\n"), "power.cv"),
            (
                format!("{OK}[power]\neffect = 0.1\ncv = 0.1\nbeta = 0.2\n"),
                "unknown field `beta`",
            ),
            (
                OK.replace("\"per-packet\"", "\"iperf3\""),
                "needs network = \"veth\": iperf3 runs between the two namespaces",
            ),
            (
                OK.replace("seconds = 1.0", "seconds = 1.5")
                    .replace("[factors]", "network = \"veth\"\n[factors]")
                    .replace("\"per-packet\"", "\"iperf3-wrapped\""),
                "iperf3 runs whole seconds",
            ),
            (
                OK.replace("seconds = 1.0", "seconds = 1")
                    .replace("[factors]", "network = \"veth\"\n[factors]")
                    .replace("\"per-packet\"", "\"iperf3\""),
                "response recv_pps counts the runner's own receiver socket",
            ),
            (
                OK.replace("recv_pps", "iperf3_bps"),
                "flavour uninstrumented runs no iperf3",
            ),
            (
                OK.replace("\"per-packet\"", "\"c-sampled\""),
                "known: uninstrumented, per-packet, filtered, c-uninstrumented",
            ),
        ];
        for (text, want) in cases {
            let err = format!("{:#}", Plan::parse(&text).unwrap_err());
            assert!(err.contains(want), "{want:?} not in {err:?}");
        }
    }
}
