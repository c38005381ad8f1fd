//! Generated Rust: the module for `fixtures/every_type.rb` is committed in
//! `tests/generated/` (checked here to be what the generator writes now)
//! and compiled into this test, which parses its clap options and injects
//! every type through its typed structs into a real server.

mod common;

// Kept byte for byte as generated (checked below): not reformatted.
#[rustfmt::skip]
#[path = "generated/every_type_oml.rs"]
mod every_type_oml;

use clap::Parser;
use common::*;
use rusqlite::types::Value as Sql;
use scaffold::gen::Output;

/// The committed module is the generator's current output.
#[test]
fn committed_module_is_current() {
    let dir = tempfile::tempdir().unwrap();
    generate("every_type.rb", &[Output::Rust], dir.path());
    let fresh = std::fs::read_to_string(dir.path().join("every_type_oml.rs")).unwrap();
    let committed = std::fs::read_to_string(test_file("generated/every_type_oml.rs")).unwrap();
    assert!(
        fresh == committed,
        "tests/generated/every_type_oml.rs is stale: run `streamgauge scaffold --rust -C crates/scaffold/tests/generated crates/scaffold/tests/fixtures/every_type.rb`"
    );
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    opts: every_type_oml::Options,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_structs_inject_every_type() {
    let data = against_server(|uri| {
        let options = "-c 5 --label x --big-count 4000000000".split(' ');
        let mut argv: Vec<String> = [
            "every_type",
            "--oml-collect",
            &uri,
            "--oml-id",
            "r1",
            "--oml-domain",
            "rs",
        ]
        .into_iter()
        .chain(options)
        .map(str::to_owned)
        .collect();
        let client = every_type_oml::client_from_args(&mut argv)
            .unwrap()
            .expect("not --oml-noop");
        let cli = Cli::parse_from(&argv);
        assert_eq!(cli.opts.delay, 0.5);
        let mps = every_type_oml::MeasurementPoints::register(&client).unwrap();
        client.start().unwrap();
        mps.scalars
            .inject(
                cli.opts.count,
                cli.opts.big_count,
                i64::MIN,
                u64::MAX,
                cli.opts.delay,
                cli.opts.label.as_deref().unwrap_or(""),
                &[7, 8],
                42,
                true,
            )
            .unwrap();
        mps.vectors
            .inject(
                &[0.5],
                &[i32::MIN],
                &[u32::MAX],
                &[-1],
                &[u64::MAX],
                &[false],
            )
            .unwrap();
        mps.aliases.inject(-1, 2, 0.5, 0.25, true).unwrap();
        client.close().unwrap();
    })
    .await;
    let s = rows(
        data.path(),
        "rs",
        "every_type_scalars",
        "i32, u32, i64, dbl, str, blb, gid, bol",
    );
    assert_eq!(
        s,
        vec![vec![
            Sql::Integer(5),
            Sql::Integer(4_000_000_000),
            Sql::Integer(i64::MIN),
            Sql::Real(0.5),
            Sql::Text("x".into()),
            Sql::Blob(vec![7, 8]),
            Sql::Integer(42),
            Sql::Integer(1),
        ]]
    );
    let v = rows(
        data.path(),
        "rs",
        "every_type_vectors",
        "vd, vi32, vu32, vi64, vu64, vb",
    );
    assert_eq!(
        v[0],
        [
            "[ 0.5 ]",
            "[ -2147483648 ]",
            "[ 4294967295 ]",
            "[ -1 ]",
            "[ 18446744073709551615 ]",
            "[ false ]"
        ]
        .map(|t| Sql::Text(t.into()))
        .to_vec()
    );
    let a = rows(
        data.path(),
        "rs",
        "every_type_aliases",
        "n_int, n_integer, f_float, f_real, b_flag",
    );
    assert_eq!(
        a,
        vec![vec![
            Sql::Integer(-1),
            Sql::Integer(2),
            Sql::Real(0.5),
            Sql::Real(0.25),
            Sql::Integer(1)
        ]]
    );
}
