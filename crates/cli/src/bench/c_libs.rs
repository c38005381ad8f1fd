//! Where the C benchmarks (`bench c-inject`, `bench c-observer`) find the
//! two liboml2 libraries: the flags both share.

use std::path::PathBuf;

use benchmarks::Libraries;
use clap::Args;

/// Where the two libraries are.
#[derive(Debug, Args)]
pub struct LibArgs {
    /// Directory holding our liboml2.so [default: the directory of this
    /// executable, where `cargo build --release -p client-ffi` puts it]
    #[arg(long, value_name = "DIR")]
    pub lib_dir: Option<PathBuf>,
    /// Our <oml2/omlc.h> include directory [default: crates/client-ffi/include
    /// of the source tree this executable was built from]
    #[arg(long, value_name = "DIR")]
    pub include: Option<PathBuf>,
    /// Installation prefix of the reference OML suite (include/oml2,
    /// lib/liboml2.so) [default: ~/.cache/oml-reference]
    #[arg(long, value_name = "DIR")]
    pub reference: Option<PathBuf>,
    /// Measure our library alone.
    #[arg(long)]
    pub no_reference: bool,
}

impl LibArgs {
    /// The benchmarks' view of these flags.
    pub fn libraries(&self) -> Libraries {
        Libraries {
            lib_dir: self.lib_dir.clone(),
            include: self.include.clone(),
            reference: self.reference.clone(),
            no_reference: self.no_reference,
        }
    }
}
