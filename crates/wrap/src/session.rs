//! What every wrapper shares: the client from `--oml-*` options, running the
//! tool with its standard output copied through, metadata, exit status.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::SystemTime;

use anyhow::{bail, Context, Result};
use client::config::args::{self, Outcome};
use client::{Client, Mp};
use omsp::{OmlType, Value, ValueRef};

/// A wrapper's measurement client (`None` when `--oml-noop`).
pub(crate) struct Session {
    /// The client; `None` measures nothing.
    client: Option<Client>,
    /// The tool's arguments, `--oml-*` options removed.
    pub(crate) tool_args: Vec<String>,
}

impl Session {
    /// Parses the `--oml-*` options out of `args` (anywhere), reading the
    /// `OML_*` variables and `--oml-config` file, for application `app`.
    /// `--oml-help` prints the options and exits.
    pub(crate) fn open(app: &str, args: &[String]) -> Result<Session> {
        let mut argv = Vec::with_capacity(args.len() + 1);
        argv.push(app.to_owned());
        argv.extend(args.iter().cloned());
        let env = |name: &str| std::env::var(name).ok();
        let stamp = client::config::utc_timestamp(SystemTime::now());
        let parsed =
            args::parse(app, &mut argv, &env, &stamp).context("reading the --oml-* options")?;
        for w in &parsed.warnings {
            eprintln!("streamgauge wrap: warning: {w}");
        }
        let client = match parsed.outcome {
            Outcome::Run(spec) => Some(Client::new(spec).context("configuring the client")?),
            Outcome::Noop => None,
            Outcome::Help(text) => {
                println!("{text}");
                std::process::exit(0);
            }
            Outcome::ListFilters => {
                println!("OML filters available:");
                for f in filters::catalogue() {
                    println!("\t{:<10} {}", f.name, f.outputs);
                }
                std::process::exit(0);
            }
        };
        argv.remove(0);
        Ok(Session {
            client,
            tool_args: argv,
        })
    }

    /// Defines a measurement point.
    pub(crate) fn mp(&self, name: &str, fields: &[(&str, OmlType)]) -> Result<Option<Mp>> {
        match &self.client {
            Some(c) => {
                Ok(Some(c.add_mp(name, fields).with_context(|| {
                    format!("defining measurement point {name:?}")
                })?))
            }
            None => Ok(None),
        }
    }

    /// Starts the client and records the tool's version and command line.
    pub(crate) fn start(&self, version: &str, command_line: &[String]) -> Result<()> {
        if let Some(c) = &self.client {
            c.start().context("starting the client")?;
            c.inject_metadata("tool_version", version)?;
            c.inject_metadata("command_line", &shell_words(command_line))?;
        }
        Ok(())
    }

    /// Experiment-level metadata.
    pub(crate) fn metadata(&self, key: &str, value: &str) {
        if let Some(c) = &self.client {
            if let Err(e) = c.inject_metadata(key, value) {
                eprintln!("streamgauge wrap: metadata {key}: {e}");
            }
        }
    }

    /// Flushes and closes; prints a line if samples were lost.
    pub(crate) fn close(self) {
        if let Some(c) = self.client {
            if let Err(e) = c.close() {
                eprintln!("streamgauge wrap: closing: {e}");
            }
            let st = c.stats();
            let dropped: u64 =
                st.dropped_at_inject + st.destinations.iter().map(|d| d.dropped).sum::<u64>();
            if dropped > 0 {
                eprintln!("streamgauge wrap: {dropped} tuples could not be delivered");
            }
        }
    }
}

/// Injects owned values, reporting (not failing on) errors.
pub(crate) fn inject(mp: &Option<Mp>, values: &[Value]) {
    if let Some(mp) = mp {
        let refs: Vec<ValueRef<'_>> = values.iter().map(Value::as_value_ref).collect();
        if let Err(e) = mp.inject(&refs) {
            eprintln!("streamgauge wrap: {}: {e}", mp.name());
        }
    }
}

/// The command line as a shell would show it.
pub(crate) fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first line the tool prints for `flag` (`-V`, `--version`), or "unknown".
pub(crate) fn tool_version(program: &str, flag: &str) -> String {
    Command::new(program)
        .arg(flag)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .output()
        .ok()
        .and_then(|o| {
            let text = if o.stdout.is_empty() {
                o.stderr
            } else {
                o.stdout
            };
            String::from_utf8_lossy(&text)
                .lines()
                .next()
                .map(|l| l.trim().to_owned())
        })
        .filter(|l| !l.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Which output of the tool is read (the other is inherited).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    Stdout,
    Stderr,
}

/// Starts `program args` with the chosen output piped.
pub(crate) fn spawn(program: &str, args: &[String], output: Output) -> Result<Child> {
    let mut cmd = Command::new(program);
    cmd.args(args).env("LC_ALL", "C").stdin(Stdio::inherit());
    match output {
        Output::Stdout => cmd.stdout(Stdio::piped()),
        Output::Stderr => cmd.stderr(Stdio::piped()),
    };
    cmd.spawn().with_context(|| format!("running {program}"))
}

/// The piped output of `child`.
pub(crate) fn take_output(child: &mut Child, output: Output) -> Result<Box<dyn Read + Send>> {
    let r: Option<Box<dyn Read + Send>> = match output {
        Output::Stdout => child.stdout.take().map(|s| Box::new(s) as _),
        Output::Stderr => child.stderr.take().map(|s| Box::new(s) as _),
    };
    match r {
        Some(r) => Ok(r),
        None => bail!("the tool's output is not piped"),
    }
}

/// Copies each line of `input` to our own stream of the same kind and hands
/// it to `on_line` (without its newline).
pub(crate) fn tee_lines(
    input: impl Read,
    output: Output,
    mut on_line: impl FnMut(&str),
) -> Result<()> {
    let mut reader = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        echo(output, &line);
        let text = String::from_utf8_lossy(&line);
        on_line(text.trim_end_matches(['\n', '\r']));
    }
}

/// Writes `bytes` to our standard output or error, ignoring a closed pipe.
pub(crate) fn echo(output: Output, bytes: &[u8]) {
    let _ = match output {
        Output::Stdout => {
            let mut o = std::io::stdout().lock();
            o.write_all(bytes).and_then(|()| o.flush())
        }
        Output::Stderr => std::io::stderr().lock().write_all(bytes),
    };
}

/// The exit code to pass on: the tool's, or 128 + signal as shells do.
pub(crate) fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        let w = ["ping", "-c", "3", "a b", "it's"].map(String::from);
        assert_eq!(shell_words(&w), r"ping -c 3 'a b' 'it'\''s'");
    }
}
