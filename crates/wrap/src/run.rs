//! `streamgauge wrap run`: any command's output lines as a measurement
//! stream, through a regular expression, CSV or JSON lines.

use anyhow::{bail, Context, Result};
use omsp::{OmlType, Value};
use regex::Regex;

use crate::session::{self, Output, Session};

/// What `wrap run` records and how (the clap glue in the CLI fills it in).
#[derive(Debug, Clone)]
pub struct Options {
    /// The stream's fields: `"name:type name:type ..."`.
    pub schema: String,
    /// A regular expression whose named groups give the fields.
    pub regex: Option<String>,
    /// Read comma-separated values (header line, else schema order).
    pub csv: bool,
    /// The CSV separator.
    pub delimiter: char,
    /// Read one JSON object per line, keys naming the fields.
    pub jsonl: bool,
    /// Measurement point name (the table is `<app>_<mp>`).
    pub mp: String,
    /// Application name; `None`: derived from the command's name.
    pub app: Option<String>,
    /// Read the command's standard error instead of its standard output.
    pub stderr: bool,
    /// The flag printing the command's version (`none` to skip).
    pub version_flag: String,
    /// `--oml-*` options, then `--`, then the command and its arguments
    /// (clap keeps the `--` only when an `--oml-*` option precedes it).
    pub rest: Vec<String>,
}

/// How lines become values.
enum Format {
    /// Named groups.
    Regex(Regex),
    /// Column `i` of the line feeds field `map[i]`; the header, once seen,
    /// replaces the positional map.
    Csv {
        delimiter: char,
        map: Vec<Option<usize>>,
        header_seen: bool,
    },
    /// Keys name fields.
    Jsonl,
}

/// Parses `"name:type ..."`.
pub(crate) fn parse_schema(s: &str) -> Result<Vec<(String, OmlType)>> {
    let mut out = Vec::new();
    for part in s.split_whitespace() {
        let Some((name, ty)) = part.split_once(':') else {
            bail!("schema element {part:?} is not name:type");
        };
        let Some(t) = OmlType::from_name(ty) else {
            bail!("schema element {part:?}: unknown type {ty:?}");
        };
        out.push((name.to_owned(), t));
    }
    if out.is_empty() {
        bail!("the schema has no fields");
    }
    Ok(out)
}

/// The value of a field a line does not give: the type's zero, except
/// NaN for doubles (a missing reading, not a reading of 0).
fn zero(t: OmlType) -> Value {
    match t {
        OmlType::Double => Value::Double(f64::NAN),
        t => Value::zero(t),
    }
}

fn list<T: std::str::FromStr>(s: &str) -> Option<Vec<T>> {
    s.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|x| !x.is_empty())
        .map(|x| x.parse().ok())
        .collect()
}

fn boolean(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// A text value as type `t`.
pub(crate) fn from_text(s: &str, t: OmlType) -> Option<Value> {
    let n = s.trim();
    Some(match t {
        OmlType::Int32 => Value::Int32(n.parse().ok()?),
        OmlType::UInt32 => Value::UInt32(n.parse().ok()?),
        OmlType::Int64 => Value::Int64(n.parse().ok()?),
        OmlType::UInt64 => Value::UInt64(n.parse().ok()?),
        OmlType::Guid => Value::Guid(n.parse().ok()?),
        OmlType::Double => Value::Double(n.parse().ok()?),
        OmlType::String => Value::String(s.to_owned()),
        OmlType::Blob => Value::Blob(s.as_bytes().to_vec()),
        OmlType::Bool => Value::Bool(boolean(n)?),
        OmlType::VecDouble => Value::VecDouble(list(n)?),
        OmlType::VecInt32 => Value::VecInt32(list(n)?),
        OmlType::VecUInt32 => Value::VecUInt32(list(n)?),
        OmlType::VecInt64 => Value::VecInt64(list(n)?),
        OmlType::VecUInt64 => Value::VecUInt64(list(n)?),
        OmlType::VecBool => Value::VecBool(
            n.trim_matches(['[', ']'])
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|x| !x.is_empty())
                .map(boolean)
                .collect::<Option<_>>()?,
        ),
    })
}

/// A JSON value as type `t` (strings are parsed as text values).
fn from_json(v: &serde_json::Value, t: OmlType) -> Option<Value> {
    use serde_json::Value as J;
    match (v, t) {
        (J::String(s), _) => from_text(s, t),
        (J::Bool(x), OmlType::Bool) => Some(Value::Bool(*x)),
        (J::Number(_), _) | (J::Bool(_), _) => from_text(&v.to_string(), t),
        (J::Array(a), _) if t.is_vector() => {
            let text: Vec<String> = a.iter().map(|x| x.to_string()).collect();
            from_text(&text.join(","), t)
        }
        _ => None,
    }
}

impl Format {
    /// The values of one line, or `None` to skip it.
    fn values(&mut self, line: &str, schema: &[(String, OmlType)]) -> Option<Vec<Value>> {
        match self {
            Format::Regex(re) => {
                let c = re.captures(line)?;
                schema
                    .iter()
                    .map(|(n, t)| match c.name(n) {
                        Some(m) => from_text(m.as_str(), *t),
                        None => Some(zero(*t)),
                    })
                    .collect()
            }
            Format::Csv {
                delimiter,
                map,
                header_seen,
            } => {
                let cells: Vec<&str> = line.split(*delimiter).map(str::trim).collect();
                if !*header_seen {
                    *header_seen = true;
                    if schema.iter().all(|(n, _)| cells.contains(&n.as_str())) {
                        *map = cells
                            .iter()
                            .map(|c| schema.iter().position(|(n, _)| n == c))
                            .collect();
                        return None;
                    }
                }
                let mut out: Vec<Option<Value>> = vec![None; schema.len()];
                for (cell, field) in cells.iter().zip(map.iter()) {
                    if let Some(fi) = *field {
                        out[fi] = Some(from_text(cell, schema[fi].1)?);
                    }
                }
                out.into_iter()
                    .zip(schema)
                    .map(|(v, (_, t))| Some(v.unwrap_or_else(|| zero(*t))))
                    .collect()
            }
            Format::Jsonl => {
                let obj: serde_json::Value = serde_json::from_str(line).ok()?;
                let obj = obj.as_object()?;
                schema
                    .iter()
                    .map(|(n, t)| match obj.get(n) {
                        Some(v) if !v.is_null() => from_json(v, *t),
                        _ => Some(zero(*t)),
                    })
                    .collect()
            }
        }
    }
}

/// An OML name from a command name.
fn app_from(cmd: &str) -> String {
    let base = cmd.rsplit('/').next().unwrap_or(cmd);
    let mut s: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    s
}

/// Runs the command and records one tuple per matching line.
pub fn run(a: &Options) -> Result<i32> {
    // Clap takes the first `--` itself when no `--oml-*` option precedes it.
    let (oml, cmd) = if a.rest.first().is_some_and(|x| x.starts_with("--oml-")) {
        let Some(split) = a.rest.iter().position(|x| x == "--") else {
            bail!("give the command after `--`: streamgauge wrap run --schema ... -- COMMAND ARGS");
        };
        (&a.rest[..split], &a.rest[split + 1..])
    } else {
        (&a.rest[..0], &a.rest[..])
    };
    if let Some(bad) = oml
        .iter()
        .find(|x| !x.starts_with("--oml-") && !x.starts_with('-'))
    {
        // Values of --oml-* options are fine; anything else is a mistake.
        let prev_is_oml = oml
            .iter()
            .position(|x| x == bad)
            .and_then(|i| i.checked_sub(1))
            .is_some_and(|i| oml[i].starts_with("--oml-") && !oml[i].contains('='));
        if !prev_is_oml {
            bail!(
                "unexpected argument {bad:?} before `--`: put the wrapper's own options before the first --oml-* option"
            );
        }
    }
    let Some(program) = cmd.first() else {
        bail!("no command after `--`");
    };
    let schema = parse_schema(&a.schema)?;
    let mut format = if let Some(r) = &a.regex {
        let re = Regex::new(r).context("--regex")?;
        let names: Vec<&str> = re.capture_names().flatten().collect();
        if let Some((n, _)) = schema.iter().find(|(n, _)| !names.contains(&n.as_str())) {
            eprintln!(
                "streamgauge wrap: warning: --regex has no group named {n:?}; it will be empty"
            );
        }
        Format::Regex(re)
    } else if a.csv {
        Format::Csv {
            delimiter: a.delimiter,
            map: (0..schema.len()).map(Some).collect(),
            header_seen: false,
        }
    } else if a.jsonl {
        Format::Jsonl
    } else {
        bail!("choose one of --regex, --csv or --jsonl");
    };
    let app = a.app.clone().unwrap_or_else(|| app_from(program));
    let s = Session::open(&app, oml)?;
    if let Some(stray) = s.tool_args.first() {
        bail!(
            "unexpected argument {stray:?} before `--`: put the wrapper's own options before the first --oml-* option"
        );
    }
    let fields: Vec<(&str, OmlType)> = schema.iter().map(|(n, t)| (n.as_str(), *t)).collect();
    let mp = s.mp(&a.mp, &fields)?;
    let version = if a.version_flag == "none" {
        "unknown".to_owned()
    } else {
        session::tool_version(program, &a.version_flag)
    };
    s.start(&version, cmd)?;
    let output = if a.stderr {
        Output::Stderr
    } else {
        Output::Stdout
    };
    let mut child = session::spawn(program, &cmd[1..], output)?;
    let out = session::take_output(&mut child, output)?;
    let (mut taken, mut skipped) = (0u64, 0u64);
    session::tee_lines(out, output, |line| match format.values(line, &schema) {
        Some(v) => {
            session::inject(&mp, &v);
            taken += 1;
        }
        None => skipped += 1,
    })?;
    let status = child.wait()?;
    s.metadata("lines_recorded", &taken.to_string());
    s.metadata("lines_skipped", &skipped.to_string());
    s.close();
    Ok(session::exit_code(status))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(s: &str) -> Vec<(String, OmlType)> {
        parse_schema(s).unwrap()
    }

    #[test]
    fn regex_lines() {
        let sc = schema("seq:uint32 rtt:double host:string");
        let mut f = Format::Regex(Regex::new(r"seq=(?P<seq>\d+) time=(?P<rtt>[0-9.]+)").unwrap());
        let v = f.values("x seq=3 time=0.5 ms", &sc).unwrap();
        assert_eq!(v[0], Value::UInt32(3));
        assert_eq!(v[1], Value::Double(0.5));
        assert_eq!(v[2], Value::String(String::new()));
        assert!(f.values("nothing", &sc).is_none());
    }

    #[test]
    fn csv_header_and_positional() {
        let sc = schema("a:int32 b:double");
        let mut f = Format::Csv {
            delimiter: ',',
            map: vec![Some(0), Some(1)],
            header_seen: false,
        };
        assert!(f.values("b,a", &sc).is_none());
        let v = f.values("2.5, 7", &sc).unwrap();
        assert_eq!(v, vec![Value::Int32(7), Value::Double(2.5)]);
        let mut g = Format::Csv {
            delimiter: ';',
            map: vec![Some(0), Some(1)],
            header_seen: false,
        };
        assert_eq!(
            g.values("1;2", &sc).unwrap(),
            vec![Value::Int32(1), Value::Double(2.0)]
        );
        assert!(g.values("x;2", &sc).is_none());
    }

    #[test]
    fn json_lines() {
        let sc = schema("a:int64 ok:bool v:[double] s:string");
        let mut f = Format::Jsonl;
        let v = f
            .values(r#"{"a": 5, "ok": true, "v": [1, 2.5], "s": "x"}"#, &sc)
            .unwrap();
        assert_eq!(v[0], Value::Int64(5));
        assert_eq!(v[1], Value::Bool(true));
        assert_eq!(v[2], Value::VecDouble(vec![1.0, 2.5]));
        assert_eq!(v[3], Value::String("x".into()));
        assert!(f.values("not json", &sc).is_none());
    }

    #[test]
    fn app_names() {
        assert_eq!(app_from("/usr/bin/vmstat"), "vmstat");
        assert_eq!(app_from("my-tool.sh"), "my_tool_sh");
        assert_eq!(app_from("7z"), "_7z");
    }
}
