use std::time::Duration;

use super::*;
use crate::spec::{Encoding, OverloadPolicy, Uri, Window};

fn ok(text: &str) -> FileConfig {
    let c = parse(text, "t.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    // Everything TOML says, the XML writer can say too.
    let xml = crate::config::xml::to_string(&c);
    assert_eq!(
        crate::config::xml::parse(&xml, "x.xml").unwrap(),
        c,
        "{xml}"
    );
    c
}

fn err(text: &str) -> ConfigError {
    match parse(text, "t.toml") {
        Ok(c) => panic!("accepted {c:?}\n{text}"),
        Err(e) => e,
    }
}

#[test]
fn full_example() {
    let c = ok(r#"
domain = "exp1"
id = "node1"

[[collect]]
url = "tcp://localhost:3003"
encoding = "binary"
overload = "block"
bufsize = 67108864

[[collect.stream]]
mp = "ping"
name = "ping_avg"
samples = 10

[[collect.stream.filter]]
field = "rtt"
operation = "avg"
rename = "r"
properties = { q = "0.5,0.99", n = 3, x = 1.5, on = true, w = { type = "int32", value = "5" } }

[[collect.stream.filter]]
field = "ttl"

[[collect.stream]]
mp = "_client_instrumentation"
interval = 2

[[collect]]
url = "file:out.oml"
"#);
    assert_eq!(c.domain.as_deref(), Some("exp1"));
    assert_eq!(c.id.as_deref(), Some("node1"));
    let d = &c.destinations[0];
    assert_eq!(
        d.uri,
        Uri::Tcp {
            host: "localhost".into(),
            port: 3003
        }
    );
    assert_eq!(d.encoding, Encoding::Binary);
    assert_eq!(d.policy, OverloadPolicy::Block { stall_limit: None });
    assert_eq!(d.bufsize, 64 << 20);
    assert!(d.instrumentation);
    let s = d.streams.as_ref().unwrap();
    assert_eq!(s[0].mp, "ping");
    assert_eq!(s[0].name.as_deref(), Some("ping_avg"));
    assert_eq!(s[0].window, Window::Samples(10));
    // Document order.
    assert_eq!(s[0].filters[0].field, "rtt");
    assert_eq!(s[0].filters[0].operation.as_deref(), Some("avg"));
    assert_eq!(s[0].filters[0].rename.as_deref(), Some("r"));
    assert_eq!(s[0].filters[1].field, "ttl");
    let props: Vec<(&str, &str, &str)> = s[0].filters[0]
        .properties
        .iter()
        .map(|p| (p.name.as_str(), p.ty.as_str(), p.value.as_str()))
        .collect();
    assert_eq!(
        props,
        [
            ("q", "string", "0.5,0.99"),
            ("n", "int64", "3"),
            ("x", "double", "1.5"),
            ("on", "bool", "true"),
            ("w", "int32", "5"),
        ]
    );
    assert_eq!(s[1].window, Window::Interval(Duration::from_secs(2)));

    let f = &c.destinations[1];
    assert_eq!(f.encoding, Encoding::Text, "TOML defaults files to text");
    assert_eq!(f.policy, OverloadPolicy::Block { stall_limit: None });
    assert_eq!(f.streams, None);
    assert!(f.instrumentation);
}

#[test]
fn defaults_and_extensions() {
    let c = ok(r#"
[[collect]]
url = "srv:4000"
bufsize = "2k"
stream = []

[[collect]]
url = "flush:x"
overload = "block:0.25"
encoding = "binary"
"#);
    let d = &c.destinations[0];
    assert_eq!(d.encoding, Encoding::Binary);
    assert_eq!(
        d.policy,
        OverloadPolicy::Block {
            stall_limit: Some(Duration::from_secs(1))
        }
    );
    assert_eq!(d.bufsize, 2048);
    assert_eq!(d.streams, None, "an empty stream list is the same as none");
    let d = &c.destinations[1];
    assert_eq!(d.uri, Uri::FlushFile("x".into()));
    assert_eq!(
        d.policy,
        OverloadPolicy::Block {
            stall_limit: Some(Duration::from_millis(250))
        }
    );
    let c = ok("[[collect]]\nurl='h'\n[[collect.stream]]\nmp='m'\nsamples=0\n");
    let d = &c.destinations[0];
    assert!(!d.instrumentation);
    assert_eq!(d.streams.as_ref().unwrap()[0].window, Window::Samples(1));
}

#[test]
fn unknown_keys_name_line_and_alternatives() {
    let e = err("[[collect]]\nurl = \"h\"\n\n[[collect.stream]]\nmp = \"m\"\nsmaples = 3\n");
    let msg = e.to_string();
    assert!(
        msg.starts_with("t.toml:6: unknown field `smaples`"),
        "{msg}"
    );
    assert!(msg.contains("`samples`"), "{msg}");
    let e = err("domian = \"x\"\n");
    assert!(e.to_string().contains("unknown field `domian`"), "{e}");
    let e = err("[[collect]]\n");
    assert!(e.to_string().contains("missing field `url`"), "{e}");
    let e = err("[[collect]]\nurl = 3\n");
    assert_eq!(e.location().unwrap().line, Some(2), "{e}");
    let e = err("x = [\n");
    assert!(matches!(e, ConfigError::Syntax { .. }), "{e}");
}

#[test]
fn validation_matches_the_xml() {
    let e = err("");
    assert!(matches!(e, ConfigError::NoDestination { .. }), "{e}");
    let e = err("[[collect]]\nurl='h'\n[[collect.stream]]\nmp='m'\n");
    assert_eq!(
        e.to_string(),
        "t.toml:3: [[collect.stream]] needs `samples` or `interval`"
    );
    let e = err("[[collect]]\nurl='h'\n[[collect.stream]]\nmp='m'\nsamples=1\ninterval=1.0\n");
    assert!(matches!(e, ConfigError::Conflict { .. }), "{e}");
    for bad in [
        "domain='a/b'\n[[collect]]\nurl='h'",
        "id=''\n[[collect]]\nurl='h'",
        "[[collect]]\nurl='::1'",
        "[[collect]]\nurl='h'\nencoding='xml'",
        "[[collect]]\nurl='h'\noverload='x'",
        "[[collect]]\nurl='h'\nbufsize=0",
        "[[collect]]\nurl='h'\nbufsize=-5",
        "[[collect]]\nurl='h'\nbufsize='lots'",
        "[[collect]]\nurl='h'\n[[collect.stream]]\nmp='m'\nsamples=-1",
        "[[collect]]\nurl='h'\n[[collect.stream]]\nmp='m'\ninterval=0",
        "[[collect]]\nurl='h'\n[[collect.stream]]\nmp='m'\ninterval=-1.5",
        "[[collect]]\nurl='h'\n[[collect.stream]]\nmp='m'\ninterval=inf",
        "[[collect]]\nurl='h'\n[[collect.stream]]\nmp='m m'\nsamples=1",
        "[[collect]]\nurl='h'\n[[collect.stream]]\nmp='m'\nname='1'\nsamples=1",
        "[[collect]]\nurl='h'\n[[collect.stream]]\nmp='m'\nsamples=1\n[[collect.stream.filter]]\nfield='a.b'",
        "[[collect]]\nurl='h'\n[[collect.stream]]\nmp='m'\nsamples=1\n[[collect.stream.filter]]\nfield='a'\noperation=''",
        "[[collect]]\nurl='h'\n[[collect.stream]]\nmp='m'\nsamples=1\n[[collect.stream.filter]]\nfield='a'\nproperties={p=[1]}",
        "[[collect]]\nurl='h'\n[[collect.stream]]\nmp='m'\nsamples=1\n[[collect.stream.filter]]\nfield='a'\nproperties={p={type='int',value=1}}",
        "[[collect]]\nurl='h'\n[[collect.stream]]\nmp='m'\nsamples=1\n[[collect.stream.filter]]\nfield='a'\nproperties={p={type='int32'}}",
    ] {
        let e = err(bad);
        assert!(e.location().is_some(), "{bad}: {e}");
    }
}

#[test]
fn error_lines_point_at_the_table() {
    let e = err("[[collect]]\nurl='h'\n\n[[collect.stream]]\nmp='m'\nsamples=1\n\n[[collect.stream]]\nmp='bad-name'\nsamples=1\n");
    assert_eq!(e.location().unwrap().line, Some(8), "{e}");
    assert!(
        e.to_string().contains("key `mp` of [[collect.stream]]"),
        "{e}"
    );
}

#[test]
fn keys_list_what_the_parser_accepts() {
    let prefix = [
        "",
        "[[collect]]\nurl='h'\n",
        "[[collect]]\nurl='h'\n[[collect.stream]]\nmp='m'\nsamples=1\n",
        "[[collect]]\nurl='h'\n[[collect.stream]]\nmp='m'\nsamples=1\n[[collect.stream.filter]]\nfield='f'\n",
    ];
    for ((table, keys), prefix) in KEYS.iter().zip(prefix) {
        let msg = err(&format!("{prefix}zzz_unknown = 1\n")).to_string();
        let expected = msg
            .split("expected one of ")
            .nth(1)
            .unwrap_or_else(|| panic!("{table}: {msg}"));
        let mut accepted: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
        let mut listed = keys.to_vec();
        accepted.sort_unstable();
        listed.sort_unstable();
        assert_eq!(accepted, listed, "{table}");
    }
}

#[test]
fn text_xml_cannot_carry_is_refused() {
    // Found by the fuzzer: a property value with U+001A and U+0000 was
    // accepted and then written as XML with U+FFFD in their place.
    const F: &str = "[[collect]]\nurl='h'\n[[collect.stream]]\nmp='m'\nsamples=1\n[[collect.stream.filter]]\nfield='a'\n";
    let e = err(&format!("{F}properties={{unit=\"cka\\u001a\\u0000me\"}}"));
    assert!(e.to_string().contains("U+001A"), "{e}");
    let e = err(&format!("{F}properties={{\"u\\u0001\"='x'}}"));
    assert!(e.to_string().contains("U+0001"), "{e}");
    let e = err("[[collect]]\nurl=\"file:a\\u0007b\"");
    assert!(e.to_string().contains("U+0007"), "{e}");
    // Tabs and line breaks are fine: XML carries them as references.
    ok(&format!("{F}properties={{unit=\"a\\tb\\nc\"}}"));
}
