//! A connection header cannot make the decoder hold more than its limits:
//! each bound ends the session with its own typed error, as soon as it is
//! passed (not at the end of the header, which a hostile client never sends).

use omsp::{Decoder, ErrorKind, Event, HeaderError, Limits};

fn first_error(limits: Limits, chunks: impl Iterator<Item = Vec<u8>>) -> (HeaderError, u64) {
    let mut d = Decoder::with_limits(limits);
    let mut fed = 0u64;
    for chunk in chunks {
        fed += chunk.len() as u64;
        d.feed(&chunk);
        match d.next_event() {
            None => continue,
            Some(Err(e)) => match e.kind {
                ErrorKind::Header(h) => return (h, fed),
                other => panic!("expected a header error, got {other:?}"),
            },
            Some(Ok(ev)) => panic!("unexpected event {ev:?}"),
        }
    }
    panic!("no error after {fed} bytes");
}

fn endless(line: impl Fn(usize) -> String) -> impl Iterator<Item = Vec<u8>> {
    let start = std::iter::once(b"protocol: 5\ndomain: d\n".to_vec());
    start.chain((0..).map(move |i| line(i).into_bytes()))
}

#[test]
fn endless_extension_keys_stop_at_the_key_limit() {
    let limits = Limits::default();
    let (e, fed) = first_error(limits, endless(|i| format!("x-key-{i}: value\n")));
    assert_eq!(e, HeaderError::TooManyExtraKeys { max: 256 });
    assert!(fed < 16 * 1024, "read {fed} bytes before refusing");
}

#[test]
fn endless_known_keys_stop_at_the_line_limit() {
    let (e, _) = first_error(
        Limits::default(),
        endless(|_| "app-name: again\n".to_owned()),
    );
    assert_eq!(e, HeaderError::TooManyLines { max: 8192 });
}

#[test]
fn long_lines_stop_at_the_byte_limit() {
    let limits = Limits {
        max_header: 64 * 1024,
        ..Limits::default()
    };
    let big = "a".repeat(10_000);
    let (e, fed) = first_error(limits, endless(move |_| format!("app-name: {big}\n")));
    assert_eq!(e, HeaderError::TooLarge { max: 64 * 1024 });
    assert!(fed <= 64 * 1024 + 10_100, "read {fed} bytes");
}

#[test]
fn an_unfinished_line_counts_towards_the_byte_limit() {
    let limits = Limits {
        max_header: 1000,
        max_line: 1 << 20,
        ..Limits::default()
    };
    let (e, _) = first_error(
        limits,
        std::iter::once(b"protocol: 5\n".to_vec()).chain(std::iter::repeat(vec![b'a'; 100])),
    );
    assert_eq!(e, HeaderError::TooLarge { max: 1000 });
}

#[test]
fn schemas_stop_at_the_index_limit() {
    let limits = Limits {
        max_index: 9,
        ..Limits::default()
    };
    let (e, _) = first_error(
        limits,
        endless(|i| format!("schema: {} m{i} x:int32\n", i % 9 + 1)),
    );
    assert_eq!(e, HeaderError::TooManySchemas { max: 10 });
}

#[test]
fn a_header_within_the_limits_decodes_and_the_partial_header_is_visible() {
    let mut d = Decoder::new();
    d.feed(b"protocol: 5\ndomain: lab\nx-streamgauge-auth: t\n");
    assert!(d.next_event().is_none());
    let partial = d.partial_header().expect("header in progress");
    assert_eq!(partial.domain.as_deref(), Some("lab"));
    assert_eq!(
        partial.extra,
        vec![("x-streamgauge-auth".into(), "t".into())]
    );
    d.feed(b"content: text\n\n");
    assert!(matches!(d.next_event(), Some(Ok(Event::Header(_)))));
    assert!(d.partial_header().is_none());
}
