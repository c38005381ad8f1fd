//! `streamgauge scaffold` from the command line: exit codes, the overwrite
//! rules (nothing written on refusal or on an invalid description), the
//! skeleton, conversion both ways and `--from-db`.

use std::path::Path;
use std::process::{Command, Output};

fn scaffold(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .arg("scaffold")
        .args(args)
        .current_dir(dir)
        .env("USER", "tester")
        .output()
        .unwrap()
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn skeleton_generate_and_overwrite_rules() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = scaffold(d, &["--app", "demo"]);
    assert!(out.status.success(), "{out:?}");
    let skeleton = std::fs::read_to_string(d.join("demo.rb")).unwrap();
    assert!(skeleton.contains("defApplication('tester:app:demo', 'demo')"));

    // The skeleton is kept: exit 1, untouched.
    std::fs::write(d.join("demo.rb"), skeleton.replace("'sensor'", "'probe'")).unwrap();
    let out = scaffold(d, &["--app", "demo"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("demo.rb already exists; pass --force"));

    let all = [
        "--oml", "--opts", "--main", "--make", "--python", "--rust", "demo.rb",
    ];
    let out = scaffold(d, &all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = [
        "Makefile",
        "config.h",
        "demo.c",
        "demo.rb",
        "demo_oml.h",
        "demo_oml.py",
        "demo_oml.rs",
        "demo_popt.h",
    ];
    assert_eq!(files(d), expected);
    assert!(std::fs::read_to_string(d.join("demo_oml.h"))
        .unwrap()
        .contains("oml_inject_probe("));

    // A hand-edited main is kept, and then nothing else is written either.
    std::fs::write(d.join("demo.c"), "/* mine */").unwrap();
    std::fs::remove_file(d.join("demo_oml.h")).unwrap();
    let out = scaffold(d, &all);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        std::fs::read_to_string(d.join("demo.c")).unwrap(),
        "/* mine */"
    );
    assert!(!d.join("demo_oml.h").exists());
    // Headers alone are always replaced; --force replaces the rest.
    assert!(scaffold(d, &["--oml", "demo.rb"]).status.success());
    assert!(d.join("demo_oml.h").exists());
    assert!(scaffold(d, &["-f", "--main", "demo.rb"]).status.success());
    assert_ne!(
        std::fs::read_to_string(d.join("demo.c")).unwrap(),
        "/* mine */"
    );
}

#[test]
fn invalid_description_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bad = "defApplication('a:app:bad', 'bad') do |app|\n  app.defMeasurement('m') do |mp|\n    mp.defMetric('ok', :bool)\n  end\nend\n";
    std::fs::write(d.join("bad.rb"), bad).unwrap();
    let out = scaffold(d, &["--oml", "--opts", "--main", "--make", "bad.rb"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.rb:3:24: error: unknown type `bool`"),
        "{err}"
    );
    assert_eq!(files(d), ["bad.rb"]);
    // Usage errors are exit 2.
    assert_eq!(scaffold(d, &["bad.rb"]).status.code(), Some(2));
}

#[test]
fn convert_round_trip_and_from_db() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert!(scaffold(d, &["--app", "demo"]).status.success());
    assert!(scaffold(d, &["convert", "demo.rb", "-o", "demo.toml"])
        .status
        .success());
    assert!(scaffold(d, &["convert", "demo.toml", "-o", "back.rb"])
        .status
        .success());
    let body = |f: &str| -> String {
        std::fs::read_to_string(d.join(f))
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(body("demo.rb"), body("back.rb"));
    assert_eq!(
        scaffold(d, &["convert", "demo.rb", "-o", "demo.toml"])
            .status
            .code(),
        Some(1)
    );

    // An OML database as the server writes it.
    let db = rusqlite::Connection::open(d.join("old.sq3")).unwrap();
    db.execute_batch(
        "CREATE TABLE _experiment_metadata (oml_tuple_id INTEGER PRIMARY KEY, oml_sender_id INTEGER, oml_seq INTEGER, oml_ts_client REAL, oml_ts_server REAL, subject TEXT, key TEXT, value TEXT);
         INSERT INTO _experiment_metadata (key, value) VALUES ('table_ping_rtt', '2 ping_rtt host:string ms:double seen:bool ids:[uint64]');
         CREATE TABLE ping_rtt (oml_tuple_id INTEGER PRIMARY KEY, oml_sender_id INTEGER, oml_seq INTEGER, oml_ts_client REAL, oml_ts_server REAL, host TEXT, ms REAL, seen INTEGER, ids TEXT);",
    )
    .unwrap();
    drop(db);
    let out = scaffold(d, &["--from-db", "old.sq3", "--oml"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rb = std::fs::read_to_string(d.join("ping.rb")).unwrap();
    assert!(rb.contains("app.defMeasurement('rtt') do |mp|"), "{rb}");
    assert!(
        rb.contains("mp.defMetric('seen', :boolean)")
            && rb.contains("mp.defMetric('ids', :vector_uint64)"),
        "{rb}"
    );
    let header = std::fs::read_to_string(d.join("ping_oml.h")).unwrap();
    assert!(header.contains("oml_inject_rtt(OmlMP *mp, const char *host, double ms, uint8_t seen, const uint64_t ids[], size_t ids_len)"), "{header}");
}
