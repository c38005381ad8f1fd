//! Pausing and resuming forwarding: the reference's commands
//! (`OMLPROXY-PAUSE`, `OMLPROXY-RESUME` on standard input or the control
//! port) and the HTTP endpoint ([`http`]).

pub mod http;

use tokio::sync::watch;

/// The forwarding switch shared by every forwarder.
#[derive(Debug)]
pub struct Control {
    /// True while forwarding is paused.
    paused: watch::Sender<bool>,
}

/// A command the reference proxy understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `OMLPROXY-PAUSE` or `PAUSE`: close upstream connections, keep journaling.
    Pause,
    /// `OMLPROXY-RESUME` or `RESUME`: forward again.
    Resume,
    /// `OMLPROXY-STOP` or `STOP`: the reference only changes its state;
    /// streamgauge pauses (to stop the proxy, send SIGTERM).
    Stop,
}

impl Command {
    /// Parses one command line. Unlike the reference, a trailing CR and
    /// surrounding blanks are ignored, and lower case is accepted.
    pub fn parse(line: &str) -> Option<Command> {
        let word = line.trim().to_ascii_uppercase();
        match word.strip_prefix("OMLPROXY-").unwrap_or(&word) {
            "PAUSE" => Some(Command::Pause),
            "RESUME" => Some(Command::Resume),
            "STOP" => Some(Command::Stop),
            _ => None,
        }
    }

    /// The reference's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Command::Pause => "OMLPROXY-PAUSE",
            Command::Resume => "OMLPROXY-RESUME",
            Command::Stop => "OMLPROXY-STOP",
        }
    }
}

impl Control {
    /// A switch, paused or not.
    pub fn new(paused: bool) -> Control {
        Control {
            paused: watch::Sender::new(paused),
        }
    }

    /// Applies a command.
    pub fn apply(&self, cmd: Command) {
        let pause = cmd != Command::Resume;
        let was = self.paused.send_replace(pause);
        if was != pause {
            tracing::info!(
                command = cmd.name(),
                "forwarding {}",
                if pause { "paused" } else { "resumed" }
            );
        }
    }

    /// Whether forwarding is paused.
    pub fn is_paused(&self) -> bool {
        *self.paused.borrow()
    }

    /// A receiver that sees every change.
    pub fn watch(&self) -> watch::Receiver<bool> {
        self.paused.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands() {
        assert_eq!(Command::parse("OMLPROXY-PAUSE\r\n"), Some(Command::Pause));
        assert_eq!(Command::parse("resume"), Some(Command::Resume));
        assert_eq!(Command::parse("STOP"), Some(Command::Stop));
        assert_eq!(Command::parse("GO"), None);
    }
}
