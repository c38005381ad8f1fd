use std::time::Duration;

use super::*;
use crate::spec::{OverloadPolicy, Uri, Window};

fn ok(text: &str) -> FileConfig {
    match parse(text, "t.xml") {
        Ok(c) => {
            // Whatever parses writes back to itself.
            let again = parse(&to_string(&c), "again.xml")
                .unwrap_or_else(|e| panic!("re-parse: {e}\n{}", to_string(&c)));
            assert_eq!(again, c, "{}", to_string(&c));
            c
        }
        Err(e) => panic!("{e}\n{text}"),
    }
}

fn err(text: &str) -> ConfigError {
    match parse(text, "t.xml") {
        Ok(c) => panic!("accepted: {c:?}\n{text}"),
        Err(e) => e,
    }
}

fn filter(field: &str, op: Option<&str>, rename: Option<&str>) -> FilterSpec {
    FilterSpec {
        field: field.into(),
        operation: op.map(Into::into),
        rename: rename.map(Into::into),
        properties: vec![],
    }
}

fn streams(c: &FileConfig, i: usize) -> &[StreamSpec] {
    c.destinations[i].streams.as_deref().unwrap()
}

#[test]
fn reference_example() {
    let c = ok(r#"<?xml version="1.0" encoding="UTF-8"?>
<!-- as in liboml2's documentation -->
<omlc domain="exp1" id="node1">
  <collect url="tcp://collector:3004" encoding="text">
    <stream mp="ping" name="ping_avg" samples="10">
      <filter field="rtt" operation="avg" rename="r"/>
      <filter field="ttl"/>
    </stream>
    <stream source="_client_instrumentation" interval="2.5"/>
  </collect>
  <collect url="file:all.oml"/>
</omlc>
"#);
    assert_eq!(c.domain.as_deref(), Some("exp1"));
    assert_eq!(c.id.as_deref(), Some("node1"));
    let d = &c.destinations[0];
    assert_eq!(
        d.uri,
        Uri::Tcp {
            host: "collector".into(),
            port: 3004
        }
    );
    assert_eq!(d.encoding, Encoding::Text);
    assert_eq!(
        d.policy,
        OverloadPolicy::Block {
            stall_limit: Some(Duration::from_secs(1))
        }
    );
    assert_eq!(d.bufsize, value::DEFAULT_BUFSIZE);
    assert!(d.instrumentation, "a stream names _client_instrumentation");
    let s = streams(&c, 0);
    assert_eq!(
        s[0],
        StreamSpec {
            mp: "ping".into(),
            name: Some("ping_avg".into()),
            window: Window::Samples(10),
            // Reverse document order.
            filters: vec![
                filter("ttl", None, None),
                filter("rtt", Some("avg"), Some("r"))
            ],
        }
    );
    assert_eq!(s[1].window, Window::Interval(Duration::from_millis(2500)));
    assert!(s[1].filters.is_empty());

    let all = &c.destinations[1];
    assert_eq!(all.uri, Uri::File("all.oml".into()));
    assert_eq!(
        all.encoding,
        Encoding::Binary,
        "XML defaults to binary, even for files"
    );
    assert_eq!(all.policy, OverloadPolicy::Block { stall_limit: None });
    assert_eq!(all.streams, None);
    assert!(all.instrumentation);
}

#[test]
fn legacy_spellings() {
    let c = ok(r#"<omlc experiment="old" id="n">
  <collect url="tcp:srv:3003">
    <mp name="ping" rename="p2" samples="0">
      <f pname="rtt" fname="sum" sname="x">
        <fp name="k" type="int32">7</fp>
      </f>
      <f pname="seq"/>
    </mp>
  </collect>
</omlc>"#);
    assert_eq!(c.domain.as_deref(), Some("old"));
    let s = &streams(&c, 0)[0];
    assert_eq!(s.mp, "ping");
    assert_eq!(s.name.as_deref(), Some("p2"));
    assert_eq!(s.window, Window::Samples(1), "samples=0 means 1");
    assert_eq!(s.filters[0], filter("seq", None, None));
    assert_eq!(s.filters[1].field, "rtt");
    assert_eq!(s.filters[1].operation.as_deref(), Some("sum"));
    assert_eq!(s.filters[1].rename.as_deref(), Some("x"));
    assert_eq!(
        s.filters[1].properties,
        [filters::Property {
            name: "k".into(),
            ty: "int32".into(),
            value: "7".into()
        }]
    );
    assert!(!c.destinations[0].instrumentation);
    let c = ok(r#"<omlc exp_id="legacy2"><collect url="h"/></omlc>"#);
    assert_eq!(c.domain.as_deref(), Some("legacy2"));
}

/// liboml2 reads each filter attribute under both spellings on both
/// elements; its shipped example (example/liboml2-conf/config.xml) writes
/// `<f pname="phase" fname="avg" rename="t"/>`.
#[test]
fn filter_attribute_synonyms_on_either_element() {
    for (el, f, o, r) in [
        ("f", "pname", "fname", "rename"),
        ("f", "field", "operation", "sname"),
        ("filter", "pname", "fname", "sname"),
        ("filter", "field", "fname", "rename"),
    ] {
        let c = ok(&format!(
            r#"<omlc domain="d"><collect url="h"><stream mp="m" samples="1"><{el} {f}="phase" {o}="avg" {r}="t"/></stream></collect></omlc>"#
        ));
        let s = &streams(&c, 0)[0];
        assert_eq!(s.filters[0].field, "phase", "<{el} {f} {o} {r}>");
        assert_eq!(s.filters[0].operation.as_deref(), Some("avg"));
        assert_eq!(s.filters[0].rename.as_deref(), Some("t"));
    }
    let e = err(r#"<omlc domain="d"><collect url="h"><stream mp="m" samples="1"><f pname="a" field="b"/></stream></collect></omlc>"#)
        .to_string();
    assert!(e.contains("pname") && e.contains("field"), "{e}");
}

#[test]
fn extensions_and_properties() {
    let c = ok(r#"<omlc>
  <collect url="file:-" encoding="BINARY" overload="drop-oldest" bufsize="1M">
    <stream mp="m" interval="1">
      <filter field="v" operation="quantile">
        <property name="q">
           0.5,0.99
        </property>
        <property name="esc" type="string">a &lt;&amp;&gt; b&#x21;<![CDATA[ <raw> ]]></property>
        <property name="empty"/>
      </filter>
    </stream>
  </collect>
</omlc>"#);
    let d = &c.destinations[0];
    assert_eq!(d.uri, Uri::Stdout);
    assert_eq!(d.encoding, Encoding::Binary);
    assert_eq!(d.policy, OverloadPolicy::DropOldest);
    assert_eq!(d.bufsize, 1 << 20);
    let props = &streams(&c, 0)[0].filters[0].properties;
    assert_eq!(props[0].value, "0.5,0.99");
    assert_eq!(props[0].ty, "string");
    assert_eq!(props[1].value, "a <&> b! <raw>");
    assert_eq!(props[2].value, "");
    assert_eq!(c.id, None);
    assert_eq!(c.domain, None);
}

#[test]
fn structure_errors_name_file_line_and_alternatives() {
    let e = err("<config/>");
    assert!(matches!(e, ConfigError::WrongRoot { ref found, .. } if found == "config"));
    let e = err("<omlc>\n  <collect url=\"h\">\n    <strem mp=\"x\"/>\n  </collect>\n</omlc>");
    assert_eq!(
        e.to_string(),
        "t.xml:3: unknown element <strem> inside <collect>; allowed child elements: `stream`, `mp`"
    );
    let e = err("<omlc>\n<collect url=\"h\" encodng=\"text\"/></omlc>");
    assert_eq!(e.location().unwrap().line, Some(2));
    assert!(
        e.to_string()
            .contains("unknown attribute `encodng` of <collect>"),
        "{e}"
    );
    assert!(e.to_string().contains("`encoding`"), "{e}");
    let e = err("<omlc><collect/></omlc>");
    assert_eq!(e.to_string(), "t.xml:1: <collect> needs `url`");
    let e = err("<omlc domain=\"a\" experiment=\"b\"><collect url=\"h\"/></omlc>");
    assert!(matches!(e, ConfigError::Conflict { .. }), "{e}");
    let e = err(
        "<omlc><collect url=\"h\"><stream mp=\"a\" source=\"b\" samples=\"1\"/></collect></omlc>",
    );
    assert!(matches!(e, ConfigError::Conflict { .. }), "{e}");
    let e = err("<omlc></omlc>");
    assert!(matches!(e, ConfigError::NoDestination { .. }), "{e}");
    let e = err("<omlc><collect url=\"h\">junk</collect></omlc>");
    assert!(
        matches!(e, ConfigError::UnexpectedText { ref text, .. } if text == "junk"),
        "{e}"
    );
    let e = err("<omlc><property name=\"x\"/></omlc>");
    assert!(matches!(e, ConfigError::UnknownElement { .. }), "{e}");
}

#[test]
fn syntax_errors() {
    for (text, line) in [
        ("", 1),
        ("<omlc>\n<collect url=\"h\">\n", 2),
        ("<omlc><collect url=\"h\"></omlc>", 1),
        ("<omlc/>\n<omlc/>", 2),
        ("<omlc/>\ntext", 2),
        ("<omlc a=\"1\" a=\"2\"/>", 1),
        ("<omlc id='x\"/>", 1),
        ("<omlc><collect url=\"h\"><stream mp=\"m\" samples=\"1\"><filter field=\"f\"><property name=\"p\">&bogus;</property></filter></stream></collect></omlc>", 1),
        ("<omlc id=\"&bogus;\"><collect url=\"h\"/></omlc>", 1),
        ("<omlc>\n\n<!-- a -- b --><collect url=\"h\"/></omlc>", 3),
    ] {
        let e = parse(text, "t.xml").unwrap_err();
        assert!(
            matches!(e, ConfigError::Syntax { .. } | ConfigError::UnknownAttribute { .. }),
            "{text:?}: {e:?}"
        );
        assert_eq!(e.location().unwrap().line, Some(line), "{text:?}: {e}");
    }
}

#[test]
fn window_rules() {
    let stream = |attrs: &str| {
        parse(
            &format!("<omlc><collect url=\"h\"><stream mp=\"m\" {attrs}/></collect></omlc>"),
            "t.xml",
        )
        .map(|c| streams(&c, 0)[0].window)
    };
    assert_eq!(stream("samples=\"3\"").unwrap(), Window::Samples(3));
    assert_eq!(
        stream("interval=\".5\"").unwrap(),
        Window::Interval(Duration::from_millis(500))
    );
    assert!(matches!(stream(""), Err(ConfigError::Missing { .. })));
    assert!(matches!(
        stream("samples=\"1\" interval=\"1\""),
        Err(ConfigError::Conflict { .. })
    ));
    for bad in [
        "samples=\"-1\"",
        "samples=\"x\"",
        "samples=\"\"",
        "interval=\"0\"",
        "interval=\"-2\"",
        "interval=\"soon\"",
    ] {
        assert!(
            matches!(stream(bad), Err(ConfigError::InvalidValue { .. })),
            "{bad}"
        );
    }
    let e = stream("samples=\"-1\"").unwrap_err().to_string();
    assert!(e.contains("attribute `samples` of <stream>"), "{e}");
}

#[test]
fn values_are_checked() {
    let one = |collect: &str, stream: &str| {
        parse(
            &format!(
                "<omlc><collect {collect}><stream mp=\"m\" samples=\"1\" {stream}/></collect></omlc>"
            ),
            "t.xml",
        )
    };
    for (collect, stream) in [
        ("url=\"::1\"", ""),
        ("url=\"udp:h\"", ""),
        ("url=\"h\" encoding=\"json\"", ""),
        ("url=\"h\" overload=\"sometimes\"", ""),
        ("url=\"h\" bufsize=\"0\"", ""),
        ("url=\"h\"", "name=\"bad name\""),
        ("url=\"h\"", "name=\"\""),
    ] {
        let e = one(collect, stream).unwrap_err();
        assert!(e.location().is_some(), "{collect} {stream}: {e}");
    }
    let e = one("url=\"::1\"", "").unwrap_err().to_string();
    assert!(
        e.starts_with("t.xml:1: attribute `url` of <collect>: invalid collection URI `::1`"),
        "{e}"
    );
    let bad_name = |xml: &str| {
        matches!(
            parse(xml, "t.xml"),
            Err(ConfigError::InvalidName { .. } | ConfigError::InvalidValue { .. })
        )
    };
    assert!(bad_name("<omlc id=\"a b\"><collect url=\"h\"/></omlc>"));
    assert!(bad_name(
        "<omlc domain=\"../x\"><collect url=\"h\"/></omlc>"
    ));
    assert!(bad_name(
        "<omlc><collect url=\"h\"><stream mp=\"9x\" samples=\"1\"/></collect></omlc>"
    ));
    for f in [
        "<filter field=\"a-b\"/>",
        "<filter field=\"a\" operation=\"av g\"/>",
        "<filter field=\"a\" rename=\"\"/>",
        "<filter field=\"a\"><property name=\"\"/></filter>",
        "<filter field=\"a\"><property name=\"p\" type=\"int\"/></filter>",
    ] {
        let xml = format!(
            "<omlc><collect url=\"h\"><stream mp=\"m\" samples=\"1\">{f}</stream></collect></omlc>"
        );
        assert!(bad_name(&xml), "{f}");
    }
    assert!(matches!(
        parse(
            "<omlc><collect url=\"h\"><stream mp=\"m\" samples=\"1\"><filter/></stream></collect></omlc>",
            "t.xml"
        ),
        Err(ConfigError::Missing { .. })
    ));
}

#[test]
fn writer_escapes() {
    let c = FileConfig {
        id: Some("a&b\"<'>".into()),
        domain: None,
        destinations: vec![DestinationSpec {
            uri: Uri::File("we ird\n&\t\r.oml".into()),
            encoding: Encoding::Text,
            policy: OverloadPolicy::Block {
                stall_limit: Some(Duration::new(2, 5)),
            },
            bufsize: 1,
            streams: None,
            instrumentation: true,
            backchannel: Default::default(),
        }],
    };
    let text = to_string(&c);
    assert_eq!(parse(&text, "w.xml").unwrap(), c, "{text}");
}

#[test]
fn escaping_keeps_whitespace_and_drops_what_xml_forbids() {
    assert_eq!(
        escape("a<b>&\"c'\t\n\r\u{1}"),
        "a&lt;b&gt;&amp;&quot;c&apos;&#9;&#10;&#13;\u{fffd}"
    );
}

#[test]
fn control_characters_xml_forbids_are_refused() {
    const HEAD: &str = "<omlc><collect url='h'><stream mp='m' samples='1'><filter field='a'>";
    const TAIL: &str = "</filter></stream></collect></omlc>";
    for body in [
        "<property name='u'>a\u{1a}b</property>",
        "<property name='u'>a&#x1A;b</property>",
        "<property name='u\u{1}'>a</property>",
    ] {
        let e = err(&format!("{HEAD}{body}{TAIL}"));
        assert!(e.to_string().contains("control character"), "{body}: {e}");
    }
    let e = err("<omlc><collect url='file:a&#7;b'/></omlc>");
    assert!(e.to_string().contains("U+0007"), "{e}");
    ok(&format!("{HEAD}<property name='u'>a&#9;b</property>{TAIL}"));
}
