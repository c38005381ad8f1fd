//! The synchronisation state of the host's clock, as the kernel and the
//! time daemons expose it.
//!
//! [`read`] asks the kernel with `adjtimex(2)` in read-only mode (`modes =
//! 0`, allowed to any user): whether the clock is synchronised (the
//! `STA_UNSYNC` status flag is clear), the offset of the last measurement
//! the daemon applied, and the kernel's maximum and estimated error. It then
//! looks at the running processes to name what disciplines the clock:
//! `phc2sys`/`ptp4l`/`ts2phc` mean PTP, `chronyd`/`ntpd`/`systemd-timesyncd`
//! and the like mean NTP.
//!
//! The client reports this state as the `_client_clock` stream (see
//! `docs/clock.md`), so that the server and the people reading the data
//! know which streams can be compared at fine resolution.
//!
//! ```
//! if let Ok(state) = client::clocksync::read() {
//!     assert!(state.maxerror >= 0.0 || state.maxerror == -1.0);
//!     println!("{} ({})", state.source.name(), state.daemon);
//! }
//! ```

use std::path::Path;

/// What keeps the clock in step, as far as this host can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Synchronised, and a PTP daemon (`phc2sys`, `ptp4l`, `ts2phc`) runs.
    Ptp,
    /// Synchronised by another daemon (chrony, ntpd, systemd-timesyncd, or
    /// one we do not know: the kernel's synchronised flag is NTP's).
    Ntp,
    /// The kernel says the clock is not synchronised (`STA_UNSYNC`).
    None,
    /// The kernel could not be asked (not Linux, or the call failed).
    Unknown,
}

impl Source {
    /// The name written in the `source` field: `ptp`, `ntp`, `none`, `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            Source::Ptp => "ptp",
            Source::Ntp => "ntp",
            Source::None => "none",
            Source::Unknown => "unknown",
        }
    }
}

/// One reading of the clock's state. Times are in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct ClockState {
    /// What disciplines the clock.
    pub source: Source,
    /// The daemon found running (`chronyd`, `phc2sys`, …), empty if none.
    /// Tells a reader which tool to ask for details.
    pub daemon: String,
    /// The kernel's `STA_UNSYNC` flag is clear.
    pub synchronized: bool,
    /// Offset of the clock from its reference at the daemon's last update,
    /// as the daemon handed it to the kernel (`timex.offset`; 0 with
    /// daemons that steer the frequency themselves, as chrony does).
    pub offset: f64,
    /// The kernel's maximum error (`timex.maxerror`): a bound on how far the
    /// clock may be from true time; grows by 500 ppm while no daemon
    /// updates it. −1 when unknown.
    pub maxerror: f64,
    /// The kernel's estimated error (`timex.esterror`). −1 when unknown.
    pub esterror: f64,
    /// The raw kernel status word (`STA_*` flags), for experts.
    pub status: i32,
}

impl ClockState {
    /// The state when the kernel cannot be asked.
    pub fn unknown() -> ClockState {
        ClockState {
            source: Source::Unknown,
            daemon: String::new(),
            synchronized: false,
            offset: 0.0,
            maxerror: -1.0,
            esterror: -1.0,
            status: 0,
        }
    }
}

/// Why the kernel could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum ClockError {
    /// `adjtimex` failed.
    #[error("adjtimex: {0}")]
    Adjtimex(#[source] std::io::Error),
    /// This platform has no `adjtimex`.
    #[error("reading the clock's synchronisation state is only supported on Linux")]
    Unsupported,
}

/// Daemons that discipline the clock through PTP.
const PTP_DAEMONS: &[&str] = &["phc2sys", "ptp4l", "ts2phc"];
/// Daemons that discipline the clock through NTP (`comm` names, at most 15 bytes).
const NTP_DAEMONS: &[&str] = &[
    "chronyd",
    "ntpd",
    "openntpd",
    "systemd-timesyn",
    "ntpsec",
    "timesyncd",
];

/// `STA_UNSYNC`: the clock is not synchronised.
const STA_UNSYNC: i32 = 0x0040;
/// `STA_NANO`: `offset` is in nanoseconds rather than microseconds.
const STA_NANO: i32 = 0x2000;

/// Reads the clock's state now: one `adjtimex` call and a scan of
/// `/proc/*/comm`.
pub fn read() -> Result<ClockState, ClockError> {
    let k = kernel()?;
    Ok(classify(k, &running_daemons(Path::new("/proc"))))
}

/// What `adjtimex` says, before the source is worked out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Kernel {
    /// `timex.status`.
    pub(crate) status: i32,
    /// `timex.offset`, raw (µs, or ns with `STA_NANO`).
    pub(crate) offset: i64,
    /// `timex.maxerror`, µs.
    pub(crate) maxerror: i64,
    /// `timex.esterror`, µs.
    pub(crate) esterror: i64,
}

/// Names the source from the kernel's state and the daemons running.
pub(crate) fn classify(k: Kernel, daemons: &[String]) -> ClockState {
    let synchronized = k.status & STA_UNSYNC == 0;
    let ptp = daemons.iter().find(|d| PTP_DAEMONS.contains(&d.as_str()));
    let ntp = daemons.iter().find(|d| NTP_DAEMONS.contains(&d.as_str()));
    let (source, daemon) = match (synchronized, ptp, ntp) {
        (false, _, _) => (Source::None, ptp.or(ntp)),
        (true, Some(d), _) => (Source::Ptp, Some(d)),
        (true, None, d) => (Source::Ntp, d),
    };
    let unit = if k.status & STA_NANO != 0 { 1e-9 } else { 1e-6 };
    ClockState {
        source,
        daemon: daemon.cloned().unwrap_or_default(),
        synchronized,
        offset: k.offset as f64 * unit,
        maxerror: k.maxerror as f64 * 1e-6,
        esterror: k.esterror as f64 * 1e-6,
        status: k.status,
    }
}

/// The time daemons among the processes under `proc` (by `comm` name).
pub(crate) fn running_daemons(proc: &Path) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(proc) else {
        return Vec::new();
    };
    let mut found: Vec<String> = Vec::new();
    for entry in dir.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(comm) = std::fs::read_to_string(entry.path().join("comm")) else {
            continue;
        };
        let comm = comm.trim_end();
        let known = PTP_DAEMONS.contains(&comm) || NTP_DAEMONS.contains(&comm);
        if known && !found.iter().any(|f| f == comm) {
            found.push(comm.to_owned());
        }
    }
    found.sort();
    found
}

/// Asks the kernel (read-only `adjtimex`).
#[cfg(target_os = "linux")]
fn kernel() -> Result<Kernel, ClockError> {
    let t = adjtimex_read().map_err(ClockError::Adjtimex)?;
    Ok(Kernel {
        status: t.status,
        offset: t.offset,
        maxerror: t.maxerror,
        esterror: t.esterror,
    })
}

#[cfg(not(target_os = "linux"))]
fn kernel() -> Result<Kernel, ClockError> {
    Err(ClockError::Unsupported)
}

/// The one unsafe call: `adjtimex` with `modes = 0`, which only reads.
///
/// Safety: `timex` is plain old data, so all-zero bytes are a valid value
/// (and `modes = 0` asks for no change); the pointer handed to the kernel
/// is to a live, exclusively borrowed local that outlives the call.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn adjtimex_read() -> std::io::Result<libc::timex> {
    // SAFETY: see the function's documentation.
    let mut t: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: `t` is a valid, writable `timex`.
    let rc = unsafe { libc::adjtimex(&mut t) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(status: i32) -> Kernel {
        Kernel {
            status,
            offset: -1500,
            maxerror: 16_000,
            esterror: 250,
        }
    }

    #[test]
    fn unsync_is_none_whatever_runs() {
        let s = classify(k(STA_UNSYNC), &["chronyd".into()]);
        assert_eq!(s.source, Source::None);
        assert!(!s.synchronized);
        assert_eq!(s.daemon, "chronyd");
    }

    #[test]
    fn ptp_wins_over_ntp_when_synchronised() {
        let d = vec!["chronyd".to_string(), "phc2sys".to_string()];
        let s = classify(k(0), &d);
        assert_eq!((s.source, s.daemon.as_str()), (Source::Ptp, "phc2sys"));
        let s = classify(k(0), &d[..1]);
        assert_eq!((s.source, s.daemon.as_str()), (Source::Ntp, "chronyd"));
        let s = classify(k(0), &[]);
        assert_eq!((s.source, s.daemon.as_str()), (Source::Ntp, ""));
    }

    #[test]
    fn units() {
        let s = classify(k(0), &[]);
        assert!((s.offset + 1.5e-3).abs() < 1e-12);
        assert!((s.maxerror - 0.016).abs() < 1e-12);
        assert!((s.esterror - 250e-6).abs() < 1e-12);
        let s = classify(k(STA_NANO), &[]);
        assert!((s.offset + 1.5e-6).abs() < 1e-15);
    }

    #[test]
    fn scans_a_proc_tree() {
        let dir = tempfile::tempdir().unwrap();
        for (pid, comm) in [("1", "init\n"), ("42", "chronyd\n"), ("43", "ptp4l\n")] {
            std::fs::create_dir(dir.path().join(pid)).unwrap();
            std::fs::write(dir.path().join(pid).join("comm"), comm).unwrap();
        }
        std::fs::create_dir(dir.path().join("self")).unwrap();
        assert_eq!(running_daemons(dir.path()), ["chronyd", "ptp4l"]);
        assert!(running_daemons(&dir.path().join("nope")).is_empty());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_host_answers() {
        let s = read().unwrap();
        assert!(s.maxerror >= 0.0, "{s:?}");
        assert!(s.esterror >= 0.0, "{s:?}");
        assert_ne!(s.source, Source::Unknown);
        assert_eq!(s.synchronized, s.source != Source::None);
    }
}
