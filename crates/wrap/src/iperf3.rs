//! iperf3's JSON interval and summary records as streams, on the client or
//! the server side, TCP or UDP (`streamgauge wrap iperf3`).

use std::io::Read;

use anyhow::Result;
use omsp::{OmlType, Value};
use serde_json::Value as Json;

use crate::session::{self, Output, Session};

/// Fields of the `interval` stream.
const INTERVAL: &[(&str, OmlType)] = &[
    ("role", OmlType::String),
    ("protocol", OmlType::String),
    ("test_start", OmlType::Double),
    ("start", OmlType::Double),
    ("end", OmlType::Double),
    ("seconds", OmlType::Double),
    ("bytes", OmlType::UInt64),
    ("bits_per_second", OmlType::Double),
    ("retransmits", OmlType::Int64),
    ("packets", OmlType::Int64),
    ("lost_packets", OmlType::Int64),
    ("jitter_ms", OmlType::Double),
    ("omitted", OmlType::Bool),
    ("sender", OmlType::Bool),
];

/// Fields of the `summary` stream.
const SUMMARY: &[(&str, OmlType)] = &[
    ("role", OmlType::String),
    ("protocol", OmlType::String),
    ("kind", OmlType::String),
    ("test_start", OmlType::Double),
    ("start", OmlType::Double),
    ("end", OmlType::Double),
    ("seconds", OmlType::Double),
    ("bytes", OmlType::UInt64),
    ("bits_per_second", OmlType::Double),
    ("retransmits", OmlType::Int64),
    ("packets", OmlType::Int64),
    ("lost_packets", OmlType::Int64),
    ("lost_percent", OmlType::Double),
    ("jitter_ms", OmlType::Double),
    ("sender", OmlType::Bool),
];

/// What one test's `start` record says, needed by the later records.
#[derive(Debug, Default, Clone)]
struct Test {
    role: String,
    protocol: String,
    /// Unix time of the test start.
    start: f64,
}

/// Turns iperf3 JSON objects into rows.
struct Recorder<'a> {
    session: &'a Session,
    interval: Option<client::Mp>,
    summary: Option<client::Mp>,
    role: &'static str,
    test: Test,
}

/// The fields an interval's and a summary's records share, in their
/// schemas' order: the test's start, then the period and its totals.
fn totals(t: &Test, v: &Json) -> [Value; 9] {
    [
        Value::Double(t.start),
        Value::Double(f(v, "start")),
        Value::Double(f(v, "end")),
        Value::Double(f(v, "seconds")),
        Value::UInt64(v["bytes"].as_u64().unwrap_or(0)),
        Value::Double(f(v, "bits_per_second")),
        Value::Int64(i(v, "retransmits")),
        Value::Int64(i(v, "packets")),
        Value::Int64(i(v, "lost_packets")),
    ]
}

fn f(v: &Json, k: &str) -> f64 {
    v.get(k).and_then(Json::as_f64).unwrap_or(f64::NAN)
}

fn i(v: &Json, k: &str) -> i64 {
    v.get(k).and_then(Json::as_i64).unwrap_or(-1)
}

fn b(v: &Json, k: &str) -> bool {
    v.get(k).and_then(Json::as_bool).unwrap_or(false)
}

impl Recorder<'_> {
    /// One object: a whole `--json` result, or a `--json-stream` event.
    fn object(&mut self, v: &Json) {
        if let (Some(ev), Some(data)) = (v.get("event").and_then(Json::as_str), v.get("data")) {
            match ev {
                "start" => self.start(data),
                "interval" => self.interval(data),
                "end" => self.end(data),
                "error" => self.error(data),
                _ => {}
            }
            return;
        }
        if let Some(s) = v.get("start") {
            self.start(s);
        }
        for iv in v
            .get("intervals")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            self.interval(iv);
        }
        if let Some(e) = v.get("end") {
            self.end(e);
        }
        if let Some(e) = v.get("error") {
            self.error(e);
        }
    }

    fn start(&mut self, s: &Json) {
        let ts = &s["test_start"];
        self.test = Test {
            role: self.role.to_owned(),
            protocol: ts["protocol"].as_str().unwrap_or("").to_owned(),
            start: s["timestamp"]["timesecs"].as_f64().unwrap_or(f64::NAN),
        };
        if let Some(v) = s["version"].as_str() {
            self.session.metadata("iperf3_version", v);
        }
        let peer = s["connecting_to"]["host"]
            .as_str()
            .or(s["accepted_connection"]["host"].as_str());
        if let Some(p) = peer {
            self.session.metadata("peer", p);
        }
        if let Some(c) = s["cookie"].as_str() {
            self.session.metadata("cookie", c);
        }
        self.session
            .metadata("test_start", &serde_json::to_string(ts).unwrap_or_default());
    }

    fn interval(&mut self, iv: &Json) {
        let Some(sum) = iv.get("sum") else { return };
        let t = &self.test;
        session::inject(
            &self.interval,
            &[
                Value::String(t.role.clone()),
                Value::String(t.protocol.clone()),
            ]
            .into_iter()
            .chain(totals(t, sum))
            .chain([
                Value::Double(f(sum, "jitter_ms")),
                Value::Bool(b(sum, "omitted")),
                Value::Bool(b(sum, "sender")),
            ])
            .collect::<Vec<_>>(),
        );
    }

    fn end(&mut self, e: &Json) {
        for kind in ["sum", "sum_sent", "sum_received"] {
            let Some(s) = e.get(kind) else { continue };
            let t = &self.test;
            session::inject(
                &self.summary,
                &[
                    Value::String(t.role.clone()),
                    Value::String(t.protocol.clone()),
                    Value::String(kind.to_owned()),
                ]
                .into_iter()
                .chain(totals(t, s))
                .chain([
                    Value::Double(f(s, "lost_percent")),
                    Value::Double(f(s, "jitter_ms")),
                    Value::Bool(b(s, "sender")),
                ])
                .collect::<Vec<_>>(),
            );
        }
    }

    fn error(&mut self, e: &Json) {
        let text = e
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| e.to_string());
        self.session.metadata("error", &text);
    }
}

/// Copies what it reads to our standard output.
struct Tee<R>(R);

impl<R: Read> Read for Tee<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        session::echo(Output::Stdout, &buf[..n]);
        Ok(n)
    }
}

/// The side iperf3 runs on, from its arguments.
fn role(args: &[String]) -> &'static str {
    let server = args.iter().any(|a| {
        a == "--server" || (a.starts_with('-') && !a.starts_with("--") && a[1..].contains('s'))
    });
    if server {
        "server"
    } else {
        "client"
    }
}

/// Runs iperf3 with `args` (its own arguments and any `--oml-*` options,
/// which are removed before iperf3 sees them; `--json` is added unless
/// `--json`, `-J` or `--json-stream` is given) and records its `interval`
/// and `summary` records; returns iperf3's exit status.
pub fn run(args: &[String]) -> Result<i32> {
    let s = Session::open("iperf3", args)?;
    let interval = s.mp("interval", INTERVAL)?;
    let summary = s.mp("summary", SUMMARY)?;
    let mut args = s.tool_args.clone();
    let json = ["--json", "-J", "--json-stream"];
    if !args.iter().any(|x| json.contains(&x.as_str())) {
        args.push("--json".into());
    }
    let mut command = vec!["iperf3".to_owned()];
    command.extend(args.iter().cloned());
    s.start(&session::tool_version("iperf3", "--version"), &command)?;
    let mut rec = Recorder {
        session: &s,
        interval,
        summary,
        role: role(&args),
        test: Test::default(),
    };
    let mut child = session::spawn("iperf3", &args, Output::Stdout)?;
    let out = session::take_output(&mut child, Output::Stdout)?;
    for v in serde_json::Deserializer::from_reader(Tee(out)).into_iter::<Json>() {
        match v {
            Ok(v) => rec.object(&v),
            Err(e) => {
                eprintln!("streamgauge wrap iperf3: unreadable JSON output: {e}");
                break;
            }
        }
    }
    let status = child.wait()?;
    s.close();
    Ok(session::exit_code(status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(role(&a(&["-s", "-1"])), "server");
        assert_eq!(role(&a(&["-1s"])), "server");
        assert_eq!(role(&a(&["-c", "127.0.0.1", "-u"])), "client");
        assert_eq!(role(&a(&["--server"])), "server");
    }
}
