//! `streamgauge wrap` end to end through the binary: tuples written to a
//! text file destination, metadata, exit status passed through.

use std::process::Command;

fn wrap(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .arg("wrap")
        .args(args)
        .output()
        .expect("running streamgauge wrap")
}

#[test]
fn run_regex_to_file_keeps_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.txt");
    let collect = format!("file:{}", out.display());
    let o = wrap(&[
        "run",
        "--schema",
        "n:int32 word:string",
        "--regex",
        r"^(?P<n>\d+) (?P<word>\w+)$",
        "--app",
        "gen",
        "--oml-collect",
        &collect,
        "--oml-text",
        "--oml-domain",
        "w",
        "--",
        "sh",
        "-c",
        "echo 1 one; echo skipped line; echo 2 two; exit 7",
    ]);
    assert_eq!(
        o.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "1 one\nskipped line\n2 two\n"
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("gen_line n:int32 word:string"), "{text}");
    assert!(
        text.contains("\t1\tone\n") && text.contains("\t2\ttwo\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "\tcommand_line\tsh -c 'echo 1 one; echo skipped line; echo 2 two; exit 7'\n"
        ),
        "{text}"
    );
    assert!(text.contains("\tlines_skipped\t1\n"), "{text}");
}

#[test]
fn bad_schema_is_a_usage_error() {
    let o = wrap(&["run", "--schema", "x:int", "--csv", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown type"));
}

#[test]
fn ping_loopback_to_file() {
    if !testkit::have_tool("ping", &["-V"], "apt install iputils-ping") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ping.txt");
    let collect = format!("file:{}", out.display());
    let o = wrap(&[
        "ping",
        "-c",
        "2",
        "-i",
        "0.2",
        "--oml-collect",
        &collect,
        "--oml-text",
        "127.0.0.1",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    let rtts: Vec<f64> = text
        .lines()
        .filter(|l| l.contains("\t127.0.0.1\t127.0.0.1\t64\t"))
        .map(|l| l.rsplit('\t').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(rtts.len(), 2, "{text}");
    assert!(rtts.iter().all(|&r| r > 0.0 && r < 50.0), "{rtts:?}");
}
