//! Helpers for the C tests: find the built library, compile C programs with
//! the system `cc`, run them, decode what they wrote, and the table of
//! values `tests/c/generator.c` injects.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use omsp::{Decoder, Event, Header, Sample, Value};

pub mod db;
pub mod relay;

/// `crates/client-ffi`.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The directory holding `liboml2.so` and `liboml2.a`. `cargo test`
/// builds the library's C outputs next to the test binary
/// (`target/<profile>/deps`) without copying them up to
/// `target/<profile>`, which `cargo build` fills; prefer the former, which
/// is always current.
pub fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("target/<profile>/deps");
    let has_libs = |d: &Path| d.join("liboml2.so").exists() && d.join("liboml2.a").exists();
    let found = [Some(deps), deps.parent()]
        .into_iter()
        .flatten()
        .find(|d| has_libs(d))
        .map(Path::to_path_buf);
    let dir = found.unwrap_or_else(|| panic!("liboml2.so/.a not found near {}", deps.display()));
    // Programs linked with -loml2 NEED the SONAME, liboml2.so.9, which
    // `make install` creates and cargo does not.
    let soname = dir.join("liboml2.so.9");
    if std::fs::read_link(&soname).is_err() {
        let _ = std::fs::remove_file(&soname);
        let _ = std::os::unix::fs::symlink("liboml2.so", &soname);
    }
    dir
}

/// The headers.
pub fn include_dir() -> PathBuf {
    crate_dir().join("include")
}

/// A C source of `tests/c`.
pub fn c_source(name: &str) -> PathBuf {
    crate_dir().join("tests/c").join(name)
}

/// Libraries `liboml2.a` needs (rustc --print native-static-libs).
pub const STATIC_LIBS: &[&str] = &["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl"];

/// How to link a test program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// `-loml2` against liboml2.so (with an rpath to it).
    Shared,
    /// liboml2.a, statically.
    Static,
}

/// Runs a compiler command and panics with its output if it fails.
pub fn run_compiler(mut cmd: Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compiles `tests/c/<src>` as strict C99 into `dir/<exe>`.
pub fn compile(src: &str, dir: &Path, exe: &str, link: Link) -> PathBuf {
    let lib = lib_dir();
    let out = dir.join(exe);
    let mut cmd = Command::new("cc");
    cmd.args([
        "-std=c99",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pedantic",
        "-D_POSIX_C_SOURCE=200809L",
    ])
    .arg("-I")
    .arg(include_dir())
    .arg(c_source(src))
    .arg("-o")
    .arg(&out);
    match link {
        Link::Shared => {
            cmd.arg("-L").arg(&lib).arg("-loml2");
            cmd.arg(format!("-Wl,-rpath,{}", lib.display()));
        }
        Link::Static => {
            cmd.arg(lib.join("liboml2.a")).args(STATIC_LIBS);
        }
    }
    run_compiler(cmd);
    out
}

/// Runs `exe args…` in `cwd` with a clean `OML_*` environment.
pub fn run(exe: &Path, args: &[&str], cwd: &Path) -> Output {
    let mut cmd = Command::new(exe);
    cmd.args(args).current_dir(cwd);
    for (k, _) in std::env::vars() {
        if k.starts_with("OML_") {
            cmd.env_remove(k);
        }
    }
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()))
}

/// Panics with the program's output unless it exited 0.
pub fn check_ok(out: &Output) {
    assert!(
        out.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Header, schemas by index and samples of an OMSP byte stream.
pub struct Decoded {
    pub header: Header,
    pub schemas: Vec<omsp::Schema>,
    pub samples: Vec<Sample>,
}

impl Decoded {
    /// The samples of stream `name`.
    pub fn rows(&self, name: &str) -> Vec<&Sample> {
        let index = self
            .schemas
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no stream {name}"))
            .index;
        self.samples.iter().filter(|s| s.stream == index).collect()
    }

    /// `(subject, key, value)` of the metadata tuples.
    pub fn metadata(&self) -> Vec<(String, String, String)> {
        self.samples
            .iter()
            .filter(|s| s.stream == 0)
            .map(|s| {
                let text = |v: &Value| match v {
                    Value::String(s) => s.clone(),
                    other => panic!("metadata value {other:?}"),
                };
                (text(&s.values[0]), text(&s.values[1]), text(&s.values[2]))
            })
            .collect()
    }
}

/// Decodes a whole OMSP stream, panicking on any error.
pub fn decode(bytes: &[u8]) -> Decoded {
    let mut d = Decoder::new();
    d.feed(bytes);
    d.finish();
    let mut header = None;
    let mut schemas = Vec::new();
    let mut samples = Vec::new();
    while let Some(ev) = d.next_event() {
        match ev.expect("valid OMSP") {
            Event::Header(h) => {
                schemas.extend(h.schemas.iter().cloned());
                header = Some(h);
            }
            Event::Schema(s) => schemas.push((*s).clone()),
            Event::Sample(s) => samples.push(s),
        }
    }
    Decoded {
        header: header.expect("a header"),
        schemas,
        samples,
    }
}

/// Rows per stream name in the valid part of an OMSP byte stream (every
/// sample decoded before the first error, metadata left out), and that
/// error if there was one.
pub fn valid_rows(bytes: &[u8]) -> (std::collections::BTreeMap<String, usize>, Option<String>) {
    let mut d = Decoder::new();
    d.feed(bytes);
    d.finish();
    let mut names = std::collections::BTreeMap::new();
    let mut rows = std::collections::BTreeMap::new();
    while let Some(ev) = d.next_event() {
        match ev {
            Ok(Event::Header(h)) => {
                names.extend(h.schemas.iter().map(|s| (s.index, s.name.clone())))
            }
            Ok(Event::Schema(s)) => {
                names.insert(s.index, s.name.clone());
            }
            Ok(Event::Sample(s)) if s.stream != 0 => {
                let name = names.get(&s.stream).cloned().unwrap_or_default();
                *rows.entry(name).or_insert(0) += 1;
            }
            Ok(Event::Sample(_)) => {}
            Err(e) => return (rows, Some(e.to_string())),
        }
    }
    (rows, None)
}

/// The rows `generator.c` injects into MP `all`, in field order.
pub fn expected_all() -> Vec<Vec<Value>> {
    use Value::*;
    let vectors = |empty: bool| {
        let n = |v: usize| if empty { 0 } else { v };
        vec![
            VecDouble(vec![1.5, -2.25, 1e10][..n(3)].to_vec()),
            VecInt32(vec![i32::MIN, i32::MAX][..n(2)].to_vec()),
            VecUInt32(vec![0, u32::MAX][..n(2)].to_vec()),
            VecInt64(vec![i64::MIN, i64::MAX][..n(2)].to_vec()),
            VecUInt64(vec![0, u64::MAX][..n(2)].to_vec()),
            VecBool(vec![true, false, true][..n(3)].to_vec()),
        ]
    };
    let mut rows = vec![
        vec![
            Int32(i32::MIN),
            UInt32(u32::MAX),
            Int64(i64::MIN),
            UInt64(u64::MAX),
            Double(100.125),
            String("tab\there back\\slash nl\nend".into()),
            Blob(vec![0, 1, 2, 0xff]),
            Guid(0x0123_4567_89AB_CDEF),
            Bool(true),
            Int32(i32::MAX), // 1 << 40 as OML_LONG_VALUE, clamped
        ],
        vec![
            Int32(i32::MAX),
            UInt32(0),
            Int64(i64::MAX),
            UInt64(1 << 63),
            Double(-0.5),
            String(std::string::String::new()),
            Blob(Vec::new()),
            Guid(1),
            Bool(false),
            Int32(-5),
        ],
        vec![
            Int32(42),
            UInt32(1 << 31),
            Int64(-1),
            UInt64((1 << 63) + 1),
            Double(0.25),
            String("plain".into()),
            Blob(b"OML".to_vec()),
            Guid(u64::MAX),
            Bool(true),
            Int32(i32::MIN), // -(1 << 40), clamped
        ],
    ];
    for (i, r) in rows.iter_mut().enumerate() {
        r.extend(vectors(i == 1));
    }
    rows
}

/// The schema `generator.c` declares for `all` (long fields are int32).
pub const ALL_SCHEMA: &str = "generator_all i32:int32 u32:uint32 i64:int64 u64:uint64 \
    dbl:double str:string blb:blob gid:guid bol:bool lng:int32 vd:[double] vi32:[int32] \
    vu32:[uint32] vi64:[int64] vu64:[uint64] vb:[bool]";

/// Checks everything `generator.c` wrote into one destination.
pub fn check_generator_output(d: &Decoded) {
    assert_eq!(d.header.domain.as_deref(), Some("d1"));
    assert_eq!(d.header.sender_id.as_deref(), Some("s1"));
    assert_eq!(d.header.app_name.as_deref(), Some("generator"));
    let all = d
        .schemas
        .iter()
        .find(|s| s.name == "generator_all")
        .expect("all");
    let text = all.to_string();
    assert!(text.ends_with(ALL_SCHEMA), "{text}");
    let rows = d.rows("generator_all");
    let expected = expected_all();
    assert_eq!(rows.len(), expected.len());
    for (i, (row, want)) in rows.iter().zip(&expected).enumerate() {
        assert_eq!(row.seq, i as i64 + 1);
        assert_eq!(row.values.len(), want.len());
        for (f, (got, want)) in row.values.iter().zip(want).enumerate() {
            assert!(got.same_as(want), "row {i} field {f}: {got:?} != {want:?}");
        }
    }
    let late = d.rows("generator_late");
    assert_eq!(late.len(), 1);
    assert!(late[0].values[0].same_as(&Value::UInt64(u64::MAX - 1)));
    assert!(late[0].values[1].same_as(&Value::Bool(true)));
    let meta = d.metadata();
    let has = |s: &str, k: &str, v: &str| meta.iter().any(|m| m.0 == s && m.1 == k && m.2 == v);
    assert!(has(".", "appname", "generator"), "{meta:?}");
    assert!(has(".generator_all.dbl", "unit", "metre"), "{meta:?}");
}
