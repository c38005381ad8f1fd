//! Generated Python: the module for `fixtures/every_type.rb` imports, its
//! argparse options parse, and its typed classes inject every type into a
//! real server through the `streamgauge` package (python/, installed into
//! python3 by scripts/setup.sh).

mod common;

use std::process::Command;

use common::*;
use rusqlite::types::Value as Sql;
use scaffold::gen::Output;

const SCRIPT: &str = r#"
import sys
import every_type_oml as m
import streamgauge

args, oml_argv = m.parse_args(sys.argv[1:])
assert (args.count, args.delay, args.repeat, args.label) == (9, 0.5, True, "hi"), args
assert m.Scalars.inject.__doc__.startswith("Injects one sample")
with streamgauge.Client(m.APP, argv=oml_argv) as client:
    mps = m.register(client)
    mps.scalars.inject(-5, 4000000000, -2**63, 2**64 - 1, 0.125, "py", b"\x00\x01", 0xABCDEF, True)
    mps.scalars.inject(args.count, args.big_count, args.i64, args.u64, args.delay, args.label, b"", 1, args.repeat)
    mps.vectors.inject([1.5], [-1], [2], [-3], [4], [True, False])
    mps.aliases.inject(1, 2, 0.5, 0.25, False)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_module_injects_every_type() {
    if !require_tool("python3", "imports the generated module") {
        return;
    }
    if !testkit::have_tool(
        "python3",
        &["-c", "import streamgauge"],
        "the streamgauge Python package: pip install ./python (scripts/test.sh does)",
    ) {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    generate("every_type.rb", &[Output::Python], work.path());
    std::fs::write(work.path().join("inject.py"), SCRIPT).unwrap();

    let dir = work.path().to_owned();
    let data = against_server(move |uri| {
        let args = "-c 9 --label hi -l".split(' ');
        let out = Command::new("python3")
            .arg("inject.py")
            .args([
                "--oml-collect",
                &uri,
                "--oml-id",
                "p1",
                "--oml-domain",
                "py",
            ])
            .args(args)
            .env("PYTHONPATH", &dir)
            .current_dir(&dir)
            .output()
            .unwrap();
        common::ffi::check_ok(&out);
    })
    .await;

    let s = rows(
        data.path(),
        "py",
        "every_type_scalars",
        "i32, u32, i64, str, blb, gid, bol, dbl",
    );
    assert_eq!(s.len(), 2);
    assert_eq!(
        s[0],
        vec![
            Sql::Integer(-5),
            Sql::Integer(4_000_000_000),
            Sql::Integer(i64::MIN),
            Sql::Text("py".into()),
            Sql::Blob(vec![0, 1]),
            Sql::Integer(0xAB_CDEF),
            Sql::Integer(1),
            Sql::Real(0.125),
        ]
    );
    assert_eq!(s[1][0], Sql::Integer(9));
    assert_eq!(s[1][3], Sql::Text("hi".into()));
    assert_eq!(s[1][7], Sql::Real(0.5));
    let v = rows(data.path(), "py", "every_type_vectors", "vd, vb");
    assert_eq!(
        v,
        vec![vec![
            Sql::Text("[ 1.5 ]".into()),
            Sql::Text("[ true, false ]".into())
        ]]
    );
    let a = rows(
        data.path(),
        "py",
        "every_type_aliases",
        "n_int, f_float, b_flag",
    );
    assert_eq!(
        a,
        vec![vec![Sql::Integer(1), Sql::Real(0.5), Sql::Integer(0)]]
    );
}
