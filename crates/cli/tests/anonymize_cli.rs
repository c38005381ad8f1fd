//! `streamgauge anonymize` against every Crypto-PAn vector of the capture
//! crate (stdin and arguments), bad lines (stderr with line numbers, exit 1)
//! and an unreadable key (exit 2).

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn anonymize(key: &std::path::Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .arg("anonymize")
        .arg("--key")
        .arg(key)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// (key hex) → [(input, expected)] from the shared vector file.
fn vectors() -> BTreeMap<String, Vec<(String, String)>> {
    let text = include_str!("../../capture/tests/data/cryptopan.tsv");
    let mut by_key: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for l in text.lines() {
        if l.starts_with('#') || l.starts_with("set\t") || l.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = l.split('\t').collect();
        by_key
            .entry(f[1].to_string())
            .or_default()
            .push((f[3].to_string(), f[4].to_string()));
    }
    by_key
}

#[test]
fn every_vector_through_stdin_and_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let mut total = 0;
    for (i, (hex, pairs)) in vectors().iter().enumerate() {
        let key = dir.path().join(format!("k{i}"));
        httpkit::secret::write_private(&key, format!("{hex}\n")).unwrap();
        let input: String = pairs.iter().map(|(a, _)| format!("{a}\n")).collect();
        let out = anonymize(&key, &[], &input);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        let want: Vec<String> = pairs.iter().map(|(_, e)| e.clone()).collect();
        assert_eq!(got, want);
        total += pairs.len();
        // The same through arguments.
        let args: Vec<&str> = pairs.iter().take(3).map(|(a, _)| a.as_str()).collect();
        let out = anonymize(&key, &args, "");
        assert!(out.status.success());
        let got = String::from_utf8(out.stdout).unwrap();
        assert_eq!(got.lines().collect::<Vec<_>>(), want[..args.len()].to_vec());
    }
    assert_eq!(total, 75, "every vector of the file");
}

#[test]
fn bad_lines_are_reported_with_their_number_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("k");
    let (hex, pairs) = vectors().into_iter().next().unwrap();
    httpkit::secret::write_private(&key, hex).unwrap();
    let input = format!("{}\nnot-an-ip\n\n{}\n10.0.0.300\n", pairs[0].0, pairs[1].0);
    let out = anonymize(&key, &[], &input);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [pairs[0].1.as_str(), "", "", pairs[1].1.as_str(), ""]
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("line 2") && stderr.contains("not-an-ip"),
        "{stderr}"
    );
    assert!(
        stderr.contains("line 5") && stderr.contains("10.0.0.300"),
        "{stderr}"
    );
    assert!(!stderr.contains("line 3"), "{stderr}");

    let out = anonymize(&dir.path().join("missing"), &["10.0.0.1"], "");
    assert_eq!(out.status.code(), Some(2));
    httpkit::secret::write_private(&key, "too short").unwrap();
    let out = anonymize(&key, &["10.0.0.1"], "");
    assert_eq!(out.status.code(), Some(2));
}
