//! Our components on the veth path during a run: the in-line agent
//! (source and sink) and a capture session, attached before the senders
//! start and stopped after the receiver drained, so the run's whole window
//! has them in place.

use std::path::Path;

use anyhow::Result;

use crate::capture_session;
use crate::plan::Settings;
use crate::veth::Pair;

/// One line of tools.csv: component, metric, value.
pub type ToolCount = (&'static str, &'static str, f64);

/// The components attached for one run.
pub struct Attached {
    #[cfg(feature = "inline")]
    inline: Option<crate::inline_agent::Attached>,
    capture: Option<capture_session::Running>,
}

/// Attaches what `s` asks for (nothing on loopback: the plan refused
/// components without the veth network). `report` is the collection URI
/// of the in-line sink's records; `dir` a directory for the capture files.
pub fn attach(s: &Settings, pair: Option<&Pair>, report: &str, dir: &Path) -> Result<Attached> {
    let Some(pair) = pair else {
        return Ok(Attached {
            #[cfg(feature = "inline")]
            inline: None,
            capture: None,
        });
    };
    #[cfg(feature = "inline")]
    let inline = match s.inline {
        crate::plan::Inline::Off => None,
        crate::plan::Inline::OneIn(n) => {
            Some(crate::inline_agent::start(pair, n, s.inline_mode, report)?)
        }
    };
    #[cfg(not(feature = "inline"))]
    let _ = report;
    let capture = capture_session::start(pair, s.capture, dir)?;
    Ok(Attached {
        #[cfg(feature = "inline")]
        inline,
        capture,
    })
}

impl Attached {
    /// Stops everything and returns what the components counted.
    pub fn stop(self) -> Result<Vec<ToolCount>> {
        let mut out = Vec::new();
        // Both are stopped before either error is returned.
        let capture = self.capture.map(capture_session::Running::stop);
        #[cfg(feature = "inline")]
        if let Some(a) = self.inline {
            out.extend(a.stop()?.into_iter().map(|(m, v)| ("inline", m, v)));
        }
        if let Some(c) = capture {
            out.extend(c?.into_iter().map(|(m, v)| ("capture", m, v)));
        }
        Ok(out)
    }
}
