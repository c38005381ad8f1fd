//! C programs written for liboml2, compiled with the system `cc` against
//! `include/` and the built `liboml2.so` / `liboml2.a`, run, and their
//! output checked.

mod common;

use std::collections::HashMap;
use std::process::Command;

use common::*;

/// Test 1: the generator writes a text file; every value comes back.
#[test]
fn generator_to_text_file() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("generator.c", dir.path(), "generator", Link::Shared);
    let out = run(
        &exe,
        &[
            "--oml-collect",
            "file:out.txt",
            "--oml-text",
            "--oml-id",
            "s1",
            "--oml-domain",
            "d1",
        ],
        dir.path(),
    );
    check_ok(&out);
    let bytes = std::fs::read(dir.path().join("out.txt")).unwrap();
    let d = decode(&bytes);
    assert_eq!(d.header.content, omsp::Content::Text);
    check_generator_output(&d);
}

/// Test 1, binary: the same through the binary encoding.
#[test]
fn generator_to_binary_file() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("generator.c", dir.path(), "generator", Link::Shared);
    let out = run(
        &exe,
        &[
            "--oml-id",
            "s1",
            "--oml-collect",
            "file:out.bin",
            "--oml-binary",
            "--oml-domain",
            "d1",
        ],
        dir.path(),
    );
    check_ok(&out);
    let d = decode(&std::fs::read(dir.path().join("out.bin")).unwrap());
    assert_eq!(d.header.content, omsp::Content::Binary);
    check_generator_output(&d);
}

/// Test 5: the same program linked statically with liboml2.a.
#[test]
fn static_linking() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("generator.c", dir.path(), "generator", Link::Static);
    let dynamic = Command::new("ldd").arg(&exe).output().map(|o| o.stdout);
    if let Ok(libs) = dynamic {
        assert!(
            !String::from_utf8_lossy(&libs).contains("liboml2"),
            "linked dynamically"
        );
    }
    let out = run(
        &exe,
        &[
            "--oml-collect",
            "file:out.txt",
            "--oml-id",
            "s1",
            "--oml-domain",
            "d1",
        ],
        dir.path(),
    );
    check_ok(&out);
    check_generator_output(&decode(&std::fs::read(dir.path().join("out.txt")).unwrap()));
}

/// Runs `args.c` and returns its `name=value` lines.
fn args_run(args: &[&str], app: Option<&str>) -> HashMap<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("args.c", dir.path(), "args", Link::Shared);
    let mut cmd = Command::new(&exe);
    cmd.args(args).current_dir(dir.path());
    for (k, _) in std::env::vars() {
        if k.starts_with("OML_") {
            cmd.env_remove(k);
        }
    }
    match app {
        Some(a) => cmd.env("ARGS_APP", a),
        None => cmd.env_remove("ARGS_APP"),
    };
    let out = cmd.output().unwrap();
    check_ok(&out);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// Test 3: argv compaction and return codes through a whole lifecycle.
#[test]
fn argv_compaction_and_return_codes() {
    let exe_name = |m: &HashMap<String, String>| m["argv"].split(' ').next().unwrap().to_owned();
    let m = args_run(
        &[
            "-x",
            "--oml-collect",
            "file:out.txt",
            "--oml-id",
            "n1",
            "file",
            "--oml-text",
            "y",
        ],
        None,
    );
    assert_eq!(m["init"], "0");
    assert_eq!(m["argc"], "4");
    assert!(m["argv"].ends_with("args -x file y"), "{}", m["argv"]);
    assert!(exe_name(&m).ends_with("args"));
    assert_eq!(m["terminated"], "yes");
    assert_eq!(m["bad_mp"], "null");
    assert_eq!(m["mp"], "m");
    assert_eq!(m["dup_mp"], "null");
    assert_eq!(m["before_start"], "-1");
    assert_eq!(m["null_mp"], "-1");
    assert_eq!(m["null_values"], "-1");
    assert_eq!(m["start"], "0");
    assert_eq!(m["active"], "1");
    assert_eq!(m["inject"], "0");
    assert_eq!(m["meta_int"], "-1");
    assert_eq!(m["start_again"], "-1");
    assert_eq!(m["close"], "0");
    assert_eq!(m["after_close"], "-1");
    assert_eq!(m["close_again"], "0");
}

#[test]
fn noop_returns_1_and_strips_itself() {
    // Unlike liboml2 (spec §11 defect 21), --oml-noop anywhere is removed
    // along with every other --oml-* option.
    let m = args_run(&["a", "--oml-noop", "b", "--oml-id", "x"], None);
    assert_eq!(m["init"], "1");
    assert_eq!(m["argc"], "3");
    assert!(m["argv"].ends_with("args a b"), "{}", m["argv"]);
    // The library stays usable and silent.
    assert_eq!(m["mp"], "m");
    assert_eq!(m["start"], "0");
    assert_eq!(m["inject"], "0");
    assert_eq!(m["close"], "0");
}

#[test]
fn init_errors_return_minus_1_and_keep_argv() {
    let m = args_run(&["a", "--oml-id"], None);
    assert_eq!(m["init"], "-1");
    assert_eq!(m["argc"], "3");
    assert!(m["argv"].ends_with("args a --oml-id"));
    let m = args_run(&["--oml-samples", "many"], None);
    assert_eq!(m["init"], "-1");
    let m = args_run(&[], Some("bad-name"));
    assert_eq!(m["init"], "-1");
    // The application name is the part after the last '/'.
    let m = args_run(&["--oml-collect", "file:x"], Some("/usr/bin/good_name"));
    assert_eq!(m["init"], "0");
}

#[test]
fn help_and_filter_list_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("args.c", dir.path(), "args", Link::Shared);
    let out = run(&exe, &["--oml-help"], dir.path());
    check_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--oml-collect"), "{text}");
    assert!(!text.contains("init="), "omlc_init must not return");
    let out = run(&exe, &["--oml-list-filters"], dir.path());
    check_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    for f in ["delta", "sum", "stddev", "last", "first", "avg"] {
        assert!(text.contains(f), "{text}");
    }
}

/// Test 4: the headers compile warning-free in C99, C11 and C++, and every
/// declared function links.
#[test]
fn headers_compile_strictly() {
    let dir = tempfile::tempdir().unwrap();
    let lib = lib_dir();
    let variants: [(&str, &[&str]); 4] = [
        ("cc", &["-std=c99"]),
        ("cc", &["-std=c11"]),
        ("c++", &["-x", "c++", "-std=c++11"]),
        ("c++", &["-x", "c++", "-std=c++17"]),
    ];
    for (i, (compiler, std)) in variants.iter().enumerate() {
        let mut cmd = Command::new(compiler);
        cmd.args(*std)
            .args(["-Wall", "-Wextra", "-Werror", "-pedantic"])
            .arg("-I")
            .arg(include_dir())
            .arg(c_source("header_strict.c"))
            .arg("-o")
            .arg(dir.path().join(format!("strict{i}")))
            .arg("-L")
            .arg(&lib)
            .arg("-loml2");
        run_compiler(cmd);
    }
}

/// The C compiler's layout of the header's types equals the Rust one.
#[test]
fn abi_matches_rust() {
    use oml2::mp::OmlMP;
    use oml2::types::*;
    use std::mem::{offset_of, size_of};
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("abi.c", dir.path(), "abi", Link::Shared);
    let out = run(&exe, &[], dir.path());
    check_ok(&out);
    let c: HashMap<String, usize> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.rsplit_once('='))
        .map(|(k, v)| (k.to_owned(), v.parse().unwrap()))
        .collect();
    let rust: [(&str, usize); 37] = [
        ("sizeof(OmlValueT)", size_of::<OmlValueT>()),
        ("sizeof(OmlString)", size_of::<OmlString>()),
        ("offsetof(OmlString, length)", offset_of!(OmlString, length)),
        ("offsetof(OmlString, size)", offset_of!(OmlString, size)),
        (
            "offsetof(OmlString, is_const)",
            offset_of!(OmlString, is_const),
        ),
        ("sizeof(OmlBlob)", size_of::<OmlBlob>()),
        ("offsetof(OmlBlob, length)", offset_of!(OmlBlob, length)),
        ("offsetof(OmlBlob, size)", offset_of!(OmlBlob, size)),
        ("sizeof(OmlVector)", size_of::<OmlVector>()),
        ("offsetof(OmlVector, length)", offset_of!(OmlVector, length)),
        ("offsetof(OmlVector, size)", offset_of!(OmlVector, size)),
        (
            "offsetof(OmlVector, nof_elts)",
            offset_of!(OmlVector, nof_elts),
        ),
        ("offsetof(OmlVector, elt_sz)", offset_of!(OmlVector, elt_sz)),
        ("sizeof(OmlValueU)", size_of::<OmlValueU>()),
        ("sizeof(OmlValue)", size_of::<OmlValue>()),
        ("offsetof(OmlValue, value)", offset_of!(OmlValue, value)),
        ("sizeof(OmlMPDef)", size_of::<OmlMPDef>()),
        (
            "offsetof(OmlMPDef, param_types)",
            offset_of!(OmlMPDef, param_types),
        ),
        ("offsetof(OmlMP, param_defs)", offset_of!(OmlMP, param_defs)),
        (
            "offsetof(OmlMP, param_count)",
            offset_of!(OmlMP, param_count),
        ),
        (
            "offsetof(OmlMP, table_count)",
            offset_of!(OmlMP, table_count),
        ),
        ("offsetof(OmlMP, streams)", offset_of!(OmlMP, streams)),
        ("offsetof(OmlMP, active)", offset_of!(OmlMP, active)),
        ("offsetof(OmlMP, mutexP)", offset_of!(OmlMP, mutex_p)),
        ("offsetof(OmlMP, mutex)", offset_of!(OmlMP, mutex)),
        ("offsetof(OmlMP, next)", offset_of!(OmlMP, next)),
        ("offsetof(OmlMP, default_ms)", offset_of!(OmlMP, default_ms)),
        ("sizeof(OmlMStream)", size_of::<OmlMStream>()),
        ("offsetof(OmlMStream, mp)", offset_of!(OmlMStream, mp)),
        ("offsetof(OmlMStream, index)", offset_of!(OmlMStream, index)),
        (
            "offsetof(OmlMStream, sample_interval)",
            offset_of!(OmlMStream, sample_interval),
        ),
        (
            "offsetof(OmlMStream, seq_no)",
            offset_of!(OmlMStream, seq_no),
        ),
        (
            "offsetof(OmlMStream, condVar)",
            offset_of!(OmlMStream, cond_var),
        ),
        (
            "offsetof(OmlMStream, filter_thread)",
            offset_of!(OmlMStream, filter_thread),
        ),
        (
            "offsetof(OmlMStream, meta_seq_no)",
            offset_of!(OmlMStream, meta_seq_no),
        ),
        (
            "offsetof(OmlMStream, written)",
            offset_of!(OmlMStream, written),
        ),
        (
            "offsetof(OmlMStream, dropped)",
            offset_of!(OmlMStream, dropped),
        ),
    ];
    for (name, size) in rust {
        assert_eq!(c.get(name), Some(&size), "{name}");
    }
}

/// Macros, value helpers, GUIDs, filters and logging, checked from C.
#[test]
fn macros_and_helpers() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("values.c", dir.path(), "values", Link::Shared);
    let out = run(&exe, &[], dir.path());
    check_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "OK");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("DEBUG\tto stderr 3\n"), "{err}");
    assert!(err.contains("INFO\tdirect o_log\n"), "{err}");
    assert!(!err.contains("filtered"), "{err}");
    assert!(!err.contains("hidden"), "{err}");
}

/// `--oml-log-file` and `--oml-log-level`: dated lines in the file.
#[test]
fn log_file_option() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("args.c", dir.path(), "args", Link::Shared);
    let out = run(
        &exe,
        &[
            "--oml-log-file",
            "log.txt",
            "--oml-log-level",
            "1",
            "--oml-collect",
            "file:o.txt",
        ],
        dir.path(),
    );
    check_ok(&out);
    let log = std::fs::read_to_string(dir.path().join("log.txt")).unwrap();
    let first = log.lines().next().unwrap_or_default();
    // "Mon DD HH:MM:SS LEVEL\tmessage"
    assert_eq!(first.as_bytes().get(15), Some(&b' '), "{log}");
    assert!(
        log.contains(" INFO\tOML client (streamgauge) started"),
        "{log}"
    );
    assert!(log.contains("ERROR\tomlc_add_mp"), "{log}");
}

/// `make install` lays out lib, headers, libocomm stubs and oml2.pc; a
/// program built with the reference's `pkg-config ... -locomm` line runs.
#[test]
fn make_install_and_pkg_config() {
    if !testkit::have_tool("make", &["--version"], "apt install make")
        || !testkit::have_tool("pkg-config", &["--version"], "apt install pkg-config")
    {
        return;
    }
    let prefix = tempfile::tempdir().unwrap();
    let status = Command::new("make")
        .arg("-C")
        .arg(crate_dir())
        .arg("install")
        .arg("SKIP_BUILD=1")
        .arg(format!("BUILD_DIR={}", lib_dir().display()))
        .arg(format!("PREFIX={}", prefix.path().display()))
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let p = prefix.path();
    for f in [
        "lib/liboml2.so",
        "lib/liboml2.a",
        "lib/libocomm.so",
        "lib/libocomm.a",
        "lib/pkgconfig/oml2.pc",
        "include/oml2/omlc.h",
        "include/oml2/oml_filter.h",
        "include/ocomm/o_log.h",
    ] {
        assert!(p.join(f).exists(), "{f}");
    }
    let pc = |arg: &str| {
        let o = Command::new("pkg-config")
            .arg(arg)
            .arg("oml2")
            .env("PKG_CONFIG_PATH", p.join("lib/pkgconfig"))
            .output()
            .unwrap();
        assert!(o.status.success());
        String::from_utf8(o.stdout).unwrap()
    };
    assert!(pc("--modversion").starts_with("2."));
    let work = tempfile::tempdir().unwrap();
    let exe = work.path().join("gen");
    let mut cmd = Command::new("cc");
    cmd.args(pc("--cflags").split_whitespace())
        .arg(c_source("generator.c"))
        .arg("-o")
        .arg(&exe)
        .args(pc("--libs").split_whitespace())
        .arg("-locomm")
        .arg(format!("-Wl,-rpath,{}", p.join("lib").display()));
    run_compiler(cmd);
    let out = run(
        &exe,
        &[
            "--oml-collect",
            "file:o.txt",
            "--oml-id",
            "s1",
            "--oml-domain",
            "d1",
        ],
        work.path(),
    );
    check_ok(&out);
    check_generator_output(&decode(&std::fs::read(work.path().join("o.txt")).unwrap()));
}

/// Concurrent injection from four threads loses and corrupts nothing.
#[test]
fn threads_inject_concurrently() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("threads.c", dir.path(), "threads", Link::Shared);
    let out = run(&exe, &["--oml-collect", "file:out.txt"], dir.path());
    check_ok(&out);
    let d = decode(&std::fs::read(dir.path().join("out.txt")).unwrap());
    let rows = d.rows("threads_work");
    assert_eq!(rows.len(), 4 * 20000);
    let mut next = [0u32; 4];
    for r in rows {
        let (omsp::Value::Int32(t), omsp::Value::UInt32(i), omsp::Value::String(l)) =
            (&r.values[0], &r.values[1], &r.values[2])
        else {
            panic!("{r:?}")
        };
        // Each thread's samples arrive complete and in order.
        assert_eq!(*i, next[*t as usize]);
        assert_eq!(*l, format!("t{t}-{i}"));
        next[*t as usize] += 1;
    }
}

/// SIGTERM closes the library (flushing a partial window) and the process
/// then dies of the signal.
#[test]
fn sigterm_flushes_then_dies() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("signal.c", dir.path(), "sig", Link::Shared);
    let mut child = Command::new(&exe)
        .args(["--oml-collect", "file:out.txt", "--oml-samples", "1000"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "ready\n");
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(15), "{status:?}");
    let d = decode(&std::fs::read(dir.path().join("out.txt")).unwrap());
    let rows = d.rows("sig_m");
    assert_eq!(rows.len(), 1, "the partial window is flushed at close");
    assert!(
        rows[0].values[0].same_as(&omsp::Value::Double(50.5)),
        "{:?}",
        rows[0]
    );
}

/// Returning from `main` without `omlc_close` still flushes everything.
#[test]
fn exit_without_close_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("noclose.c", dir.path(), "noclose", Link::Shared);
    let out = run(
        &exe,
        &["--oml-collect", "file:out.txt", "--oml-samples", "1000"],
        dir.path(),
    );
    check_ok(&out);
    let d = decode(&std::fs::read(dir.path().join("out.txt")).unwrap());
    let rows = d.rows("noclose_m");
    assert_eq!(rows.len(), 1);
    assert!(
        rows[0].values[0].same_as(&omsp::Value::Double(5.5)),
        "{:?}",
        rows[0]
    );
}
