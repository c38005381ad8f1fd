//! Writes a [`FileConfig`] as XML that [`parse`](super::parse) reads back to
//! the same value.

use std::fmt::Write as _;

use crate::config::value;
use crate::config::{uri, FileConfig};
use crate::spec::{DestinationSpec, StreamSpec, Window};

/// Writes `config` as an `<omlc>` document, with every value explicit
/// (`encoding`, `overload`, `bufsize`) and filters in reverse column order,
/// so that [`parse`](super::parse) gives `config` back.
///
/// Only what the XML can say round-trips: a destination's `instrumentation`
/// must be what its streams imply (true for `streams: None`, else whether a
/// stream reads `_client_instrumentation`), `Some(vec![])` streams read back
/// as `None`, and a [`Window::PerSample`] stream is written as `samples="1"`.
pub fn to_string(config: &FileConfig) -> String {
    let mut out = String::from("<omlc");
    attr(&mut out, "domain", config.domain.as_deref());
    attr(&mut out, "id", config.id.as_deref());
    out.push_str(">\n");
    for d in &config.destinations {
        collect(&mut out, d);
    }
    out.push_str("</omlc>\n");
    out
}

fn collect(out: &mut String, d: &DestinationSpec) {
    out.push_str("  <collect");
    attr(out, "url", Some(&uri::to_string(&d.uri)));
    attr(out, "encoding", Some(value::format_encoding(d.encoding)));
    attr(out, "overload", Some(&value::format_policy(d.policy)));
    attr(out, "bufsize", Some(&d.bufsize.to_string()));
    if d.backchannel != crate::spec::Backchannel::Off {
        attr(
            out,
            "backchannel",
            Some(value::format_backchannel(d.backchannel)),
        );
    }
    match d.streams.as_deref() {
        None | Some([]) => out.push_str("/>\n"),
        Some(streams) => {
            out.push_str(">\n");
            for s in streams {
                stream(out, s);
            }
            out.push_str("  </collect>\n");
        }
    }
}

fn stream(out: &mut String, s: &StreamSpec) {
    out.push_str("    <stream");
    attr(out, "mp", Some(&s.mp));
    attr(out, "name", s.name.as_deref());
    match s.window {
        Window::Samples(n) => attr(out, "samples", Some(&n.to_string())),
        Window::Interval(d) => attr(out, "interval", Some(&value::format_seconds(d))),
        Window::PerSample => attr(out, "samples", Some("1")),
    }
    if s.filters.is_empty() {
        out.push_str("/>\n");
        return;
    }
    out.push_str(">\n");
    // Columns are in reverse document order: write the last column first.
    for f in s.filters.iter().rev() {
        out.push_str("      <filter");
        attr(out, "field", Some(&f.field));
        attr(out, "operation", f.operation.as_deref());
        attr(out, "rename", f.rename.as_deref());
        if f.properties.is_empty() {
            out.push_str("/>\n");
            continue;
        }
        out.push_str(">\n");
        for p in &f.properties {
            out.push_str("        <property");
            attr(out, "name", Some(&p.name));
            attr(out, "type", Some(&p.ty));
            let _ = writeln!(out, ">{}</property>", escape(&p.value));
        }
        out.push_str("      </filter>\n");
    }
    out.push_str("    </stream>\n");
}

fn attr(out: &mut String, name: &str, v: Option<&str>) {
    if let Some(v) = v {
        let _ = write!(out, " {name}=\"{}\"", escape(v));
    }
}

/// Text for XML content or a quoted attribute value: markup characters
/// escaped, tabs and line breaks as character references (which
/// attribute-value and end-of-line normalisation would otherwise change),
/// and the other control characters, which XML 1.0 does not allow at all,
/// replaced by U+FFFD. The one XML escaping of the project (configuration
/// files here, capture metadata documents).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => {
                let _ = write!(out, "&#{};", u32::from(c));
            }
            c if c < ' ' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}
