//! The reference proxy's control: command lines on standard input.

use std::io::{BufRead, Write};

use crate::{Command, ProxyHandle};

/// Reads commands from standard input on a thread of its own (a blocking
/// read), applying each and echoing `Received command: X` on standard
/// output as the reference does. End of input just ends the thread.
pub fn spawn(handle: ProxyHandle) {
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { return };
            if line.trim().is_empty() {
                continue;
            }
            match Command::parse(&line) {
                Some(cmd) => {
                    handle.command(cmd);
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "Received command: {}", cmd.name());
                    let _ = out.flush();
                }
                None => eprintln!(
                    "streamgauge proxy: unknown command {:?}: use OMLPROXY-PAUSE, OMLPROXY-RESUME or OMLPROXY-STOP",
                    line.trim()
                ),
            }
        }
    });
}
