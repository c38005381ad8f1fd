//! Figures drawn from known points (no server): the SVG's lines are the
//! CSV's rows, point for point; the PNG has the asked size and the series'
//! colours where the points are; the PDF is well-formed; bad input is
//! refused with a message naming what to fix.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Parser;
use plot::data::{Point, Series};
use plot::render::{Layout, PALETTE};
use plot::{data, output, Format, PlotArgs, PlotData, PlotDef};

/// 2026-11-25T21:00:00Z in µs.
const T0: i64 = 1_795_640_400_000_000;

fn def() -> PlotDef {
    PlotDef::parse(
        r#"{"version":1,"title":"RTT (test)","domain":"lab1","stream":"ping_rtt",
            "fields":["rtt"],"y2":["loss"]}"#,
    )
    .unwrap()
}

/// node1 rtt: 12 points, a break, 6 points; node1 loss: 8 points on the
/// right axis; node2 rtt: one isolated point.
fn known() -> PlotData {
    let p = |i: i64, v: f64| Point {
        t_us: T0 + i * 2_500_000,
        v: Some(v),
    };
    let mut rtt: Vec<Point> = (0..12)
        .map(|i| p(i, 0.010 + 0.001 * (i % 5) as f64))
        .collect();
    rtt.push(Point {
        t_us: T0 + 11 * 2_500_000 + 1,
        v: None,
    });
    rtt.extend((20..26).map(|i| p(i, 0.02 - 0.0005 * i as f64)));
    let series = vec![
        Series {
            sender: "node1".into(),
            field: "rtt".into(),
            right: false,
            points: rtt,
        },
        Series {
            sender: "node1".into(),
            field: "loss".into(),
            right: true,
            points: (0..8).map(|i| p(i * 3, (i * 7 % 10) as f64)).collect(),
        },
        Series {
            sender: "node2".into(),
            field: "rtt".into(),
            right: false,
            points: vec![p(15, 0.012)],
        },
    ];
    let mut units = BTreeMap::new();
    units.insert("rtt".to_owned(), "s".to_owned());
    units.insert("loss".to_owned(), "%".to_owned());
    PlotData { series, units }
}

/// Loads the default font; false (a recorded skip, a failure under CI)
/// when fonts-dejavu-core is missing.
fn font() -> bool {
    if !std::path::Path::new(output::DEFAULT_FONT).exists() {
        testkit::skip("fonts-dejavu-core is not installed (apt install fonts-dejavu-core)");
        return false;
    }
    output::load_font(None).unwrap();
    true
}

/// Where a point should be drawn.
fn pixel(l: &Layout, t_us: i64, v: f64, right: bool) -> (f64, f64) {
    let x = (t_us - l.t0_us) as f64 / 1e6;
    let (y0, y1, div, cols, rows) = if right {
        let r = l.y2.unwrap();
        (r.0, r.1, l.divisors.1, l.plot_x2, l.plot_y2)
    } else {
        (l.y.0, l.y.1, l.divisors.0, l.plot_x, l.plot_y)
    };
    // As plotters maps: the exact position truncated towards `from`.
    let map = |f: f64, from: i32, to: i32| {
        let d = f * (to - from) as f64;
        from as f64
            + if to > from {
                (d + 1e-3).floor()
            } else {
                (d - 1e-3).ceil()
            }
    };
    let px = map((x - l.x.0) / (l.x.1 - l.x.0), cols.0, cols.1);
    let py = map((v / div - y0) / (y1 - y0), rows.1, rows.0);
    (px, py)
}

/// True if the SVG draws `text` (plotters writes it on a line of its own).
fn has_text(svg: &str, text: &str) -> bool {
    svg.contains(&format!(">\n{text}\n</text>"))
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = tag[start..].find('"')? + start;
    Some(&tag[start..end])
}

fn svg_color(c: &plotters::style::RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

#[test]
fn svg_lines_are_the_csv_rows_point_for_point() {
    if !font() {
        return;
    }
    let (def, data) = (def(), known());
    let (svg, layout) = output::render(&def, &data, Format::Svg, (900, 500)).unwrap();
    let svg = String::from_utf8(svg).unwrap();
    assert!(svg.contains("RTT (test)"), "title");
    assert_eq!(layout.labels.0, "rtt (ms)");
    assert_eq!(layout.labels.1.as_deref(), Some("loss (%)"));
    for t in [
        "rtt (ms)",
        "loss (%)",
        "time (UTC)",
        "node1 rtt (left)",
        "node2 rtt (left)",
    ] {
        assert!(has_text(&svg, t), "{t}");
    }
    assert!(layout
        .ticks
        .ticks
        .iter()
        .any(|(_, l)| l.starts_with("2026-11-25T21:")));

    // The CSV written for this figure, read back: the same points.
    let csv = data.to_csv();
    let back = data::from_csv(&csv, &def).unwrap();
    assert_eq!(back.series, data.series);
    let rows_with_values = csv.lines().skip(1).filter(|l| !l.ends_with(',')).count();

    let polylines: Vec<&str> = svg.split("<polyline").skip(1).collect();
    let circles: Vec<&str> = svg.split("<circle").skip(1).collect();
    let mut drawn = 0;
    for (i, s) in back.series.iter().enumerate() {
        let color = svg_color(&PALETTE[i]);
        let lines: Vec<Vec<(f64, f64)>> = polylines
            .iter()
            .filter(|t| attr(t, "stroke") == Some(color.as_str()))
            .map(|t| {
                attr(t, "points")
                    .unwrap()
                    .split_whitespace()
                    .map(|p| {
                        let (x, y) = p.split_once(',').unwrap();
                        (x.parse().unwrap(), y.parse().unwrap())
                    })
                    .collect()
            })
            .collect();
        let dots: Vec<(f64, f64)> = circles
            .iter()
            .filter(|t| attr(t, "fill") == Some(color.as_str()))
            .map(|t| {
                (
                    attr(t, "cx").unwrap().parse().unwrap(),
                    attr(t, "cy").unwrap().parse().unwrap(),
                )
            })
            .collect();
        let runs = s.runs();
        let (long, single): (Vec<_>, Vec<_>) = runs.iter().partition(|r| r.len() > 1);
        assert_eq!(lines.len(), long.len(), "{}: one line per run", s.field);
        assert_eq!(
            dots.len(),
            single.len(),
            "{}: one dot per lone point",
            s.field
        );
        for (line, run) in lines.iter().zip(&long) {
            assert_eq!(line.len(), run.len(), "{} {}", s.sender, s.field);
            for (&(px, py), &(t, v)) in line.iter().zip(run.iter()) {
                let (ex, ey) = pixel(&layout, t, v, s.right);
                assert_eq!((px, py), (ex, ey), "{} {}", s.sender, s.field);
            }
            drawn += line.len();
        }
        for (dot, run) in dots.iter().zip(&single) {
            let (ex, ey) = pixel(&layout, run[0].0, run[0].1, s.right);
            assert_eq!(*dot, (ex, ey));
            drawn += 1;
        }
    }
    assert_eq!(drawn, rows_with_values, "every CSV row is a drawn point");
    assert_eq!(drawn, 12 + 6 + 8 + 1);
}

#[test]
fn png_has_the_size_and_the_series_colours() {
    if !font() {
        return;
    }
    let (def, data) = (def(), known());
    let (png_bytes, layout) = output::render(&def, &data, Format::Png, (640, 400)).unwrap();
    assert_eq!(&png_bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(&png_bytes[12..16], b"IHDR");
    let w = u32::from_be_bytes(png_bytes[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(png_bytes[20..24].try_into().unwrap());
    assert_eq!((w, h), (640, 400));
    let mut reader = png::Decoder::new(std::io::Cursor::new(&png_bytes))
        .read_info()
        .unwrap();
    let mut rgb = vec![0; reader.output_buffer_size().unwrap()];
    reader.next_frame(&mut rgb).unwrap();
    let at = |x: i64, y: i64| {
        let i = (y as usize * 640 + x as usize) * 3;
        (rgb[i], rgb[i + 1], rgb[i + 2])
    };
    for (i, s) in data.series.iter().enumerate() {
        let c = PALETTE[i];
        for (t, v) in s.runs().iter().flatten() {
            let (px, py) = pixel(&layout, *t, *v, s.right);
            let near = (-2..=2).any(|dx| {
                (-2..=2).any(|dy| {
                    let p = at(px as i64 + dx, py as i64 + dy);
                    let d = |a: u8, b: u8| (a as i32 - b as i32).abs();
                    d(p.0, c.0) + d(p.1, c.1) + d(p.2, c.2) < 40
                })
            });
            assert!(near, "{} {}: no {c:?} near ({px},{py})", s.sender, s.field);
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The PDF's object offsets, xref and stream length, checked by hand
/// (on bytes: the file has a binary comment line); returns the content.
fn check_pdf_structure(pdf: &[u8]) -> String {
    assert!(pdf.starts_with(b"%PDF-1.4\n"));
    assert!(pdf.ends_with(b"%%EOF\n"));
    let sx = pdf.windows(10).rposition(|w| w == b"startxref\n").unwrap();
    let tail = std::str::from_utf8(&pdf[sx + 10..]).unwrap();
    let xref_at: usize = tail.lines().next().unwrap().parse().unwrap();
    let xref = std::str::from_utf8(&pdf[xref_at..]).unwrap();
    assert!(
        xref.starts_with("xref\n0 7\n0000000000 65535 f \n"),
        "{xref}"
    );
    let entries: Vec<&str> = xref.lines().skip(3).take(6).collect();
    for (n, e) in entries.iter().enumerate() {
        let off: usize = e[..10].parse().unwrap();
        assert!(e.trim_end().ends_with(" n"), "{e}");
        let head = format!("{} 0 obj\n", n + 1);
        assert!(
            pdf[off..].starts_with(head.as_bytes()),
            "object {} at {off}",
            n + 1
        );
    }
    let ls = find(pdf, b"/Length ").unwrap() + 8;
    let len: usize = std::str::from_utf8(&pdf[ls..ls + 12])
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let body = find(pdf, b">>\nstream\n").unwrap() + 10;
    assert!(pdf[body + len..].starts_with(b"\nendstream"));
    String::from_utf8_lossy(&pdf[body..body + len]).into_owned()
}

#[test]
fn pdf_is_well_formed_and_draws_each_run() {
    if !font() {
        return;
    }
    let (def, data) = (def(), known());
    let (pdf, _) = output::render(&def, &data, Format::Pdf, (1000, 600)).unwrap();
    let content = check_pdf_structure(&pdf);
    assert!(pdf.windows(12).any(|w| w == b"/MediaBox [0"));
    // Each line of a series: its colour, then one `m` and a `l` per further point.
    for (i, s) in data.series.iter().enumerate() {
        let c = PALETTE[i];
        let f = |v: u8| {
            let s = format!("{:.3}", v as f64 / 255.0);
            let s = s.trim_end_matches('0').trim_end_matches('.').to_owned();
            if s.is_empty() {
                "0".to_owned()
            } else {
                s
            }
        };
        let op = format!("{} {} {} RG", f(c.0), f(c.1), f(c.2));
        let mut segments = 0;
        for block in content.split(&op).skip(1) {
            let block = block.split(" RG ").next().unwrap();
            segments += block.lines().filter(|l| l.ends_with(" l")).count();
        }
        let want: usize = s
            .runs()
            .iter()
            .filter(|r| r.len() > 1)
            .map(|r| r.len() - 1)
            .sum();
        assert_eq!(segments, want, "{} {}", s.sender, s.field);
    }
    assert!(content.contains("(RTT \\(test\\)) Tj"));

    // poppler, when installed, reads it without complaint.
    if !testkit::have_tool("pdfinfo", &["-v"], "apt install poppler-utils") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fig.pdf");
    std::fs::write(&path, &pdf).unwrap();
    let info = std::process::Command::new("pdfinfo")
        .arg(&path)
        .output()
        .unwrap();
    assert!(info.status.success());
    assert_eq!(
        String::from_utf8_lossy(&info.stderr),
        "",
        "pdfinfo complained"
    );
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(info.contains("Page size:       750 x 450 pts"), "{info}");
    assert!(info.contains("Title:           RTT (test)"), "{info}");
    let text = std::process::Command::new("pdftotext")
        .arg(&path)
        .arg("-")
        .output()
        .unwrap();
    assert!(text.status.success() && text.stderr.is_empty());
    let text = String::from_utf8_lossy(&text.stdout);
    for want in [
        "RTT (test)",
        "rtt (ms)",
        "loss (%)",
        "node1 loss (right)",
        "2026-11-25T21:",
    ] {
        assert!(
            text.contains(want),
            "{want:?} not in the PDF's text:\n{text}"
        );
    }
}

fn args(extra: &[&str]) -> PlotArgs {
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        plot: PlotArgs,
    }
    let argv = std::iter::once("plot").chain(extra.iter().copied());
    Cli::try_parse_from(argv).unwrap().plot
}

#[test]
fn the_command_renders_a_csv_again_identically() {
    if !font() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    std::fs::write(p("def.json"), r#"{"version":1,"domain":"lab1","stream":"ping_rtt","fields":["rtt"],"y2":["loss"],"timeaxis":"relative"}"#).unwrap();
    std::fs::write(p("in.csv"), known().to_csv()).unwrap();
    let a = args(&[
        &p("def.json"),
        "--csv-in",
        &p("in.csv"),
        "-o",
        &p("a.svg"),
        "--csv",
        &p("a.csv"),
        "--unit",
        "rtt=s",
    ]);
    assert!(plot::run(&a).unwrap());
    let b = args(&[
        &p("def.json"),
        "--csv-in",
        &p("a.csv"),
        "-o",
        &p("b.svg"),
        "--unit",
        "rtt=s",
    ]);
    assert!(plot::run(&b).unwrap());
    let (sa, sb) = (
        std::fs::read(p("a.svg")).unwrap(),
        std::fs::read(p("b.svg")).unwrap(),
    );
    assert_eq!(sa, sb, "a figure drawn from its own CSV is the same figure");
    assert_eq!(
        std::fs::read(p("a.csv")).unwrap(),
        std::fs::read(p("in.csv")).unwrap()
    );
    assert!(
        !PathBuf::from(p("b.csv")).exists(),
        "--csv-in writes no CSV unless asked"
    );
    let svg = String::from_utf8(sa).unwrap();
    assert!(has_text(&svg, "time since the first point (s)") && has_text(&svg, "rtt (ms)"));
}

#[test]
fn bad_input_is_refused_with_what_to_do() {
    if !font() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    std::fs::write(p("in.csv"), known().to_csv()).unwrap();
    let run = |def: &str, extra: &[&str]| {
        std::fs::write(p("def.json"), def).unwrap();
        let mut argv = vec![p("def.json"), "--csv-in".into(), p("in.csv")];
        argv.extend(extra.iter().map(|s| s.to_string()));
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        format!("{:#}", plot::run(&args(&argv)).unwrap_err())
    };
    let ok = r#"{"version":1,"domain":"lab1","stream":"ping_rtt","fields":["rtt"],"y2":["loss"]}"#;
    let out = p("f.png");
    let e = run(
        r#"{"version":1,"domain":"lab1","stream":"s","fields":["rtt"],"color":"red"}"#,
        &["-o", &out],
    );
    assert!(e.contains("unknown key \"color\""), "{e}");
    let e = run(
        r#"{"version":1,"domain":"lab1","stream":"s","fields":"rtt"}"#,
        &["-o", &out],
    );
    assert!(e.contains("\"fields\"") && e.contains("array"), "{e}");
    let e = run(ok, &["-o", &p("f.gif")]);
    assert!(e.contains(".png, .svg or .pdf"), "{e}");
    let e = run(ok, &["-o", &out, "--width", "10"]);
    assert!(e.contains("--width 10"), "{e}");
    let e = run(ok, &["-o", &out, "--unit", "ttl=s"]);
    assert!(e.contains("\"ttl\" is not in the definition"), "{e}");
    let e = run(ok, &["-o", &out, "--unit", "rtt"]);
    assert!(e.contains("FIELD=UNIT"), "{e}");
    // The CSV holds loss rows, which this definition does not plot.
    let e = run(
        r#"{"version":1,"domain":"lab1","stream":"ping_rtt","fields":["rtt"]}"#,
        &["-o", &out],
    );
    assert!(e.contains("\"loss\"") && e.contains("line"), "{e}");
    let e = run(
        r#"{"version":1,"domain":"lab1","stream":"ping_rtt","fields":["rtt"],"y2":["loss"],"senders":["node9"]}"#,
        &["-o", &out],
    );
    assert!(e.contains("nothing to plot"), "{e}");
    let e = run(ok, &["-o", &out, "--csv", &p("in.csv")]);
    assert!(e.contains("also --csv-in"), "{e}");
    let e = run(ok, &["-o", &out, "--font", &p("missing.ttf")]);
    assert!(e.contains("fonts-dejavu-core"), "{e}");
    assert!(
        !PathBuf::from(&out).exists(),
        "nothing written after an error"
    );
    // A font given by --font is used for the rest of the process; go back.
    output::load_font(None).unwrap();
}

#[test]
fn flags_are_consistent() {
    use clap::CommandFactory;
    #[derive(Debug, Parser)]
    #[command(name = "plot", long_about = plot::LONG_ABOUT)]
    struct Cli {
        #[command(flatten)]
        plot: PlotArgs,
    }
    Cli::command().debug_assert();
    let e = Cli::try_parse_from(["plot", "d.json", "-o", "f.png"]).unwrap_err();
    assert!(e.to_string().contains("--api"), "{e}");
    let e = Cli::try_parse_from([
        "plot", "d.json", "-o", "f.png", "--api", "x", "--csv-in", "y",
    ])
    .unwrap_err();
    assert!(e.to_string().contains("cannot be used with"), "{e}");
}

/// The shape `streamgauge` wires it in: a subcommand variant.
#[test]
fn wires_in_as_a_subcommand() {
    use clap::CommandFactory;
    #[derive(Debug, clap::Subcommand)]
    enum Command {
        /// Render a plot definition to PNG, SVG or PDF, with the CSV of the plotted points.
        #[command(long_about = plot::LONG_ABOUT)]
        Plot(PlotArgs),
    }
    #[derive(Debug, Parser)]
    #[command(name = "streamgauge")]
    struct Top {
        #[command(subcommand)]
        command: Command,
    }
    Top::command().debug_assert();
    let top = Top::try_parse_from([
        "streamgauge",
        "plot",
        "d.json",
        "--csv-in",
        "x.csv",
        "-o",
        "f.svg",
    ])
    .unwrap();
    let Command::Plot(args) = top.command;
    assert_eq!(args.csv_in.as_deref(), Some(std::path::Path::new("x.csv")));
    assert_eq!((args.width, args.height), (1000, 600));
    let help = Top::command()
        .find_subcommand_mut("plot")
        .unwrap()
        .render_long_help()
        .to_string();
    assert!(
        help.contains("sender,time,field,value") && help.contains("--token-file"),
        "{help}"
    );
}
