//! Figures from a real query API served in-process over a SQLite
//! experiment written by the `store` crate: units from the clients'
//! metadata, lines broken at the gaps the server reports, rates and
//! downsampling computed by the server, bearer tokens, clear errors.

use std::sync::Arc;

use clap::Parser;
use omsp::{Schema, Value};
use plot::{fetch, output, Format, PlotArgs, PlotDef};
use query::{router, Backend, QueryState};
use store::{Row, SqliteOptions, SqliteStore};

/// Experiment start (Unix seconds): 2026-11-22T01:29:36Z.
const START: i64 = 1_795_310_976;
/// node-a is silent for these row numbers (50 s at one row per second).
const SILENT: std::ops::Range<i64> = 100..150;

/// `ping_rtt` (`rtt:double loss:double bytes:uint64 dest:string`): node-a
/// one row a second with a silence, node-b one row a second; `rtt` is
/// declared in ms and `bytes` in B.
fn experiment(dir: &std::path::Path) -> SqliteStore {
    let mut db = SqliteStore::open(dir, "lab1", SqliteOptions::default()).unwrap();
    db.ensure_start_time(START).unwrap();
    let a = db.sender_id("node-a").unwrap();
    let b = db.sender_id("node-b").unwrap();
    let meta = db.register_schema(&omsp::metadata::schema0()).unwrap();
    for (subject, unit) in [(".ping_rtt.rtt", "ms"), (".ping_rtt.bytes", "B")] {
        db.insert(&Row {
            table: meta,
            sender: a,
            seq: 1,
            ts_client: 0.0,
            ts_server: 0.0,
            values: [subject, "unit", unit]
                .map(|s| Value::String(s.into()))
                .to_vec(),
        })
        .unwrap();
    }
    let t = db
        .register_schema(
            &Schema::parse("1 ping_rtt rtt:double loss:double bytes:uint64 dest:string").unwrap(),
        )
        .unwrap();
    for i in 0..200i64 {
        for (s, offset) in [(a, 1.0), (b, 1.5)] {
            if s == a && SILENT.contains(&i) {
                continue;
            }
            let rtt = if s == a {
                10.0 + (i % 7) as f64
            } else {
                20.0 + (i % 5) as f64
            };
            db.insert(&Row {
                table: t,
                sender: s,
                seq: i,
                ts_client: offset + i as f64,
                ts_server: offset + i as f64,
                values: vec![
                    Value::Double(rtt),
                    Value::Double((i % 3) as f64),
                    Value::UInt64(i as u64 * 1000),
                    Value::String("10.0.0.1".into()),
                ],
            })
            .unwrap();
        }
    }
    db.commit().unwrap();
    db
}

/// The query API on loopback, as `streamgauge server --http` serves it.
struct Api {
    /// `http://127.0.0.1:PORT/api/v1`.
    base: String,
    /// Keeps the server running.
    _rt: tokio::runtime::Runtime,
}

fn serve(dir: &std::path::Path, config: httpkit::HttpConfig) -> Api {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let base = format!("http://{}/api/v1", listener.local_addr().unwrap());
    let state = QueryState::new(Backend::Sqlite {
        dir: dir.to_owned(),
    });
    rt.spawn(httpkit::serve(
        listener,
        config.apply(router(state)),
        std::future::pending(),
    ));
    Api { base, _rt: rt }
}

fn client(api: &Api) -> httpkit::client::Client {
    httpkit::client::Client::new(&api.base, "query API", "")
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

fn def(json: &str) -> PlotDef {
    PlotDef::parse(json).unwrap()
}

#[test]
fn points_units_and_gaps_come_from_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let _db = experiment(dir.path());
    let api = serve(dir.path(), httpkit::HttpConfig::default());
    let d = def(
        r#"{"version":1,"domain":"lab1","stream":"ping_rtt","fields":["rtt"],"y2":["loss"],
                    "senders":["node-b","node-a"]}"#,
    );
    let data = fetch::fetch(&client(&api), &d).unwrap();
    let names: Vec<(&str, &str, bool)> = data
        .series
        .iter()
        .map(|s| (s.sender.as_str(), s.field.as_str(), s.right))
        .collect();
    assert_eq!(
        names,
        [
            ("node-b", "rtt", false),
            ("node-b", "loss", true),
            ("node-a", "rtt", false),
            ("node-a", "loss", true)
        ],
        "the definition's sender order, fields then y2"
    );
    assert_eq!(data.units.get("rtt").map(String::as_str), Some("ms"));
    assert!(!data.units.contains_key("loss"));
    // node-a: every row, and one break where the server saw the silence.
    let a_rtt = &data.series[2];
    let runs = a_rtt.runs();
    assert_eq!(runs.iter().map(Vec::len).collect::<Vec<_>>(), [100, 50]);
    let at = |i: i64| (START * 1_000_000) + 1_000_000 + i * 1_000_000;
    assert_eq!(runs[0][5], (at(5), 15.0));
    assert_eq!(runs[1][0], (at(150), 10.0 + (150 % 7) as f64));
    assert_eq!(data.series[0].runs().len(), 1, "node-b has no gap");
    assert_eq!(data.series[0].points.len(), 200);

    // The figure draws exactly the CSV's rows.
    if !font() {
        return;
    }
    let (svg, layout) = output::render(&d, &data, Format::Svg, (800, 500)).unwrap();
    assert_eq!(layout.labels.0, "rtt (ms)");
    let svg = String::from_utf8(svg).unwrap();
    let points: usize = svg
        .split("<polyline")
        .skip(1)
        .filter(|p| !p.contains("stroke=\"#000000\"") && !p.contains("stroke=\"#E1E1E1\""))
        .map(|p| {
            let s = p.find("points=\"").unwrap() + 8;
            p[s..].split('"').next().unwrap().split_whitespace().count()
        })
        .sum();
    let csv = data.to_csv();
    let rows = csv.lines().skip(1).filter(|l| !l.ends_with(',')).count();
    assert_eq!(rows, 150 + 150 + 200 + 200);
    assert_eq!(points, rows);
    assert_eq!(
        csv.lines().filter(|l| l.ends_with(',')).count(),
        2,
        "a break per node-a series"
    );
}

#[test]
fn rates_and_downsampling_are_the_servers() {
    let dir = tempfile::tempdir().unwrap();
    let _db = experiment(dir.path());
    let api = serve(dir.path(), httpkit::HttpConfig::default());
    let d = def(
        r#"{"version":1,"domain":"lab1","stream":"ping_rtt","fields":["bytes"],
                    "senders":["node-b"],"derive":"rate","points":40,"timeaxis":"relative"}"#,
    );
    let data = fetch::fetch(&client(&api), &d).unwrap();
    assert_eq!(data.series.len(), 1);
    let values: Vec<f64> = data.series[0].points.iter().filter_map(|p| p.v).collect();
    assert!(
        values.len() > 4 && values.len() <= 40,
        "{} points",
        values.len()
    );
    assert!(
        values.iter().all(|v| (v - 1000.0).abs() < 1e-9),
        "{values:?}"
    );
    if !font() {
        return;
    }
    let (_, layout) = output::render(&d, &data, Format::Svg, (800, 500)).unwrap();
    assert_eq!(layout.labels.0, "bytes (kB/s)");
    assert_eq!(layout.divisors.0, 1000.0);

    // A short range: every row of it (fewer than the points asked).
    let all = def(
        r#"{"version":1,"domain":"lab1","stream":"ping_rtt","fields":["bytes"],
                      "senders":["node-b"],"from":"50","to":"59.5"}"#,
    );
    let data = fetch::fetch(&client(&api), &all).unwrap();
    assert_eq!(
        data.series[0].points.len(),
        10,
        "rows at 50.5 … 59.5 s, ends included"
    );
}

#[test]
fn errors_name_the_field_or_the_server_answer() {
    let dir = tempfile::tempdir().unwrap();
    let _db = experiment(dir.path());
    let api = serve(dir.path(), httpkit::HttpConfig::default());
    let e = |json: &str| {
        fetch::fetch(&client(&api), &def(json))
            .unwrap_err()
            .to_string()
    };
    let msg = e(r#"{"version":1,"domain":"lab1","stream":"ping_rtt","fields":["jitter"]}"#);
    assert!(
        msg.contains("no field \"jitter\"") && msg.contains("rtt, loss, bytes, dest"),
        "{msg}"
    );
    let msg = e(r#"{"version":1,"domain":"lab1","stream":"ping_rtt","fields":["dest"]}"#);
    assert!(msg.contains("not a number"), "{msg}");
    let msg = e(r#"{"version":1,"domain":"lab9","stream":"ping_rtt","fields":["rtt"]}"#);
    assert!(
        msg.contains("404") && msg.contains("unknown_domain"),
        "{msg}"
    );
    let msg = e(
        r#"{"version":1,"domain":"lab1","stream":"ping_rtt","fields":["rtt"],"from":"yesterday"}"#,
    );
    assert!(msg.contains("400") && msg.contains("yesterday"), "{msg}");
    let wrong_base = api.base.trim_end_matches("/api/v1");
    let msg = fetch::fetch(
        &httpkit::client::Client::new(wrong_base, "query API", ""),
        &def(r#"{"version":1,"domain":"lab1","stream":"ping_rtt","fields":["rtt"]}"#),
    )
    .unwrap_err()
    .to_string();
    assert!(msg.contains("http://HOST:PORT/api/v1"), "{msg}");
    let nobody = httpkit::client::Client::new("http://127.0.0.1:9", "query API", "is it running?");
    let msg = fetch::fetch(
        &nobody,
        &def(r#"{"version":1,"domain":"l","stream":"s","fields":["v"]}"#),
    )
    .unwrap_err()
    .to_string();
    assert!(
        msg.contains("no query API at") && msg.contains("is it running?"),
        "{msg}"
    );
}

#[test]
fn the_command_sends_the_token_and_writes_figure_and_csv() {
    if !font() {
        return;
    }
    struct Tokens;
    impl httpkit::Authenticator for Tokens {
        fn grants(&self, token: &str) -> Option<httpkit::Grants> {
            (token == "t-lab").then(|| httpkit::Grants {
                read: vec![httpkit::DomainPattern::new("lab*")],
                control: false,
            })
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let _db = experiment(dir.path());
    let config = httpkit::HttpConfig {
        access: httpkit::Access {
            authenticator: Some(Arc::new(Tokens)),
            public: false,
        },
        ..httpkit::HttpConfig::default()
    };
    let api = serve(dir.path(), config);
    let out = tempfile::tempdir().unwrap();
    let p = |n: &str| out.path().join(n).to_string_lossy().into_owned();
    std::fs::write(
        p("rtt.json"),
        r#"{"version":1,"title":"RTT","domain":"lab1","stream":"ping_rtt","fields":["rtt"]}"#,
    )
    .unwrap();
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        plot: PlotArgs,
    }
    let args = |extra: &[&str]| {
        let mut argv = vec![
            "plot".to_owned(),
            p("rtt.json"),
            "--api".into(),
            api.base.clone(),
        ];
        argv.extend(extra.iter().map(|s| s.to_string()));
        Cli::try_parse_from(argv).unwrap().plot
    };
    let e = plot::run(&args(&["-o", &p("rtt.pdf")])).unwrap_err();
    assert!(format!("{e:#}").contains("401"), "{e:#}");
    assert!(plot::run(&args(&["-o", &p("rtt.pdf"), "--token", "t-lab"])).unwrap());
    let pdf = std::fs::read(p("rtt.pdf")).unwrap();
    assert!(pdf.starts_with(b"%PDF-1.4") && pdf.ends_with(b"%%EOF\n"));
    let csv = std::fs::read_to_string(p("rtt.csv")).unwrap();
    assert!(
        csv.starts_with("sender,time,field,value\nnode-a,2026-11-22T01:29:37.000000Z,rtt,10\n"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 1 + 150 + 1 + 200);
    // The same figure again from the CSV alone, as a PNG of another size.
    let png_args = Cli::try_parse_from([
        "plot",
        &p("rtt.json"),
        "--csv-in",
        &p("rtt.csv"),
        "--unit",
        "rtt=ms",
        "-o",
        &p("again.png"),
        "--width",
        "1200",
        "--height",
        "700",
    ])
    .unwrap()
    .plot;
    assert!(plot::run(&png_args).unwrap());
    let png = std::fs::read(p("again.png")).unwrap();
    assert_eq!(&png[16..24], &[0, 0, 4, 176, 0, 0, 2, 188], "1200 × 700");
}
