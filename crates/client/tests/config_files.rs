//! Configuration files through the public API: the samples in
//! `tests/data/config/` (good ones parse, XML and TOML twins agree, legacy
//! spellings equal modern ones) and `tests/data/config/bad/` (each `.err`
//! file holds the exact message expected).

use std::path::{Path, PathBuf};
use std::time::Duration;

use client::config::{self, xml, ConfigError, FileConfig};
use client::spec::{Encoding, OverloadPolicy, Uri, Window};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/config")
        .join(name)
}

fn load(name: &str) -> FileConfig {
    config::load_file(&data(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_good_sample_loads_and_round_trips_through_xml() {
    let mut n = 0;
    for entry in std::fs::read_dir(data("")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            continue;
        }
        let cfg = config::load_file(&path).unwrap_or_else(|e| panic!("{e}"));
        let written = xml::to_string(&cfg);
        assert_eq!(xml::parse(&written, "w.xml").unwrap(), cfg, "{written}");
        n += 1;
    }
    assert!(n >= 6, "only {n} samples");
}

#[test]
fn xml_and_toml_twins_agree() {
    assert_eq!(load("reference.xml"), load("reference.toml"));
    assert_eq!(load("minimal.xml"), load("minimal.toml"));
}

#[test]
fn legacy_spellings_mean_the_modern_ones() {
    assert_eq!(load("legacy.xml"), load("modern.xml"));
}

#[test]
fn reference_sample_in_detail() {
    let cfg = load("reference.xml");
    assert_eq!(cfg.domain.as_deref(), Some("wifi_survey"));
    assert_eq!(cfg.id.as_deref(), Some("node17"));
    let [server, stdout, archive] = &cfg.destinations[..] else {
        panic!("{cfg:?}");
    };
    assert_eq!(
        server.uri,
        Uri::Tcp {
            host: "collector.example.org".into(),
            port: 3004
        }
    );
    assert_eq!(
        server.policy,
        OverloadPolicy::Block {
            stall_limit: Some(Duration::from_millis(2500))
        }
    );
    assert_eq!(server.bufsize, 16 << 20);
    assert!(server.instrumentation);
    let streams = server.streams.as_ref().unwrap();
    let stats = &streams[0];
    assert_eq!(stats.name.as_deref(), Some("ping_stats"));
    let columns: Vec<(&str, Option<&str>)> = stats
        .filters
        .iter()
        .map(|f| (f.field.as_str(), f.operation.as_deref()))
        .collect();
    assert_eq!(
        columns,
        [
            ("seq", Some("last")),
            ("rtt", Some("stddev")),
            ("rtt", Some("avg"))
        ],
        "XML filters are in reverse document order"
    );
    assert_eq!(
        streams[1].window,
        Window::Interval(Duration::from_millis(1500))
    );
    assert_eq!(streams[1].filters[0].properties.len(), 2);
    assert_eq!(streams[2].mp, "_client_instrumentation");

    assert_eq!(stdout.uri, Uri::Stdout);
    assert_eq!(stdout.encoding, Encoding::Text);
    assert_eq!(stdout.policy, OverloadPolicy::DropOldest);
    assert_eq!(stdout.streams, None);
    assert!(stdout.instrumentation);

    assert_eq!(archive.uri, Uri::FlushFile("/var/tmp/survey.oml".into()));
    assert_eq!(archive.encoding, Encoding::Binary);
    assert_eq!(archive.policy, OverloadPolicy::Block { stall_limit: None });
    assert_eq!(archive.bufsize, config::DEFAULT_BUFSIZE);
}

#[test]
fn bad_samples_give_the_expected_messages() {
    let dir = data("bad");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "err") {
            continue;
        }
        let name = path.file_name().unwrap().to_str().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let err = config::parse_str(&text, name).expect_err(name);
        assert!(err.location().is_some(), "{name}: {err}");
        let expected = path.with_file_name(format!("{name}.err"));
        match std::fs::read_to_string(&expected) {
            Ok(want) => assert_eq!(err.to_string(), want.trim_end(), "{name}"),
            Err(_) => assert!(!err.to_string().is_empty()),
        }
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} bad samples");
}

#[test]
fn unknown_toml_key_lists_the_allowed_ones() {
    let text = std::fs::read_to_string(data("bad/key.toml")).unwrap();
    let err = config::parse_str(&text, "key.toml").unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("key.toml:9: unknown field `feld`"), "{msg}");
    for allowed in ["field", "operation", "rename", "properties"] {
        assert!(msg.contains(allowed), "{msg}");
    }
}

#[test]
fn load_file_reports_the_path() {
    let err = config::load_file(&data("does-not-exist.toml")).unwrap_err();
    assert!(matches!(err, ConfigError::Read { .. }));
    assert!(err.to_string().contains("does-not-exist.toml"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.xml");
    std::fs::write(&path, "<omlc>\n<collect url=\"h\" x=\"1\"/>\n</omlc>").unwrap();
    let err = config::load_file(&path).unwrap_err();
    let loc = err.location().unwrap();
    assert_eq!(loc.file, path.display().to_string());
    assert_eq!(loc.line, Some(2));
}

#[test]
fn format_is_sniffed_without_a_known_extension() {
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("exp.conf");
    std::fs::write(&xml, "\n  <omlc><collect url=\"file:x\"/></omlc>").unwrap();
    let toml = dir.path().join("exp.cfg");
    std::fs::write(
        &toml,
        "[[collect]]\nurl = \"file:x\"\nencoding = \"binary\"\n",
    )
    .unwrap();
    assert_eq!(
        config::load_file(&xml).unwrap(),
        config::load_file(&toml).unwrap()
    );
}
