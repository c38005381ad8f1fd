//! The three outputs: PNG (plotters' bitmap, encoded by the png crate),
//! SVG (plotters' SVG backend) and PDF ([`crate::pdf`]), and the font
//! that lays out their text.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use plotters::prelude::{BitMapBackend, SVGBackend};
use plotters::style::{register_font, FontStyle};

use crate::data::PlotData;
use crate::definition::PlotDef;
use crate::pdf::PdfBackend;
use crate::render::{draw, Layout, RenderError, FONT};

/// Where the text font is found when `--font` is not given (Debian and
/// Ubuntu package fonts-dejavu-core).
pub const DEFAULT_FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Raster image (PNG).
    Png,
    /// Scalable vector graphics.
    Svg,
    /// One-page vector PDF.
    Pdf,
}

impl Format {
    /// The format of a file name's extension.
    pub fn of_path(path: &Path) -> Option<Format> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "png" => Some(Format::Png),
            "svg" => Some(Format::Svg),
            "pdf" => Some(Format::Pdf),
            _ => None,
        }
    }
}

/// Why the figure could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The font file is missing or unreadable.
    #[error("the figure's text needs a TrueType font: {path}: {reason}; install the Debian package fonts-dejavu-core (apt install fonts-dejavu-core), or give --font FILE.ttf")]
    Font {
        /// The file tried.
        path: PathBuf,
        /// Why it failed.
        reason: String,
    },
    /// Drawing failed.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// PNG encoding failed.
    #[error("encoding the PNG: {0}")]
    Png(#[from] png::EncodingError),
}

/// The font file registered for plotters (its registry is global to the
/// process): registering again is needed only for another file.
static FONT_LOADED: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Reads `path` (or [`DEFAULT_FONT`]) and registers it as the family every
/// text is drawn in.
pub fn load_font(path: Option<&Path>) -> Result<(), OutputError> {
    let path = path.unwrap_or(Path::new(DEFAULT_FONT)).to_owned();
    let mut loaded = FONT_LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if loaded.as_ref() == Some(&path) {
        return Ok(());
    }
    let failed = |reason: String| OutputError::Font {
        path: path.clone(),
        reason,
    };
    let bytes = std::fs::read(&path).map_err(|e| failed(e.to_string()))?;
    // plotters keeps fonts for the life of the process.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    register_font(FONT, FontStyle::Normal, bytes)
        .map_err(|_| failed("not a TrueType or OpenType font".to_owned()))?;
    *loaded = Some(path);
    Ok(())
}

/// The figure's bytes in `format`, `size` pixels, and where the data went.
pub fn render(
    def: &PlotDef,
    data: &PlotData,
    format: Format,
    size: (u32, u32),
) -> Result<(Vec<u8>, Layout), OutputError> {
    match format {
        Format::Svg => {
            let mut svg = String::new();
            let layout = draw(SVGBackend::with_string(&mut svg, size), def, data)?;
            Ok((svg.into_bytes(), layout))
        }
        Format::Pdf => {
            let mut pdf = Vec::new();
            let layout = draw(
                PdfBackend::new(&mut pdf, size, def.title.clone()),
                def,
                data,
            )?;
            Ok((pdf, layout))
        }
        Format::Png => {
            let mut rgb = vec![0u8; size.0 as usize * size.1 as usize * 3];
            let layout = draw(BitMapBackend::with_buffer(&mut rgb, size), def, data)?;
            let mut png_bytes = Vec::new();
            let mut encoder = png::Encoder::new(&mut png_bytes, size.0, size.1);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            let mut writer = encoder.write_header()?;
            writer.write_image_data(&rgb)?;
            writer.finish()?;
            Ok((png_bytes, layout))
        }
    }
}
