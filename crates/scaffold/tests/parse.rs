//! The description parser: every form of spec section 10 (in
//! `fixtures/forms.rb`), the TOML form and conversion both ways, and every
//! kind of bad input with its exact file:line:col.

mod common;

use common::fixture;
use scaffold::gen::{Options, Output};
use scaffold::model::{DeclType, IntAlias, Literal, MetricType};
use scaffold::{parse_rb, parse_toml, to_toml, Error};

fn load_forms() -> scaffold::App {
    let (app, warnings) = scaffold::load(&fixture("forms.rb")).unwrap();
    // The two OMF 5.3 properties and the deprecated metric types warn.
    let w: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert!(
        w.iter().any(|m| m.contains(
            "forms.rb:28:19: warning: obsolescent (OMF 5.3) declaration of property `interval`"
        )),
        "{w:#?}"
    );
    assert!(w.iter().any(|m| m.contains("property `target`")), "{w:#?}");
    assert!(
        w.iter().any(|m| m.contains(":long is deprecated")),
        "{w:#?}"
    );
    app
}

#[test]
fn every_form_of_the_language_parses() {
    let app = load_forms();
    assert_eq!(app.name.value, "forms");
    assert_eq!(app.uri, "someone:app:forms");
    assert_eq!(app.version_string(), "1.2.0");
    assert_eq!(
        app.short_description.as_deref(),
        Some("Double \"quoted\"\twith escapes")
    );
    assert_eq!(
        app.description.as_deref(),
        Some("Multi-line {nested}\ndescription")
    );
    assert_eq!(app.path.as_deref(), Some("/opt/forms/bin/forms"));

    let p = |n: &str| app.properties.iter().find(|p| p.name.value == n).unwrap();
    assert_eq!(
        (p("verbose").short_name, p("verbose").long_name.as_str()),
        (Some('v'), "verbose")
    );
    let rate = p("rate");
    assert_eq!(
        (rate.short_name, rate.mnemonic, rate.long_name.as_str()),
        (Some('r'), Some('r'), "rate")
    );
    assert_eq!(rate.unit.as_deref(), Some("packets/s"));
    assert_eq!(rate.default.as_ref().unwrap().value, Literal::Float(2.5));
    let dest = p("dest-host");
    assert_eq!(
        (dest.long_name.as_str(), dest.var_name.value.as_str()),
        ("dest", "dst")
    );
    assert_eq!(dest.ty.decl, DeclType::Known(MetricType::String));
    assert_eq!(p("size").ty.decl, DeclType::Known(MetricType::UInt32));
    assert_eq!(p("size").default.as_ref().unwrap().value, Literal::Int(64));
    assert_eq!(p("n").ty.decl, DeclType::Int);
    assert_eq!(p("old").ty.decl, DeclType::Known(MetricType::Long));
    assert_eq!(p("ratio").ty.decl, DeclType::Known(MetricType::Double));
    assert_eq!(p("quiet").ty.decl, DeclType::Known(MetricType::Boolean));
    assert_eq!(p("real_one").var_name.value, "real_one");
    let interval = p("interval");
    assert_eq!(interval.parameter.as_deref(), Some("-i"));
    assert_eq!(
        (interval.short_name, interval.mnemonic),
        (Some('i'), Some('i'))
    );
    let target = p("target");
    assert_eq!(
        (target.parameter.as_deref(), target.long_name.as_str()),
        (Some("--target"), "target")
    );
    assert_eq!(target.var_name.value, "tgt");
    assert_eq!(
        target.default.as_ref().unwrap().value,
        Literal::Str("x".into())
    );

    let probe = &app.measurements[0];
    assert_eq!(probe.name.value, "probe");
    assert_eq!(
        probe.metrics[1].description.as_deref(),
        Some("round-trip time")
    );
    assert_eq!(probe.metrics[2].unit.as_deref(), Some("name"));
    assert_eq!(
        probe.metrics[2].ty.decl,
        DeclType::Known(MetricType::String)
    );
    let every = &app.measurements[1];
    let types: Vec<MetricType> = every
        .metrics
        .iter()
        .map(|m| m.ty.decl.resolve(IntAlias::Int32))
        .collect();
    for t in MetricType::ALL {
        assert!(types.contains(&t), "{t:?} missing");
    }
    assert_eq!(
        every
            .metrics
            .last()
            .unwrap()
            .ty
            .decl
            .resolve(IntAlias::Long),
        MetricType::Long
    );
    assert_eq!((every.name.loc.line, every.name.loc.col), (37, 22));
}

#[test]
fn toml_form_round_trips() {
    let app = load_forms();
    let toml = to_toml(&app);
    let back = parse_toml(&toml, "forms.toml").unwrap();
    let rb = scaffold::rb_form::to_rb(&back, "converted");
    let (again, _) = parse_rb(&rb, "forms2.rb").unwrap();
    // Same generated code from all three.
    let outputs = [
        Output::OmlHeader,
        Output::PoptHeader,
        Output::Python,
        Output::Rust,
    ];
    let gen = |a: &scaffold::App| -> Vec<String> {
        scaffold::plan(a, &outputs, &Options::default(), std::path::Path::new("."))
            .unwrap()
            .into_iter()
            .map(|f| f.contents)
            .collect()
    };
    assert_eq!(gen(&app), gen(&back));
    assert_eq!(gen(&app), gen(&again));
}

fn rb_error(text: &str) -> Vec<String> {
    match parse_rb(text, "bad.rb") {
        Err(Error::Description(errs)) => errs.iter().map(ToString::to_string).collect(),
        other => panic!("expected description errors, got {other:?}"),
    }
}

fn app(body: &str) -> String {
    format!("defApplication('u:app:x', 'x') do |app|\n{body}end\n")
}

fn mp(metrics: &str) -> String {
    app(&format!(
        "  app.defMeasurement('m') do |mp|\n{metrics}  end\n"
    ))
}

#[test]
fn unknown_types_are_located() {
    let e = rb_error(&mp(
        "    mp.defMetric('a', :int32)\n    mp.defMetric('flag', :bool)\n",
    ));
    assert_eq!(e.len(), 1);
    assert!(
        e[0].starts_with("bad.rb:4:26: error: unknown type `bool` (did you mean :boolean?)"),
        "{e:?}"
    );
    let e = rb_error(&mp("    mp.defMetric('a', 'int8')\n"));
    assert!(
        e[0].starts_with("bad.rb:3:23: error: unknown type `int8`"),
        "{e:?}"
    );
    let e = rb_error(&app(
        "  app.defProperty('p', 'd', '--p', :type => :short)\n",
    ));
    assert!(
        e[0].starts_with("bad.rb:2:45: error: unknown type `short`"),
        "{e:?}"
    );
}

#[test]
fn duplicates_are_located_with_the_first_definition() {
    let e = rb_error(&mp(
        "    mp.defMetric('a', :int32)\n    mp.defMetric('a', :double)\n",
    ));
    assert_eq!(
        e,
        ["bad.rb:4:18: error: duplicate metric `a` (first defined at bad.rb:3:18)"]
    );
    let two = app("  app.defMeasurement('m') do |mp|\n    mp.defMetric('a', :int32)\n  end\n  app.defMeasurement('m') do |mp|\n    mp.defMetric('a', :int32)\n  end\n");
    assert_eq!(
        rb_error(&two),
        ["bad.rb:5:22: error: duplicate measurement point `m` (first defined at bad.rb:2:22)"]
    );
    let props = app("  app.defProperty('p', 'd', '-p', :type => :int32)\n  app.defProperty('p', 'd', '-q', :type => :int32)\n");
    let e = rb_error(&props);
    assert!(
        e.iter()
            .any(|m| m.starts_with("bad.rb:3:19: error: duplicate property variable `p`")),
        "{e:?}"
    );
}

#[test]
fn property_types_and_missing_type() {
    for (ty, col) in [(":blob", 45), (":guid", 45), (":vector_int32", 45)] {
        let e = rb_error(&app(&format!(
            "  app.defProperty('p', 'd', '--p', :type => {ty})\n"
        )));
        assert!(
            e[0].starts_with(&format!(
                "bad.rb:2:{col}: error: property `p` cannot be of type"
            )),
            "{e:?}"
        );
    }
    let e = rb_error(&app("  app.defProperty('p', 'd', '--p', :unit => 's')\n"));
    assert_eq!(e.len(), 1);
    assert!(
        e[0].starts_with("bad.rb:2:7: error: property `p` has no `:type`"),
        "{e:?}"
    );
}

#[test]
fn names_that_are_not_identifiers() {
    let e = rb_error(&mp(
        "    mp.defMetric('2fast', :int32)\n    mp.defMetric('with space', :int32)\n",
    ));
    assert!(
        e[0].starts_with("bad.rb:3:18: error: metric name `2fast` is not an identifier"),
        "{e:?}"
    );
    assert!(
        e[1].starts_with("bad.rb:4:18: error: metric name `with space`"),
        "{e:?}"
    );
    let e = rb_error(&app(
        "  app.defMeasurement('a-b') do |mp|\n    mp.defMetric('x', :int32)\n  end\n",
    ));
    assert!(
        e[0].starts_with("bad.rb:2:22: error: measurement point name `a-b`"),
        "{e:?}"
    );
}

/// Keywords are refused for the languages being generated only.
#[test]
fn reserved_words_per_target_language() {
    let text = mp("    mp.defMetric('int', :int32)\n    mp.defMetric('class', :string)\n    mp.defMetric('type', :double)\n");
    let (parsed, _) = parse_rb(&text, "kw.rb").unwrap();
    let errs = |out: Output| -> Vec<String> {
        match scaffold::plan(
            &parsed,
            &[out],
            &Options::default(),
            std::path::Path::new("."),
        ) {
            Err(Error::Description(e)) => e.iter().map(ToString::to_string).collect(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(
        errs(Output::OmlHeader),
        ["kw.rb:3:18: error: metric name `int` is reserved in the generated C code; rename it"]
    );
    assert_eq!(errs(Output::Python), ["kw.rb:4:18: error: metric name `class` is reserved in the generated Python code; rename it"]);
    assert_eq!(errs(Output::Rust), ["kw.rb:5:18: error: metric name `type` is reserved in the generated Rust code; rename it"]);
    let blob_len = mp("    mp.defMetric('b', :blob)\n    mp.defMetric('b_len', :int32)\n");
    let e = rb_error(&blob_len);
    assert!(
        e[0].starts_with(
            "bad.rb:4:18: error: metric `b_len` clashes with the length argument of `b`"
        ),
        "{e:?}"
    );
}

#[test]
fn ruby_outside_the_subset_is_refused_where_written() {
    let cases = [
        (
            "x = 5\n",
            "bad.rb:1:1: error: assignment to the variable `x`",
        ),
        (
            "require 'foo'\n",
            "bad.rb:1:1: error: unknown top-level call `require`",
        ),
        (
            &app("  app.version(\"#{1}\")\n") as &str,
            "bad.rb:2:16: error: string interpolation",
        ),
        (
            &app("  app.defProperty(name, 'd', '-x', :type => :int32)\n"),
            "bad.rb:2:19: error: `name` is a variable or method call",
        ),
        (
            &app("  app.frobnicate(1)\n"),
            "bad.rb:2:7: error: unknown application method `frobnicate`",
        ),
        (
            &app("  other.version(1)\n"),
            "bad.rb:2:3: error: `other` is not defined here; the block parameter is `app`",
        ),
        (
            &app("  app.defMeasurement('m') do |mp|\n    mp.defMetric('a', :int32\n  end\n"),
            "bad.rb:4:3: error: expected `)`",
        ),
        (
            "defApplication('a:b', 'b') do |app|\n  app.path = '/x\n",
            "bad.rb:2:14: error: string is not closed",
        ),
        (
            &app("  app.defProperty('p', 'd', '-p', :type => :int32, :colour => 'red')\n"),
            "bad.rb:2:52: error: unknown option `:colour`",
        ),
        (
            &app("  app.defProperty('p', 'd', '-p', :type => :int32, :mnemonic => 'pp')\n"),
            "bad.rb:2:65: error: `:mnemonic` must be a single letter",
        ),
        (
            &app("  app.defMeasurement('m') do |mp|\n  end\n"),
            "bad.rb:2:22: error: measurement point `m` has no metrics",
        ),
        ("# nothing\n", "bad.rb:1:1: error: no defApplication"),
    ];
    for (text, want) in cases {
        let e = rb_error(text);
        assert!(e[0].starts_with(want), "{text}\n→ {e:?}\nwanted {want}");
    }
}

#[test]
fn toml_errors_are_located() {
    let bad_type = "[application]\nuri = \"a:app:t\"\n\n[[measurement]]\nname = \"m\"\nmetrics = [{ name = \"x\", type = \"bool\" }]\n";
    let e = parse_toml(bad_type, "t.toml").unwrap_err().to_string();
    assert!(
        e.starts_with("t.toml:6:33: error: unknown type `bool`"),
        "{e}"
    );
    let unknown_key = "[application]\nuri = \"a:app:t\"\ncolour = \"red\"\n";
    let e = parse_toml(unknown_key, "t.toml").unwrap_err().to_string();
    assert!(
        e.starts_with("t.toml:3:1: error: unknown field `colour`"),
        "{e}"
    );
    let no_type = "[application]\nuri = \"a:app:t\"\n\n[[property]]\nname = \"p\"\n";
    let e = parse_toml(no_type, "t.toml").unwrap_err().to_string();
    assert!(e.contains("missing field `type`"), "{e}");
    let dup = "[application]\nuri = \"a:app:t\"\n[[measurement]]\nname = \"m\"\nmetrics = [{ name = \"x\", type = \"int32\" }, { name = \"x\", type = \"double\" }]\n";
    let e = parse_toml(dup, "t.toml").unwrap_err().to_string();
    assert!(
        e.starts_with("t.toml:5:53: error: duplicate metric `x` (first defined at t.toml:5:21)"),
        "{e}"
    );
}

/// Every problem of a description is reported in one run, in file order.
#[test]
fn all_problems_are_reported_at_once() {
    let text = "defApplication('a:app:bad', 'bad') do |app|\n  app.defMeasurement('m') do |mp|\n    mp.defMetric('label', :string)\n    mp.defMetric('flag', :bool)\n    mp.defMetric('label', :uint32)\n  end\n  app.defProperty('key', 'A key', '--key', :type => :blob)\n  app.defProperty('rate', 'A rate', '--rate', :unit => 'pkt/s')\nend\n";
    let e = rb_error(text);
    let at: Vec<&str> = e
        .iter()
        .map(|m| m.split(": error").next().unwrap())
        .collect();
    assert_eq!(
        at,
        ["bad.rb:4:26", "bad.rb:5:18", "bad.rb:7:53", "bad.rb:8:7"],
        "{e:#?}"
    );
}

/// Python classes and Rust structs are named after measurement points.
#[test]
fn generated_type_names_must_be_distinct_and_free() {
    let text = app("  app.defMeasurement('if_stats') do |mp|\n    mp.defMetric('x', :int32)\n  end\n  app.defMeasurement('ifStats') do |mp|\n    mp.defMetric('x', :int32)\n  end\n  app.defMeasurement('options') do |mp|\n    mp.defMetric('x', :int32)\n  end\n");
    let (parsed, _) = parse_rb(&text, "t.rb").unwrap();
    let errs = match scaffold::plan(
        &parsed,
        &[Output::Rust],
        &Options::default(),
        std::path::Path::new("."),
    ) {
        Err(Error::Description(e)) => e.iter().map(ToString::to_string).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        errs,
        [
            "t.rb:5:22: error: duplicate generated type name `IfStats` (first defined at t.rb:2:22)",
            "t.rb:8:22: error: measurement point `options` would be the type `Options`, which the generated module already defines; rename it",
        ]
    );
    // C names nothing after them: fine there.
    assert!(scaffold::plan(
        &parsed,
        &[Output::OmlHeader],
        &Options::default(),
        std::path::Path::new(".")
    )
    .is_ok());
}
