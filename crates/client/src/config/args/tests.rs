use super::*;
use std::collections::HashMap;

fn argv(args: &[&str]) -> Vec<String> {
    std::iter::once("prog")
        .chain(args.iter().copied())
        .map(String::from)
        .collect()
}

fn no_env(_: &str) -> Option<String> {
    None
}

fn opts(args: &[&str]) -> Result<Options, ConfigError> {
    extract(&mut argv(args), &no_env)
}

#[test]
fn strips_options_and_keeps_the_rest_in_order() {
    let mut a = argv(&[
        "-x",
        "--oml-id",
        "n1",
        "file",
        "--oml-noop",
        "--oml-domain=d",
        "--",
        "--oml-text",
        "y",
    ]);
    let o = extract(&mut a, &no_env).unwrap();
    assert_eq!(a, argv(&["-x", "file", "--", "y"]));
    assert_eq!(o.id.as_deref(), Some("n1"));
    assert_eq!(o.domain.as_deref(), Some("d"));
    assert!(o.noop);
    assert_eq!(o.encoding, Some(Encoding::Text));
}

#[test]
fn argv0_is_never_an_option() {
    let mut a = vec!["--oml-id".to_string()];
    extract(&mut a, &no_env).unwrap();
    assert_eq!(a, ["--oml-id"]);
}

#[test]
fn errors_leave_argv_alone() {
    for args in [
        &["a", "--oml-id"][..],
        &["--oml-bogus", "x"],
        &["--oml-noop=1"],
        &["--oml-samples", "ten"],
    ] {
        let mut a = argv(args);
        assert!(extract(&mut a, &no_env).is_err(), "{args:?}");
        assert_eq!(a, argv(args));
    }
}

#[test]
fn error_kinds() {
    assert!(matches!(
        opts(&["--oml-collect"]),
        Err(ConfigError::MissingArgument { metavar: "URI", .. })
    ));
    assert!(matches!(
        opts(&["--oml-colect", "x"]),
        Err(ConfigError::UnknownOption { option }) if option == "--oml-colect"
    ));
    assert!(matches!(
        opts(&["--oml-help=yes"]),
        Err(ConfigError::UnexpectedArgument { .. })
    ));
    assert!(matches!(
        opts(&["--oml-collect", "::1"]),
        Err(ConfigError::Uri {
            origin: Some(Origin::Option(_)),
            ..
        })
    ));
    for bad in [
        &["--oml-samples", "-1"][..],
        &["--oml-interval", "0"],
        &["--oml-interval", "x"],
        &["--oml-bufsize", "0"],
        &["--oml-overload", "drop"],
        &["--oml-log-level", "9"],
        &["--oml-domain", "../x"],
        &["--oml-id", "a b"],
        &["--oml-id="],
        &["--oml-config", ""],
        &["--oml-log-file", ""],
    ] {
        assert!(
            matches!(opts(bad), Err(ConfigError::InvalidValue { .. })),
            "{bad:?}"
        );
    }
}

#[test]
fn last_occurrence_wins() {
    let o = opts(&[
        "--oml-collect",
        "h1",
        "--oml-file",
        "-",
        "--oml-text",
        "--oml-binary",
    ])
    .unwrap();
    assert_eq!(o.collect, Some(Uri::Stdout));
    assert_eq!(o.encoding, Some(Encoding::Binary));
    let o = opts(&["--oml-file", "out", "--oml-collect", "h1:9"]).unwrap();
    assert_eq!(
        o.collect,
        Some(Uri::Tcp {
            host: "h1".into(),
            port: 9
        })
    );
}

#[test]
fn values() {
    let o = opts(&[
        "--oml-samples=0",
        "--oml-interval",
        "2.5",
        "--oml-bufsize",
        "1M",
        "--oml-overload",
        "block:0.5",
        "--oml-instr-interval",
        "0",
        "--oml-log-file",
        "-",
        "--oml-log-level",
        "-2",
    ])
    .unwrap();
    assert_eq!(o.samples, Some(Window::Samples(1)));
    assert_eq!(o.interval, Some(Duration::from_millis(2500)));
    assert_eq!(o.bufsize, Some(1 << 20));
    assert_eq!(
        o.overload,
        Some(OverloadPolicy::Block {
            stall_limit: Some(Duration::from_millis(500))
        })
    );
    assert_eq!(o.instr_interval, None);
    assert_eq!(o.log_file, None);
    assert_eq!(o.log_level, -2);
    assert!(o.warnings.iter().any(|w| w.contains("interval wins")));
    for bad_instr in ["-1", "x", ""] {
        let o = opts(&["--oml-instr-interval", bad_instr]).unwrap();
        assert_eq!(o.instr_interval, None, "{bad_instr}");
    }
    assert_eq!(
        opts(&[]).unwrap().instr_interval,
        Some(Duration::from_secs(1))
    );
}

#[test]
fn environment_fills_gaps_only() {
    let vars: HashMap<&str, &str> = [
        ("OML_NAME", "env-id"),
        ("OML_DOMAIN", ""),
        ("OML_EXP_ID", "envdom"),
        ("OML_SERVER", "tcp:srv:4000"),
        ("OML_CONFIG", "c.xml"),
        ("OML_OVERLOAD", "drop-newest"),
    ]
    .into();
    let env = |n: &str| vars.get(n).map(|v| v.to_string());
    let o = extract(&mut argv(&["--oml-id", "cli"]), &env).unwrap();
    assert_eq!(o.id.as_deref(), Some("cli"));
    assert_eq!(o.domain.as_deref(), Some("envdom"));
    assert_eq!(
        o.collect,
        Some(Uri::Tcp {
            host: "srv".into(),
            port: 4000
        })
    );
    assert_eq!(o.config, Some(PathBuf::from("c.xml")));
    assert_eq!(o.overload, Some(OverloadPolicy::DropNewest));
    assert_eq!(o.warnings.len(), 3, "{:?}", o.warnings);
    // --oml-file also suppresses OML_COLLECT / OML_SERVER.
    let o = extract(&mut argv(&["--oml-file", "x"]), &env).unwrap();
    assert_eq!(o.collect, Some(Uri::File("x".into())));
    let bad = |n: &str| (n == "OML_OVERLOAD").then(|| "never".to_string());
    assert!(matches!(
        extract(&mut argv(&[]), &bad),
        Err(ConfigError::InvalidValue {
            origin: Origin::Env(_),
            ..
        })
    ));
}

#[test]
fn app_names() {
    assert_eq!(app_name("/usr/bin/ping").unwrap(), "ping");
    assert_eq!(app_name("ping").unwrap(), "ping");
    assert!(app_name("/usr/bin/").is_err());
    assert!(app_name("my-app").is_err());
}

#[test]
fn command_line_spec() {
    let o = opts(&["--oml-samples", "5", "--oml-bufsize", "4k"]).unwrap();
    let spec = o
        .into_spec("./bin/app", None, "2024-01-01t00.00.00+0000")
        .unwrap();
    assert_eq!(spec.app, "app");
    assert_eq!(spec.default_window, Window::Samples(5));
    let d = &spec.destinations[0];
    assert_eq!(d.uri, Uri::File("app_2024-01-01t00.00.00+0000".into()));
    assert_eq!(d.encoding, Encoding::Text);
    assert_eq!(d.policy, OverloadPolicy::Block { stall_limit: None });
    assert_eq!(d.bufsize, 4096);
    assert_eq!(d.streams, None);
    assert!(d.instrumentation);
}

#[test]
fn backchannel_option_and_environment() {
    assert_eq!(opts(&[]).unwrap().backchannel, None);
    let o = opts(&["--oml-backchannel", "feedback"]).unwrap();
    assert_eq!(o.backchannel, Some(Backchannel::Feedback));
    let o = opts(&["--oml-backchannel=resume"]).unwrap();
    assert_eq!(o.backchannel, Some(Backchannel::Resume));
    assert!(matches!(
        opts(&["--oml-backchannel", "yes"]),
        Err(ConfigError::InvalidValue { .. })
    ));
    let env = |n: &str| (n == "OML_BACKCHANNEL").then(|| "resume".to_string());
    let o = extract(&mut argv(&[]), &env).unwrap();
    assert_eq!(o.backchannel, Some(Backchannel::Resume));
    let o = extract(&mut argv(&["--oml-backchannel", "off"]), &env).unwrap();
    assert_eq!(
        o.backchannel,
        Some(Backchannel::Off),
        "the command line wins"
    );
    // It reaches the command-line destination.
    let mut a = argv(&[
        "--oml-collect",
        "tcp://srv",
        "--oml-backchannel",
        "feedback",
    ]);
    let parsed = parse("prog", &mut a, &no_env, "2024-05-01t12.00.00+0000").unwrap();
    let Outcome::Run(spec) = parsed.outcome else {
        panic!("{:?}", parsed.outcome)
    };
    assert_eq!(spec.destinations[0].backchannel, Backchannel::Feedback);
}

#[test]
fn clock_interval() {
    assert_eq!(
        opts(&[]).unwrap().clock_interval,
        Some(Duration::from_secs(60))
    );
    let o = opts(&["--oml-clock-interval", "2.5"]).unwrap();
    assert_eq!(o.clock_interval, Some(Duration::from_millis(2500)));
    for off in ["0", "-1", "x"] {
        let o = opts(&["--oml-clock-interval", off]).unwrap();
        assert_eq!(o.clock_interval, None, "{off}");
    }
    let env = |n: &str| (n == "OML_CLOCK_INTERVAL").then(|| "0".to_string());
    let mut argv = vec!["app".to_string()];
    assert_eq!(extract(&mut argv, &env).unwrap().clock_interval, None);
    let mut argv: Vec<String> = ["app", "--oml-clock-interval", "5"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        extract(&mut argv, &env).unwrap().clock_interval,
        Some(Duration::from_secs(5)),
        "the command line wins over the environment"
    );
}
