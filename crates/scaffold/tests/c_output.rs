//! Generated C: a program that uses every helper of
//! `fixtures/every_type.rb` compiles with `-Wall -Werror` against our
//! headers and liboml2, runs against a real `streamgauge` server, and
//! every value lands in SQLite; the same program compiles unchanged against
//! the reference generator's headers; the generated main, config.h and
//! Makefile build and run too.

mod common;

use std::path::Path;
use std::process::Command;

use common::ffi::{check_ok, lib_dir, run, run_compiler};
use common::*;
use rusqlite::types::Value as Sql;
use scaffold::gen::Output;

/// Compiles and links `sources` (in `dir`) against our headers and liboml2.
fn build_ours(dir: &Path, sources: &[&Path], exe: &str) -> std::path::PathBuf {
    let lib = lib_dir();
    let out = dir.join(exe);
    let mut cmd = Command::new("cc");
    cmd.args(["-Wall", "-Werror", "-I"])
        .arg(dir)
        .arg("-I")
        .arg(our_include())
        .args(sources)
        .arg("-o")
        .arg(&out)
        .arg("-L")
        .arg(&lib)
        .args(["-loml2", "-lpopt"])
        .arg(format!("-Wl,-rpath,{}", lib.display()));
    run_compiler(cmd);
    out
}

fn u64_of(v: &Sql) -> u64 {
    match v {
        Sql::Integer(i) => u64::try_from(*i).expect("non-negative"),
        Sql::Blob(b) => u64::from_be_bytes(b.as_slice().try_into().expect("8 bytes")),
        other => panic!("not a uint64: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_helper_compiles_runs_and_stores_every_value() {
    let work = tempfile::tempdir().unwrap();
    generate(
        "every_type.rb",
        &[Output::OmlHeader, Output::PoptHeader],
        work.path(),
    );
    let exe = build_ours(
        work.path(),
        &[&test_file("c/use_every_type.c")],
        "use_every_type",
    );

    let dir = work.path().to_owned();
    let args = "-c 42 --label hello --delay 2.5 --big-count 7 --i64 -9 --u64 11 --legacy 5 -l";
    let data = against_server(move |uri| {
        let mut argv = vec![
            "--oml-collect",
            &uri,
            "--oml-id",
            "s1",
            "--oml-domain",
            "d1",
        ];
        argv.extend(args.split(' '));
        check_ok(&run(&exe, &argv, &dir));
    })
    .await;

    let s = rows(
        data.path(),
        "d1",
        "every_type_scalars",
        "i32, u32, i64, u64, dbl, str, blb, gid, bol",
    );
    assert_eq!(s.len(), 2);
    assert_eq!(s[0][0], Sql::Integer(i32::MIN.into()));
    assert_eq!(s[0][1], Sql::Integer(u32::MAX.into()));
    assert_eq!(s[0][2], Sql::Integer(i64::MIN));
    assert_eq!(u64_of(&s[0][3]), u64::MAX);
    assert_eq!(s[0][4], Sql::Real(100.125));
    assert_eq!(s[0][5], Sql::Text("tab\there".into()));
    assert_eq!(s[0][6], Sql::Blob(vec![0, 1, 2, 0xff]));
    assert_eq!(u64_of(&s[0][7]), 0x0123_4567_89AB_CDEF);
    assert_eq!(s[0][8], Sql::Integer(1));
    // The second row carries the options popt parsed into g_opts.
    assert_eq!(
        s[1],
        vec![
            Sql::Integer(42),
            Sql::Integer(7),
            Sql::Integer(-9),
            Sql::Integer(11),
            Sql::Real(2.5),
            Sql::Text("hello".into()),
            Sql::Blob(Vec::new()),
            Sql::Integer(5),
            Sql::Integer(1),
        ]
    );

    let v = rows(
        data.path(),
        "d1",
        "every_type_vectors",
        "vd, vi32, vu32, vi64, vu64, vb",
    );
    let text = |r: &Vec<Sql>| -> Vec<String> {
        r.iter()
            .map(|c| match c {
                Sql::Text(t) => t.clone(),
                other => panic!("vector stored as {other:?}"),
            })
            .collect()
    };
    assert_eq!(
        text(&v[0]),
        [
            "[ 1.5, -2.25, 10000000000 ]",
            "[ -2147483648, 2147483647 ]",
            "[ 0, 4294967295 ]",
            "[ -9223372036854775808, 9223372036854775807 ]",
            "[ 0, 18446744073709551615 ]",
            "[ true, false, true ]",
        ]
    );
    assert!(text(&v[1]).iter().all(|c| c == "[ ]"), "{:?}", v[1]);

    // --from-db reads the same measurement points back, types included.
    let recovered = scaffold::from_db::describe(&data.path().join("d1.sq3")).unwrap();
    let (described, _) = scaffold::load(&fixture("every_type.rb")).unwrap();
    assert_eq!(recovered.name.value, "every_type");
    let shape = |app: &scaffold::App| -> Vec<(String, Vec<(String, scaffold::model::MetricType)>)> {
        app.measurements
            .iter()
            .map(|m| {
                let fields = m
                    .metrics
                    .iter()
                    .map(|f| (f.name.value.clone(), f.ty.decl.resolve(Default::default())))
                    .collect();
                (m.name.value.clone(), fields)
            })
            .collect()
    };
    assert_eq!(shape(&recovered), shape(&described));

    let a = rows(
        data.path(),
        "d1",
        "every_type_aliases",
        "n_int, n_integer, f_float, f_real, b_flag",
    );
    assert_eq!(
        a,
        vec![vec![
            Sql::Integer(-7),
            Sql::Integer(8),
            Sql::Real(0.25),
            Sql::Real(0.5),
            Sql::Integer(1)
        ]]
    );
}

/// The program above, unchanged, also compiles against the headers the
/// reference oml2-scaffold writes for the same description (and the
/// reference's <oml2/omlc.h>): it is a genuine oml2-scaffold program.
#[test]
fn the_same_program_compiles_against_the_reference_headers() {
    if !require_tool("ruby", "runs the reference oml2-scaffold") {
        return;
    }
    let Some(reference) = reference_dir() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("every_type.rb"), work.path().join("every_type.rb")).unwrap();
    reference_scaffold(
        &reference,
        &["--oml", "--opts", "every_type.rb"],
        work.path(),
    );
    let mut cmd = Command::new("cc");
    cmd.args(["-Wall", "-Werror", "-c", "-I"])
        .arg(work.path())
        .arg("-I")
        .arg(reference.join("include"))
        .arg(test_file("c/use_every_type.c"))
        .arg("-o")
        .arg(work.path().join("use_every_type.o"));
    run_compiler(cmd);
}

/// `--main`, `--make`: the example main builds with the generated Makefile
/// against our library and injects into every measurement point.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_main_and_makefile_build_and_inject() {
    if !require_tool("make", "builds the generated Makefile") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    // The Makefile regenerates the headers from an older description only.
    std::fs::copy(fixture("every_type.rb"), work.path().join("every_type.rb")).unwrap();
    let all = [
        Output::OmlHeader,
        Output::PoptHeader,
        Output::Main,
        Output::Makefile,
    ];
    generate("every_type.rb", &all, work.path());
    let lib = lib_dir();
    let out = Command::new("make")
        .current_dir(work.path())
        .arg(format!(
            "CFLAGS=-Wall -Werror -g -I. -I{}",
            our_include().display()
        ))
        .arg(format!("LDFLAGS=-L{0} -Wl,-rpath,{0}", lib.display()))
        .arg("LIBS=-loml2 -lpopt")
        .output()
        .unwrap();
    check_ok(&out);

    let dir = work.path().to_owned();
    let data = against_server(move |uri| {
        let argv = [
            "--oml-collect",
            &uri,
            "--oml-id",
            "m1",
            "--oml-domain",
            "main",
        ];
        check_ok(&run(&dir.join("every_type"), &argv, &dir));
    })
    .await;
    for table in [
        "every_type_scalars",
        "every_type_vectors",
        "every_type_aliases",
    ] {
        assert_eq!(
            rows(data.path(), "main", table, "oml_seq").len(),
            1,
            "{table}"
        );
    }
    let meta = rows(data.path(), "main", "_experiment_metadata", "key, value");
    assert!(
        meta.contains(&vec![
            Sql::Text("version".into()),
            Sql::Text("2.1.3".into())
        ]),
        "{meta:?}"
    );
}

/// Every form of the language (`fixtures/forms.rb`: deprecated types,
/// `:long`, old property forms, string defaults) and the `--app` skeleton
/// give C that builds with `-Wall -Wextra -Werror`, main included.
#[test]
fn every_form_and_the_skeleton_build_strictly() {
    let skeleton = scaffold::rb_form::skeleton("skel", "tester");
    let (forms, _) = scaffold::load(&fixture("forms.rb")).unwrap();
    for app in [forms, skeleton] {
        let work = tempfile::tempdir().unwrap();
        let all = [Output::OmlHeader, Output::PoptHeader, Output::Main];
        let files = scaffold::plan(&app, &all, &Default::default(), work.path()).unwrap();
        scaffold::write::write_all(&files, false).unwrap();
        let main = work.path().join(format!("{}.c", app.name.value));
        let lib = lib_dir();
        let mut cmd = Command::new("cc");
        cmd.args(["-Wall", "-Wextra", "-Werror", "-I"])
            .arg(work.path())
            .arg("-I")
            .arg(our_include())
            .arg(&main)
            .arg("-o")
            .arg(work.path().join("prog"))
            .arg("-L")
            .arg(&lib)
            .args(["-loml2", "-lpopt"]);
        run_compiler(cmd);
    }
}
