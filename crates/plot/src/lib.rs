//! `streamgauge plot`: a plot definition (the web UI's JSON) rendered to
//! PNG, SVG or PDF from the query API or from a CSV, with the CSV of
//! exactly the plotted points beside the figure, so that a figure in a
//! paper can be drawn again from its data (docs/plot.md).
//!
//! The steps are separate so each can be used and tested alone:
//! [`PlotDef::parse`] checks a definition, [`fetch::fetch`] reads the
//! points from a server, [`data::from_csv`] from a CSV,
//! [`output::render`] draws them, [`PlotData::to_csv`] writes the CSV.
//!
//! ```no_run
//! use plot::{data, output, PlotDef};
//! let def = PlotDef::parse(&std::fs::read_to_string("rtt.json")?)?;
//! let points = data::from_csv(&std::fs::read_to_string("rtt.csv")?, &def)?;
//! output::load_font(None)?;
//! let (svg, _layout) = output::render(&def, &points, output::Format::Svg, (1000, 600))?;
//! std::fs::write("rtt.svg", svg)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod data;
pub mod definition;
pub mod fetch;
pub mod output;
pub mod pdf;
pub mod render;
pub mod timeaxis;
pub mod units;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

pub use data::PlotData;
pub use definition::PlotDef;
pub use output::Format;

/// The long help of `streamgauge plot`.
pub const LONG_ABOUT: &str = include_str!("../help/plot.txt");

/// Smallest and largest figure side, in pixels.
pub const SIZE_RANGE: (u32, u32) = (200, 10_000);

/// Arguments of `streamgauge plot`.
#[derive(Debug, Clone, clap::Args)]
pub struct PlotArgs {
    /// The plot definition (JSON, as the web UI saves it; see docs/plot.md), or - for standard input.
    #[arg(value_name = "DEFINITION")]
    pub definition: PathBuf,
    /// Base URL of the query API to read the points from (http://HOST:PORT/api/v1, as served by `streamgauge server --http`).
    #[arg(
        long,
        value_name = "URL",
        env = "STREAMGAUGE_API",
        required_unless_present = "csv_in",
        conflicts_with = "csv_in"
    )]
    pub api: Option<String>,
    /// Read the points from a CSV that streamgauge plot wrote before (sender,time,field,value) instead of a server.
    #[arg(long, value_name = "FILE")]
    pub csv_in: Option<PathBuf>,
    /// Bearer token for the query API (a token with a read grant for the domain).
    #[arg(
        long,
        value_name = "TOKEN",
        env = "STREAMGAUGE_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// Read the bearer token from this token file (its first line with a plain token).
    #[arg(
        long,
        value_name = "FILE",
        env = "STREAMGAUGE_TOKEN_FILE",
        conflicts_with = "token"
    )]
    pub token_file: Option<PathBuf>,
    /// Verify an https query API against the CA certificates in this PEM file.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// Pin the https query API's certificate by its SHA-256 fingerprint (AB:CD:… or hex).
    #[arg(long, value_name = "SHA256", conflicts_with = "ca_file")]
    pub fingerprint: Option<String>,
    /// The figure to write; its extension (.png, .svg, .pdf) chooses the format unless --format is given.
    #[arg(short, long, value_name = "FILE")]
    pub out: PathBuf,
    /// Output format, when the extension of --out does not say it.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<Format>,
    /// Figure width in pixels (PDF and SVG: 1 pixel = 0.75 pt, so 1000 is 750 pt, about 26 cm).
    #[arg(long, value_name = "PIXELS", default_value_t = 1000)]
    pub width: u32,
    /// Figure height in pixels; text sizes follow the height.
    #[arg(long, value_name = "PIXELS", default_value_t = 600)]
    pub height: u32,
    /// Where to write the CSV of the plotted points [default: --out with the extension .csv; with --csv-in, none unless given].
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Unit of a field, as FIELD=UNIT (repeatable): for a CSV, which carries no units, or to replace the unit a client declared.
    #[arg(long = "unit", value_name = "FIELD=UNIT")]
    pub units: Vec<String>,
    /// TrueType or OpenType font for the figure's text layout [default: /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf].
    #[arg(long, value_name = "FILE")]
    pub font: Option<PathBuf>,
}

fn read_definition(path: &Path) -> Result<PlotDef> {
    let text = if path == Path::new("-") {
        std::io::read_to_string(std::io::stdin())
            .context("reading the definition from standard input")?
    } else {
        std::fs::read_to_string(path)
            .with_context(|| format!("reading the plot definition {}", path.display()))?
    };
    PlotDef::parse(&text).with_context(|| format!("plot definition {}", path.display()))
}

/// The query API client for `--api`, with its token and certificate check.
fn client(args: &PlotArgs, api: &str) -> Result<httpkit::client::Client> {
    let token = match &args.token_file {
        Some(path) => Some(
            httpkit::token_init::own_token(path)
                .with_context(|| format!("--token-file {}", path.display()))?
                .with_context(|| {
                    format!(
                        "--token-file {}: no line with a plain token",
                        path.display()
                    )
                })?,
        ),
        None => args.token.clone(),
    };
    let tls = if let Some(fp) = &args.fingerprint {
        let pin = httpkit::tls::Fingerprint::parse(fp).with_context(|| {
            format!("--fingerprint {fp:?}: want 64 hex digits, with or without ':'")
        })?;
        Some(httpkit::tls::ClientTls::pinned(pin))
    } else if let Some(ca) = &args.ca_file {
        Some(
            httpkit::tls::ClientTls::ca_file(ca)
                .with_context(|| format!("--ca-file {}", ca.display()))?,
        )
    } else {
        if api.starts_with("https://") {
            bail!("{api} is HTTPS: give --ca-file (the CA that issued its certificate) or --fingerprint (the server's certificate's SHA-256)");
        }
        None
    };
    Ok(httpkit::client::Client::new(
        api,
        "query API",
        "is `streamgauge server --http` running there, and is --api its base URL (http://HOST:PORT/api/v1)?",
    )
    .with_tls(tls)
    .with_token(token))
}

/// `FIELD=UNIT` pairs of `--unit`.
fn parse_units(units: &[String]) -> Result<Vec<(String, String)>> {
    units
        .iter()
        .map(|u| match u.split_once('=') {
            Some((f, unit)) if !f.trim().is_empty() => {
                Ok((f.trim().to_owned(), unit.trim().to_owned()))
            }
            _ => bail!("--unit {u:?}: write FIELD=UNIT (rtt=ms)"),
        })
        .collect()
}

/// The figure's format: --format, or the extension of --out.
fn format_of(args: &PlotArgs) -> Result<Format> {
    match (args.format, Format::of_path(&args.out)) {
        (Some(f), _) | (None, Some(f)) => Ok(f),
        (None, None) => bail!(
            "--out {}: the extension does not name a format: use .png, .svg or .pdf, or give --format",
            args.out.display()
        ),
    }
}

/// Runs `streamgauge plot`: Ok(true) once the figure and its CSV are written.
pub fn run(args: &PlotArgs) -> Result<bool> {
    // Before anything starts a thread (see the function).
    timeaxis::remember_local_offset();
    let format = format_of(args)?;
    for (name, v) in [("--width", args.width), ("--height", args.height)] {
        if !(SIZE_RANGE.0..=SIZE_RANGE.1).contains(&v) {
            bail!(
                "{name} {v}: give {} to {} pixels",
                SIZE_RANGE.0,
                SIZE_RANGE.1
            );
        }
    }
    let units = parse_units(&args.units)?;
    let def = read_definition(&args.definition)?;
    if let Some((f, _)) = units
        .iter()
        .find(|(f, _)| !def.all_fields().any(|(d, _)| d == f))
    {
        bail!("--unit {f}=…: {f:?} is not in the definition's \"fields\" or \"y2\"");
    }
    let csv_out = match (&args.csv, &args.csv_in) {
        (Some(c), Some(i)) if c == i => {
            bail!(
                "--csv {} is also --csv-in: write the CSV elsewhere, or leave --csv out",
                c.display()
            )
        }
        (Some(c), _) => Some(c.clone()),
        (None, Some(_)) => None,
        (None, None) => Some(args.out.with_extension("csv")),
    };
    output::load_font(args.font.as_deref())?;

    let mut data = match (&args.csv_in, &args.api) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading --csv-in {}", path.display()))?;
            data::from_csv(&text, &def).with_context(|| format!("--csv-in {}", path.display()))?
        }
        (None, Some(api)) => fetch::fetch(&client(args, api)?, &def)?,
        (None, None) => bail!(
            "give --api URL (a query API) or --csv-in FILE (a CSV written by streamgauge plot)"
        ),
    };
    data.units.extend(units);

    let (figure, _layout) = output::render(&def, &data, format, (args.width, args.height))?;
    std::fs::write(&args.out, figure).with_context(|| format!("writing {}", args.out.display()))?;
    let points: usize = data
        .series
        .iter()
        .map(|s| s.points.iter().filter(|p| p.v.is_some()).count())
        .sum();
    let mut wrote = format!(
        "streamgauge plot: wrote {} ({} series, {points} points)",
        args.out.display(),
        data.series.len()
    );
    if let Some(csv) = &csv_out {
        std::fs::write(csv, data.to_csv())
            .with_context(|| format!("writing the CSV {}", csv.display()))?;
        wrote.push_str(&format!(" and {}", csv.display()));
    }
    eprintln!("{wrote}");
    Ok(true)
}
