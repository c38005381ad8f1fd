//! `streamgauge decode` run as a user runs it: the real binary on real captures.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_streamgauge"))
}

fn capture(name: &str) -> PathBuf {
    PathBuf::from("/work/shared/vectors").join(name)
}

/// The reference captures, from the repository's copy when it exists.
fn reference(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../spec/vectors");
    let local = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(name))
        });
    local.unwrap_or_else(|| capture(name))
}

fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = bin()
        .arg("decode")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn streamgauge");
    let mut input = child.stdin.take().expect("stdin");
    input
        .write_all(stdin.unwrap_or_default())
        .expect("write stdin");
    drop(input);
    child.wait_with_output().expect("wait")
}

fn json_lines(out: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

#[test]
fn decodes_reference_binary_capture() {
    let path = reference("ref-alltypes.bin");
    let out = run(&[path.to_str().expect("path")], None);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out.stdout);
    assert_eq!(lines[0]["kind"], "header");
    assert_eq!(lines[0]["domain"], "vecdomain");
    assert_eq!(lines[0]["schemas"].as_array().map(Vec::len), Some(9));
    let scalars: Vec<_> = lines
        .iter()
        .filter(|l| l["name"] == "vec_scalars")
        .collect();
    assert_eq!(scalars.len(), 3);
    // Unsigned extremes come out exact and unsigned.
    assert_eq!(
        scalars[0]["values"][3],
        serde_json::json!(18446744073709551615u64)
    );
    assert_eq!(scalars[1]["values"][1], serde_json::json!(4294967295u32));
    // 1e-300 travels as DOUBLE_NAN: null.
    assert!(scalars[2]["values"][4].is_null());
}

#[test]
fn binary_to_text_and_back_keeps_every_value() {
    let path = reference("ref-alltypes.bin");
    let direct = run(&[path.to_str().expect("path")], None);
    let text = run(&["--text", path.to_str().expect("path")], None);
    assert!(text.status.success());
    assert!(text.stdout.windows(14).any(|w| w == b"content: text\n"));
    let again = run(&["-"], Some(&text.stdout));
    assert!(
        again.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&again.stderr)
    );
    let (mut a, b) = (json_lines(&direct.stdout), json_lines(&again.stdout));
    a[0]["content"] = "text".into();
    assert_eq!(a, b);
    // And text back to binary reproduces the capture's tuple bytes exactly.
    let binary = run(&["--binary", "-"], Some(&text.stdout));
    let original = std::fs::read(&path).expect("capture");
    let tail =
        |b: &[u8]| b[b.windows(2).position(|w| w == b"\n\n").expect("header end") + 2..].to_vec();
    assert_eq!(tail(&binary.stdout), tail(&original));
}

#[test]
fn bad_input_reports_offsets_and_exits_1() {
    let input = b"protocol: 5\nschema: 1 a_b x:int32\ncontent: text\n\n0.1\t1\t1\tnot-a-number\n0.2\t7\t2\t5\n0.3\t1\t3\t42\n";
    let out = run(&[], Some(input));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("offset 49: stream 1: field 0 (int32)"),
        "{err}"
    );
    assert!(err.contains("stream index 7 was never declared"), "{err}");
    let lines = json_lines(&out.stdout);
    assert_eq!(lines.len(), 2, "the good tuple after two bad ones is kept");
    assert_eq!(lines[1]["values"], serde_json::json!([42]));
}

#[test]
fn missing_file_and_bad_flags_exit_2() {
    let out = run(&["/nonexistent/capture.bin"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open /nonexistent/capture.bin"));
    let out = run(&["--text", "--binary"], None);
    assert_eq!(out.status.code(), Some(2));
}
