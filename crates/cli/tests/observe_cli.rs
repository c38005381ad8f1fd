//! `streamgauge observe` end to end on examples/observe/client.toml:
//! run (real UDP workload on loopback), resume, analyze and report, and the
//! report has every table and plot section. Also: bad plans are refused
//! before anything runs; a veth plan (root) with the in-line agent and a
//! capture session on the path runs, the components are shown to have
//! worked, and its namespaces are removed, also after Ctrl-C.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::oml4py;

fn sg(args: &[&str]) -> Output {
    sg_env(args, &[])
}

fn sg_env(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_streamgauge"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.args(args).output().unwrap()
}

/// A PYTHONPATH whose `streamgauge.observe` is this checkout's (a bare
/// `streamgauge` package around a link to python/streamgauge/observe):
/// `cargo test` runs before `pip install ./python` in scripts/test.sh, and
/// the analysis needs none of the package's compiled part.
fn python_path(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("py");
    let pkg = root.join("streamgauge");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("__init__.py"), "").unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/streamgauge/observe");
    std::os::unix::fs::symlink(src.canonicalize().unwrap(), pkg.join("observe")).unwrap();
    root
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The analysis needs python3 with scipy, statsmodels and matplotlib;
/// without them the test skips (testkit: a failure under CI).
fn have_analysis(python_path: &Path) -> bool {
    let py = std::env::var("STREAMGAUGE_PYTHON").unwrap_or_else(|_| "python3".into());
    let found = Command::new(&py)
        .env("PYTHONPATH", python_path)
        .args([
            "-c",
            "import streamgauge.observe, scipy, statsmodels, matplotlib",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        let reason = format!(
            "{py} cannot import scipy/statsmodels/matplotlib (scripts/setup.sh installs them)"
        );
        testkit::skip(&reason);
    }
    found
}

const SECTIONS: &[&str] = &[
    "Design",
    "Failed runs",
    "Verdict",
    "Assumption checks",
    "ANOVA (type III)",
    "ANOVA (type II)",
    "Permutation ANOVA",
    "Tukey HSD",
    "Allocation of variation",
    "Effects",
    "Plots",
];
const FIGURES: &[&str] = &[
    "Means with 95 % CIs per treatment",
    "Interaction plot",
    "Residual diagnostics",
];

fn plan() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/observe/client.toml")
        .display()
        .to_string()
}

/// The example plan with 1 s runs instead of its 2 s: the checks here are
/// of the run, resume and report machinery, not of the figures, and 16
/// runs of 2 s made this the suite's slowest test.
fn short_plan(dir: &Path) -> String {
    let text = std::fs::read_to_string(plan()).unwrap();
    assert!(text.contains("\nseconds = 2.0"), "{text}");
    let p = dir.join("client.toml");
    std::fs::write(&p, text.replacen("\nseconds = 2.0", "\nseconds = 1.0", 1)).unwrap();
    p.display().to_string()
}

#[test]
fn run_resume_analyze_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("obs");
    let out_s = out.display().to_string();
    let plan = short_plan(dir.path());
    ok(&sg(&["observe", "run", &plan, "--out", &out_s]));
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let lines: Vec<&str> = runs.lines().collect();
    assert_eq!(lines.len(), 13, "{runs}");
    assert!(lines[0].starts_with(
        "run,order,replication,status,error,factor:flavour,factor:rate,response:recv_pps"
    ));
    assert!(lines[1..].iter().all(|l| l.contains(",ok,")), "{runs}");
    // Every run id once; the order is not the standard order.
    let mut ids: Vec<usize> = lines[1..]
        .iter()
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert_ne!(ids, (0..12).collect::<Vec<_>>());
    ids.sort_unstable();
    assert_eq!(ids, (0..12).collect::<Vec<_>>());

    // Resume: drop the last 4 runs as if interrupted; only they run again.
    let kept = lines[..9].join("\n") + "\n";
    std::fs::write(out.join("runs.csv"), &kept).unwrap();
    let again = sg(&["observe", "run", &plan, "--out", &out_s]);
    ok(&again);
    assert!(String::from_utf8_lossy(&again.stderr).contains("resuming: 8 of 12 runs"));
    let resumed = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert!(resumed.starts_with(&kept));
    assert_eq!(resumed.lines().count(), 13);

    let py = python_path(dir.path());
    if !have_analysis(&py) {
        return;
    }
    let env = [("PYTHONPATH", py.as_path())];
    let analysis = out.join("analysis.json").display().to_string();
    ok(&sg_env(
        &[
            "observe",
            "analyze",
            &out.join("runs.csv").display().to_string(),
            "--out",
            &analysis,
        ],
        &env,
    ));
    let (html, md) = (out.join("report.html"), out.join("report.md"));
    ok(&sg_env(
        &[
            "observe",
            "report",
            &analysis,
            "--html",
            &html.display().to_string(),
            "--md",
            &md.display().to_string(),
        ],
        &env,
    ));
    let html = std::fs::read_to_string(html).unwrap();
    let md = std::fs::read_to_string(md).unwrap();
    for response in ["recv_pps", "sent_pps", "loss"] {
        assert!(
            md.contains(&format!("## Response: {response}")),
            "{response}"
        );
    }
    for s in SECTIONS {
        assert!(md.contains(&format!("## {s}\n")), "markdown lacks {s}");
        assert!(html.contains(&format!(">{s}</h")), "html lacks {s}");
    }
    for f in FIGURES {
        assert_eq!(md.matches(&format!("![{f}]")).count(), 3, "{f}");
        assert_eq!(
            html.matches(&format!("<figcaption>{f}</figcaption>"))
                .count(),
            3,
            "{f}"
        );
    }
    assert!(html.matches("<svg").count() >= 9);

    // The design recommendation: 10 % at 15 % noise over 6 cells (Holm's
    // first step) needs 57 runs per cell for 80 % power.
    let design = sg_env(
        &[
            "observe", "plan", "--effect", "0.1", "--cv", "0.15", "--cells", "6",
        ],
        &env,
    );
    ok(&design);
    let said = String::from_utf8_lossy(&design.stdout);
    assert!(said.contains("replications = 57"), "{said}");
}

#[test]
fn bad_plans_fail_before_any_run() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(plan()).unwrap();
    for (from, to, want) in [
        ("rate = [", "burst = [", "unknown factor \"burst\""),
        (
            "replications = 3",
            "replications = 2",
            "at least 3 runs per treatment",
        ),
        ("\"per-packet\"", "\"sometimes\"", "unknown flavour"),
        ("20000", "-5", "not a positive number"),
        (
            "rate = [",
            "inline = [\"off\", \"every\"]\nrate = [",
            "needs network = \"veth\"",
        ),
        (
            "[defaults]",
            "network = \"veth\"\n[defaults]\ncapture = \"full\"",
            "unknown capture level \"full\"",
        ),
    ] {
        let p = dir.path().join("plan.toml");
        std::fs::write(&p, base.replacen(from, to, 1)).unwrap();
        let out_dir = dir.path().join("never");
        let out = sg(&[
            "observe",
            "run",
            &p.display().to_string(),
            "--out",
            &out_dir.display().to_string(),
        ]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{want:?} not in {err}");
        assert!(!out_dir.exists(), "a refused plan must not start");
    }
}

#[test]
fn every_sample_is_stored_as_a_measurement_stream_and_two_filtered_threads_run() {
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("db");
    std::fs::create_dir_all(&db_dir).unwrap();
    let (_server, port) = oml4py::start_server(&db_dir, &[]);
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"t\"\nreplications = 3\nseconds = 0.5\ninterval = 0.1\nseed = 3\n\
             responses = [\"recv_pps\", \"loss\"]\ncollect = \"tcp://127.0.0.1:{port}\"\n\
             [defaults]\nthreads = 2\n[factors]\nflavour = [\"uninstrumented\", \"filtered\"]\nrate = [2000, 4000]\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("obs");
    ok(&sg(&[
        "observe",
        "run",
        &plan.display().to_string(),
        "--out",
        &out.display().to_string(),
    ]));
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert_eq!(
        runs.lines().filter(|l| l.contains(",ok,")).count(),
        12,
        "{runs}"
    );
    let samples = std::fs::read_to_string(out.join("samples.csv")).unwrap();
    let want = samples.lines().count() as i64 - 1;
    assert!(want >= 12 * 5, "{samples}");
    oml4py::wait_rows(
        &db_dir.join("observe.sq3"),
        "SELECT count(*) FROM observe_sample",
        want,
    );
}

/// Namespaces the runner with process id `pid` left in /run/netns.
fn namespaces_of(pid: u32) -> Vec<String> {
    let prefix = format!("sgo{pid}-");
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Runs `streamgauge ARGS` as a child; returns its pid and output.
fn sg_child(args: &[&str], interrupt_after: Option<std::time::Duration>) -> (u32, Output) {
    let child = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    if let Some(after) = interrupt_after {
        std::thread::sleep(after);
        let st = Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .unwrap();
        assert!(st.success());
    }
    (pid, child.wait_with_output().unwrap())
}

const VETH_PLAN: &str = "name = \"veth\"\nreplications = 3\nseconds = 0.8\nwarmup = 0.2\n\
    cooldown = 0.1\ninterval = 0.1\nseed = 5\nnetwork = \"veth\"\n\
    responses = [\"recv_pps\", \"if_rx_pps\", \"loss\"]\n\
    [defaults]\nrate = 20000\ninline_mode = \"loss\"\n\
    [factors]\ninline = [\"off\", \"every\"]\ncapture = [\"off\", \"anon-flows\"]\n";

/// The value of a tools.csv metric in every run that has it.
fn tool_values(tools: &str, component: &str, metric: &str) -> Vec<f64> {
    tools
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f.len() == 4 && f[1] == component && f[2] == metric).then(|| f[3].parse().unwrap())
        })
        .collect()
}

#[test]
fn a_veth_plan_runs_inline_and_capture_and_removes_its_namespaces() {
    if !testkit::have_root("observe network = \"veth\": namespaces, BPF, AF_PACKET") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("veth.toml");
    std::fs::write(&plan, VETH_PLAN).unwrap();
    let out = dir.path().join("obs");
    let (pid, output) = sg_child(
        &[
            "observe",
            "run",
            &plan.display().to_string(),
            "--out",
            &out.display().to_string(),
        ],
        None,
    );
    ok(&output);
    assert_eq!(namespaces_of(pid), Vec::<String>::new());
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let rows: Vec<Vec<&str>> = runs
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 12, "{runs}");
    for r in &rows {
        assert_eq!(r[3], "ok", "{runs}");
        let (recv, if_rx): (f64, f64) = (r[7].parse().unwrap(), r[8].parse().unwrap());
        // Paced at 20 000/s: both counters see the paced stream. Over the
        // trimmed window the socket's rate can exceed the interface's (a
        // receiver starved at the window's start catches up inside it),
        // so the two are compared sample by sample below.
        assert!((8_000.0..26_000.0).contains(&recv), "{runs}");
        assert!((8_000.0..26_000.0).contains(&if_rx), "{runs}");
    }
    // The interface counts every frame the socket got, at every sample.
    let samples = std::fs::read_to_string(out.join("samples.csv")).unwrap();
    let mut n = 0;
    for l in samples.lines().skip(1) {
        let f: Vec<u64> = l
            .split(',')
            .enumerate()
            .filter(|(i, _)| *i != 1)
            .map(|(_, v)| v.parse().unwrap())
            .collect();
        let (received, if_rx) = (f[1], f[3]);
        assert!(
            received <= if_rx,
            "sample {l}: the socket got more than the interface"
        );
        n += 1;
    }
    assert!(n >= 12 * 2, "{samples}");
    // The components did their work in the runs that had them (6 each).
    let tools = std::fs::read_to_string(out.join("tools.csv")).unwrap();
    let instrumented = tool_values(&tools, "inline", "source_instrumented");
    let records = tool_values(&tools, "inline", "records_read");
    assert_eq!(instrumented.len(), 6, "{tools}");
    assert!(instrumented.iter().all(|n| *n > 5_000.0), "{tools}");
    assert!(records.iter().all(|n| *n > 5_000.0), "{tools}");
    let captured = tool_values(&tools, "capture", "captured");
    assert_eq!(captured.len(), 6, "{tools}");
    assert!(captured.iter().all(|n| *n > 5_000.0), "{tools}");
    let written = tool_values(&tools, "capture", "bytes_written");
    assert!(written.iter().all(|n| *n > 100_000.0), "{tools}");
}

#[test]
fn an_interrupted_veth_plan_cleans_up_and_resumes_later() {
    if !testkit::have_root("observe network = \"veth\": namespaces") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("veth.toml");
    std::fs::write(
        &plan,
        VETH_PLAN
            .replace("seconds = 0.8", "seconds = 2.0")
            .replace("inline = [\"off\", \"every\"]\n", ""),
    )
    .unwrap();
    let out = dir.path().join("obs");
    let args = [
        "observe",
        "run",
        &plan.display().to_string(),
        "--out",
        &out.display().to_string(),
    ];
    let (pid, output) = sg_child(&args, Some(std::time::Duration::from_millis(3500)));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{err}");
    assert!(err.contains("interrupted before run"), "{err}");
    assert_eq!(namespaces_of(pid), Vec::<String>::new(), "{err}");
    // Only whole runs were recorded; the rest run on resume.
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let recorded = runs.lines().count() - 1;
    assert!(recorded < 6, "{runs}");
    let (_, again) = sg_child(&args, None);
    ok(&again);
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert_eq!(
        runs.lines().filter(|l| l.contains(",ok,")).count(),
        6,
        "{runs}"
    );
}
