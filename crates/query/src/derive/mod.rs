//! Derived answers: per-second rates of counters (`derive=rate`) and the
//! gaps of each sender's series (`gaps=K`), computed on the server over
//! the full-resolution rows of the request, or for gaps with `points=`
//! over the rows M4 kept (see `docs/query-api.md`, "Rates and gaps").
//!
//! Cumulative counters plotted raw say little: the slope is what matters,
//! and a restarted sender draws a false cliff. [`Rates`] turns each
//! sender's counter into its rate, treating a decrease as a restart from
//! zero (as Prometheus' `rate()` does); [`M4`] downsamples the rates
//! when `points=` is asked for (the tiles summarise stored values, not
//! rates); [`GapFinder`] finds where a sender fell silent, so a chart
//! breaks its line there instead of drawing a straight segment over
//! missing data.

mod gaps;
mod m4;
mod rate;
mod write;

pub use gaps::{Gap, GapFinder};
pub use m4::M4;
pub use rate::Rates;
pub(crate) use write::{gaps_of, series, with_series, write};
