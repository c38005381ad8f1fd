//! Ctrl-C (SIGINT), SIGTERM and SIGHUP during a plan: the run in progress
//! stops early and is not recorded (a resume runs it again), the plan
//! returns an error, and the guards on the way out remove the namespaces,
//! detach the in-line programs and delete the temporary files. A second
//! signal exits at once (namespaces left behind are removed by the next
//! plan, see `veth`).
//!
//! The signals are blocked in the calling thread before any other thread
//! starts (threads inherit the mask) and taken by one thread waiting for
//! them with sigwait: no handler, no unsafe code.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow, Signal};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether a signal asked the plan to stop.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Restores the calling thread's signal mask on drop.
pub struct Catch {
    old: SigSet,
}

fn signals() -> SigSet {
    let mut set = SigSet::empty();
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        set.add(s);
    }
    set
}

/// Starts catching the signals; call before starting any other thread.
pub fn catch() -> Result<Catch> {
    let set = signals();
    let mut old = SigSet::empty();
    pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), Some(&mut old))
        .context("blocking SIGINT/SIGTERM/SIGHUP")?;
    std::thread::Builder::new()
        .name("sg-observe-signal".into())
        .spawn(move || {
            while let Ok(sig) = set.wait() {
                if INTERRUPTED.swap(true, Ordering::Relaxed) {
                    eprintln!(
                        "observe: {} again: exiting without cleaning up",
                        sig.as_str()
                    );
                    std::process::exit(130);
                }
                eprintln!(
                    "observe: {}: stopping (cleaning up; again to exit at once)",
                    sig.as_str()
                );
            }
        })
        .context("starting the signal thread")?;
    Ok(Catch { old })
}

impl Drop for Catch {
    fn drop(&mut self) {
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&self.old), None);
    }
}
