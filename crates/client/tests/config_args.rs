//! `--oml-*` options, `OML_*` variables and `--oml-config` files together,
//! through `config::args::parse`: precedence, defaults and outcomes.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use client::config::args::{parse, Outcome, Parsed};
use client::config::{options, ConfigError, DEFAULT_BUFSIZE};
use client::spec::{ClientSpec, Encoding, OverloadPolicy, Uri, Window};

const TS: &str = "2024-05-01t12.00.00+0200";

fn argv(args: &[&str]) -> Vec<String> {
    std::iter::once("./bin/ping")
        .chain(args.iter().copied())
        .map(String::from)
        .collect()
}

fn run_env(args: &[&str], env: &[(&str, &str)]) -> Result<(Parsed, Vec<String>), ConfigError> {
    let vars: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let lookup = move |n: &str| vars.get(n).cloned();
    let mut a = argv(args);
    let parsed = parse("./bin/ping", &mut a, &lookup, TS)?;
    Ok((parsed, a))
}

fn spec_env(args: &[&str], env: &[(&str, &str)]) -> ClientSpec {
    match run_env(args, env) {
        Ok((
            Parsed {
                outcome: Outcome::Run(spec),
                ..
            },
            _,
        )) => spec,
        other => panic!("{args:?}: {other:?}"),
    }
}

fn spec(args: &[&str]) -> ClientSpec {
    spec_env(args, &[])
}

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/config")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn no_options_gives_the_reference_defaults_and_ours() {
    let s = spec(&[]);
    assert_eq!(s.app, "ping");
    assert_eq!(s.id, None);
    assert_eq!(s.domain, None);
    assert_eq!(s.default_window, Window::PerSample);
    assert_eq!(s.instr_interval, Some(Duration::from_secs(1)));
    assert_eq!(s.log_file, None);
    assert_eq!(s.log_level, 0);
    assert!(!s.noop);
    let [d] = &s.destinations[..] else { panic!() };
    assert_eq!(d.uri, Uri::File(format!("ping_{TS}").into()));
    assert_eq!(d.encoding, Encoding::Text);
    assert_eq!(d.policy, OverloadPolicy::Block { stall_limit: None });
    assert_eq!(d.bufsize, DEFAULT_BUFSIZE);
    assert_eq!(d.streams, None);
    assert!(d.instrumentation);
}

#[test]
fn default_file_name_carries_id_and_domain() {
    let s = spec_env(&["--oml-id", "n1"], &[("OML_DOMAIN", "dom")]);
    assert_eq!(
        s.destinations[0].uri,
        Uri::File(format!("ping_n1_dom_{TS}").into())
    );
}

#[test]
fn tcp_destination_defaults() {
    let s = spec(&["--oml-collect", "tcp://[::1]:3004"]);
    let d = &s.destinations[0];
    assert_eq!(
        d.uri,
        Uri::Tcp {
            host: "::1".into(),
            port: 3004
        }
    );
    assert_eq!(d.encoding, Encoding::Binary);
    assert_eq!(
        d.policy,
        OverloadPolicy::Block {
            stall_limit: Some(Duration::from_secs(1))
        }
    );
    let s = spec(&[
        "--oml-collect",
        "srv",
        "--oml-text",
        "--oml-overload=drop-newest",
    ]);
    assert_eq!(s.destinations[0].encoding, Encoding::Text);
    assert_eq!(s.destinations[0].policy, OverloadPolicy::DropNewest);
    let s = spec(&["--oml-file", "-", "--oml-binary"]);
    assert_eq!(s.destinations[0].uri, Uri::Stdout);
    assert_eq!(s.destinations[0].encoding, Encoding::Binary);
}

#[test]
fn windows_from_samples_and_interval() {
    assert_eq!(
        spec(&["--oml-samples", "10"]).default_window,
        Window::Samples(10)
    );
    assert_eq!(
        spec(&["--oml-interval", "0.5"]).default_window,
        Window::Interval(Duration::from_millis(500))
    );
    let (parsed, _) = run_env(&["--oml-samples", "3", "--oml-interval", "2"], &[]).unwrap();
    let Outcome::Run(s) = parsed.outcome else {
        panic!()
    };
    assert_eq!(s.default_window, Window::Interval(Duration::from_secs(2)));
    assert!(parsed.warnings.iter().any(|w| w.contains("interval wins")));
}

#[test]
fn command_line_beats_environment() {
    let env = [
        ("OML_NAME", "env_id"),
        ("OML_DOMAIN", "env_dom"),
        ("OML_COLLECT", "envhost:1"),
        ("OML_OVERLOAD", "drop-oldest"),
    ];
    let s = spec_env(&[], &env);
    assert_eq!(s.id.as_deref(), Some("env_id"));
    assert_eq!(s.domain.as_deref(), Some("env_dom"));
    assert_eq!(
        s.destinations[0].uri,
        Uri::Tcp {
            host: "envhost".into(),
            port: 1
        }
    );
    assert_eq!(s.destinations[0].policy, OverloadPolicy::DropOldest);
    let s = spec_env(
        &[
            "--oml-id=cli_id",
            "--oml-exp-id",
            "cli_dom",
            "--oml-server",
            "clihost",
            "--oml-overload",
            "block",
        ],
        &env,
    );
    assert_eq!(s.id.as_deref(), Some("cli_id"));
    assert_eq!(s.domain.as_deref(), Some("cli_dom"));
    assert_eq!(
        s.destinations[0].uri,
        Uri::Tcp {
            host: "clihost".into(),
            port: 3003
        }
    );
    assert_eq!(
        s.destinations[0].policy,
        OverloadPolicy::Block { stall_limit: None }
    );
}

#[test]
fn config_file_replaces_destination_and_windows_but_not_identity() {
    let xml = data("reference.xml");
    let (parsed, rest) = run_env(
        &[
            "--oml-config",
            &xml,
            "--oml-collect",
            "ignored",
            "--oml-samples",
            "5",
            "--oml-domain",
            "cli_dom",
            "-v",
        ],
        &[],
    )
    .unwrap();
    assert_eq!(rest, argv(&["-v"]));
    let Outcome::Run(s) = parsed.outcome else {
        panic!()
    };
    assert_eq!(s.destinations.len(), 3);
    assert_eq!(s.default_window, Window::PerSample);
    assert_eq!(s.domain.as_deref(), Some("cli_dom"), "command line wins");
    assert_eq!(
        s.id.as_deref(),
        Some("node17"),
        "file fills what is missing"
    );
    assert!(parsed.warnings.iter().any(|w| w.contains("--oml-collect")));
    assert!(parsed.warnings.iter().any(|w| w.contains("--oml-samples")));
}

#[test]
fn config_from_environment_and_resource_overrides() {
    let toml = data("reference.toml");
    let s = spec_env(
        &["--oml-bufsize", "1k"],
        &[
            ("OML_CONFIG", &toml),
            ("OML_OVERLOAD", "drop-newest"),
            ("OML_NAME", "e"),
        ],
    );
    assert_eq!(s.id.as_deref(), Some("e"));
    assert_eq!(s.destinations.len(), 3);
    for d in &s.destinations {
        assert_eq!(d.bufsize, 1024);
        assert_eq!(d.policy, OverloadPolicy::DropNewest);
    }
    // Without overrides, the file's per-destination values stand.
    let s = spec(&["--oml-config", &toml]);
    assert_eq!(s.destinations[0].bufsize, 16 << 20);
    assert_eq!(s.destinations[1].policy, OverloadPolicy::DropOldest);
}

#[test]
fn config_errors_surface() {
    let err = run_env(&["--oml-config", &data("bad/root.xml")], &[]).unwrap_err();
    assert!(matches!(err, ConfigError::WrongRoot { .. }), "{err}");
    let err = run_env(&["--oml-config", "/nonexistent.xml"], &[]).unwrap_err();
    assert!(matches!(err, ConfigError::Read { .. }), "{err}");
}

#[test]
fn help_list_and_noop_do_not_read_the_config() {
    let bad = data("bad/root.xml");
    let outcome = |args: &[&str]| run_env(args, &[("OML_CONFIG", &bad)]).unwrap().0.outcome;
    let Outcome::Help(text) = outcome(&["--oml-noop", "--oml-help", "--oml-list-filters"]) else {
        panic!()
    };
    for o in options::OPTIONS {
        assert!(text.contains(o.name), "{}", o.name);
    }
    assert_eq!(
        outcome(&["--oml-noop", "--oml-list-filters"]),
        Outcome::ListFilters
    );
    assert_eq!(outcome(&["--oml-noop"]), Outcome::Noop);
}

#[test]
fn noop_is_stripped_wherever_it_is() {
    // liboml2 stops at --oml-noop and loses the last argument (defect 21).
    let (parsed, rest) =
        run_env(&["-a", "--oml-noop", "--oml-id", "x", "-b", "last"], &[]).unwrap();
    assert_eq!(parsed.outcome, Outcome::Noop);
    assert_eq!(rest, argv(&["-a", "-b", "last"]));
}

#[test]
fn errors_are_clear_and_keep_argv() {
    for (args, needle) in [
        (
            &["--oml-collect"][..],
            "needs an argument: --oml-collect URI",
        ),
        (
            &["--oml-bogus"],
            "unknown option --oml-bogus; run with --oml-help",
        ),
        (&["--oml-collect", "::1"], "must be bracketed"),
        (&["--oml-collect", "udp:h"], "not supported"),
        (&["--oml-collect", "h:99999"], "bad port"),
        (
            &["--oml-samples", "x"],
            "option --oml-samples: invalid value `x`",
        ),
        (&["--oml-text=1"], "takes no argument"),
    ] {
        let mut a = argv(args);
        let err = parse("ping", &mut a, &|_| None, TS).unwrap_err();
        assert!(err.to_string().contains(needle), "{args:?}: {err}");
        assert_eq!(a, argv(args));
    }
    let err = parse("my-app", &mut argv(&[]), &|_| None, TS).unwrap_err();
    assert!(matches!(err, ConfigError::InvalidName { .. }), "{err}");
}

#[test]
fn deprecated_spellings_warn() {
    let (parsed, _) = run_env(
        &["--oml-exp-id", "d", "--oml-file", "out"],
        &[("OML_SERVER", "unused")],
    )
    .unwrap();
    let w = parsed.warnings.join("\n");
    assert!(
        w.contains("--oml-exp-id is deprecated; use --oml-domain"),
        "{w}"
    );
    assert!(w.contains("--oml-file is deprecated"), "{w}");
    assert!(!w.contains("OML_SERVER"), "not consulted: {w}");
    let (parsed, _) = run_env(&[], &[("OML_SERVER", "tcp:h:5")]).unwrap();
    let w = parsed.warnings.join("\n");
    assert!(w.contains("OML_SERVER is deprecated"), "{w}");
    assert!(w.contains("`tcp:HOST:PORT` is deprecated"), "{w}");
}
