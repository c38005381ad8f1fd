//! One short run of each C and iperf3 flavour through the public runner
//! (root: the veth network), checking the runs.csv rows and that the
//! instrumented runs' reports were stored by the collection server
//! (tools.csv). The runner's programs come from this build's target
//! directory: `streamgauge` (its `server` and `wrap iperf3`) and our
//! liboml2.so, both built by `cargo test --workspace` before any test runs.

use std::path::{Path, PathBuf};

use observe::{execute_with, Plan, Tools};

/// This build's target directory (the test executable is in its `deps`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// The programs, or a recorded skip naming the build that makes them.
/// `cargo build` puts liboml2.so in the target directory, `cargo test
/// --workspace` (the test command) only in its `deps`.
fn tools(reference: Option<&Path>) -> Option<Tools> {
    let dir = target_dir();
    let streamgauge = dir.join("streamgauge");
    let lib_dir = [dir.clone(), dir.join("deps")]
        .into_iter()
        .find(|d| d.join("liboml2.so").exists());
    let missing = if !streamgauge.exists() {
        Some(streamgauge.display().to_string())
    } else if lib_dir.is_none() {
        Some(format!("liboml2.so (in {} or its deps)", dir.display()))
    } else {
        None
    };
    if let Some(what) = missing {
        testkit::skip(&format!(
            "{what} is missing (cargo build -p streamgauge -p client-ffi)"
        ));
        return None;
    }
    Some(Tools {
        streamgauge,
        lib_dir: lib_dir?,
        reference: reference.map(Path::to_path_buf).unwrap_or_default(),
    })
}

/// One run per treatment: the plan's minimum replications are for the
/// statistics; this checks the workload.
fn one_each(text: &str) -> Plan {
    let mut plan = Plan::parse(text).unwrap();
    plan.replications = 1;
    plan
}

/// runs.csv rows as (flavour, responses), every run ok.
fn rows(dir: &Path, header: &str) -> Vec<(String, Vec<f64>)> {
    let text = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(header), "{text}");
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f[3], "ok", "{text}");
            let values = f[6..].iter().map(|v| v.parse().unwrap()).collect();
            (f[5].to_owned(), values)
        })
        .collect()
}

/// tools.csv values of `metric` by run id.
fn tool(dir: &Path, component: &str, metric: &str) -> Vec<(usize, f64)> {
    let text = std::fs::read_to_string(dir.join("tools.csv")).unwrap();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[1] == component && f[2] == metric)
                .then(|| (f[0].parse().unwrap(), f[3].parse().unwrap()))
        })
        .collect()
}

/// The run id of each flavour, from runs.csv.
fn run_of(dir: &Path, flavour: &str) -> usize {
    let text = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    text.lines()
        .skip(1)
        .find_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[5] == flavour).then(|| f[0].parse().unwrap())
        })
        .unwrap()
}

#[test]
fn each_c_flavour_runs_and_its_reports_are_stored() {
    if !testkit::have_root("observe network = \"veth\": namespaces")
        || !testkit::have_tool("cc", &["--version"], "apt install gcc")
    {
        return;
    }
    // Without the reference suite (a recorded skip) our library's flavours still run.
    let reference = testkit::oml_reference();
    let Some(tools) = tools(reference) else {
        return;
    };
    let mut flavours = vec!["c-uninstrumented", "c-per-packet", "c-filtered"];
    if reference.is_some() {
        flavours.extend(["c-per-packet-reference", "c-filtered-reference"]);
    }
    let list = flavours
        .iter()
        .map(|f| format!("{f:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let plan = one_each(&format!(
        "name = \"c\"\nreplications = 3\nseconds = 0.4\nwarmup = 0.1\ninterval = 0.05\n\
         network = \"veth\"\nresponses = [\"recv_pps\", \"sent_pps\", \"if_rx_pps\", \"loss\"]\n\
         [defaults]\nrate = 5000\n[factors]\nflavour = [{list}]\n"
    ));
    let dir = tempfile::tempdir().unwrap();
    let failed = execute_with(&plan, dir.path(), false, &tools).unwrap();
    assert_eq!(failed, 0);
    let rows = rows(
        dir.path(),
        "run,order,replication,status,error,factor:flavour,response:recv_pps,response:sent_pps,response:if_rx_pps,response:loss",
    );
    assert_eq!(rows.len(), flavours.len());
    for (flavour, v) in &rows {
        // Paced at 5000/s: the receiver socket, the sender and the
        // interface all see the paced stream, and nothing is lost.
        for rate in &v[..3] {
            assert!((3_500.0..6_500.0).contains(rate), "{flavour}: {v:?}");
        }
        assert!(v[3] < 0.05, "{flavour}: {v:?}");
    }
    let reported = tool(dir.path(), "c-sender", "reported");
    let stored = tool(dir.path(), "collector", "rows_stored");
    let of = |list: &[(usize, f64)], flavour: &str| {
        let id = run_of(dir.path(), flavour);
        list.iter().find(|(r, _)| *r == id).map(|(_, v)| *v)
    };
    assert_eq!(
        of(&reported, "c-uninstrumented"),
        None,
        "never entered liboml2"
    );
    // 0.4 s at 5000/s: about 2000 datagrams, each reported.
    let n = of(&reported, "c-per-packet").unwrap();
    assert!(n > 1_500.0, "{n}");
    assert_eq!(
        of(&stored, "c-per-packet"),
        Some(n),
        "our library stores every report"
    );
    // Filtered: one row per 100 samples.
    let n = of(&reported, "c-filtered").unwrap();
    let rows = of(&stored, "c-filtered").unwrap();
    assert!(
        (n / 100.0 - 1.0..=n / 100.0 + 1.0).contains(&rows),
        "{rows} rows of {n}"
    );
    if reference.is_some() {
        // The reference library's rows reach the same server (how many of
        // them it delivers is what the study reports, not a pass mark).
        assert!(of(&stored, "c-per-packet-reference").unwrap() > 0.0);
        assert!(of(&stored, "c-filtered-reference").unwrap() > 0.0);
    }
}

#[test]
fn iperf3_plain_and_wrapped_run_and_the_wrapper_stores_its_records() {
    if !testkit::have_root("observe network = \"veth\": namespaces")
        || !testkit::have_tool("iperf3", &["--version"], "apt install iperf3")
    {
        return;
    }
    let Some(tools) = tools(None) else {
        return;
    };
    let plan = one_each(
        "name = \"i\"\nreplications = 3\nseconds = 1\nwarmup = 0.2\ncooldown = 0.1\n\
         interval = 0.1\nnetwork = \"veth\"\n\
         responses = [\"if_rx_pps\", \"sent_pps\", \"iperf3_bps\", \"iperf3_loss\"]\n\
         [defaults]\nrate = 4000\n[factors]\nflavour = [\"iperf3\", \"iperf3-wrapped\"]\n",
    );
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(execute_with(&plan, dir.path(), false, &tools).unwrap(), 0);
    let rows = rows(
        dir.path(),
        "run,order,replication,status,error,factor:flavour,response:if_rx_pps,response:sent_pps,response:iperf3_bps,response:iperf3_loss",
    );
    assert_eq!(rows.len(), 2);
    for (flavour, v) in &rows {
        assert!((2_800.0..5_200.0).contains(&v[0]), "{flavour}: {v:?}");
        assert!((2_800.0..5_200.0).contains(&v[1]), "{flavour}: {v:?}");
        // iperf3's own figure: 4000 datagrams/s of 64 bytes.
        let want = 4_000.0 * 64.0 * 8.0;
        assert!((v[2] - want).abs() < 0.3 * want, "{flavour}: {v:?}");
        assert!((0.0..0.05).contains(&v[3]), "{flavour}: {v:?}");
    }
    let wrapped = run_of(dir.path(), "iperf3-wrapped");
    let intervals = tool(dir.path(), "collector", "iperf3_interval_rows");
    let summaries = tool(dir.path(), "collector", "iperf3_summary_rows");
    assert_eq!(intervals.len(), 1, "only the wrapped run reports");
    assert_eq!(intervals[0].0, wrapped);
    assert!(intervals[0].1 >= 1.0);
    // UDP: sum, sum_sent and sum_received.
    assert_eq!(summaries, vec![(wrapped, 3.0)]);
}
