//! The overwrite rules (those of oml2-scaffold, applied all-or-nothing):
//! generated headers and modules are replaced; `<app>.c`, `config.h` and
//! the `Makefile` are kept unless forced; nothing at all is written when
//! one file is refused or the description is invalid.

mod common;

use std::path::Path;

use common::fixture;
use scaffold::gen::{Options, Output};
use scaffold::write::write_all;
use scaffold::Error;

fn plan(dir: &Path, outputs: &[Output]) -> Vec<scaffold::write::Planned> {
    let (app, _) = scaffold::load(&fixture("seed.rb")).unwrap();
    scaffold::plan(&app, outputs, &Options::default(), dir).unwrap()
}

#[test]
fn headers_are_replaced_but_hand_edited_files_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("seed_oml.h"), "old").unwrap();
    write_all(&plan(d, &[Output::OmlHeader, Output::PoptHeader]), false).unwrap();
    assert_ne!(
        std::fs::read_to_string(d.join("seed_oml.h")).unwrap(),
        "old"
    );

    for kept in ["seed.c", "config.h", "Makefile"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join(kept), "edited by hand").unwrap();
        let files = plan(d, &[Output::OmlHeader, Output::Main, Output::Makefile]);
        match write_all(&files, false) {
            Err(Error::Exists { path }) => assert_eq!(path, d.join(kept)),
            other => panic!("{kept}: {other:?}"),
        }
        assert_eq!(
            std::fs::read_to_string(d.join(kept)).unwrap(),
            "edited by hand"
        );
        // All or nothing: not even the header was written.
        assert!(!d.join("seed_oml.h").exists(), "{kept}");
        write_all(&files, true).unwrap();
        assert_ne!(
            std::fs::read_to_string(d.join(kept)).unwrap(),
            "edited by hand"
        );
    }
}

#[test]
fn an_invalid_description_plans_nothing() {
    let text = "defApplication('a:app:x', 'x') do |app|\n  app.defMeasurement('m') do |mp|\n    mp.defMetric('v', :bool)\n  end\nend\n";
    assert!(matches!(
        scaffold::parse_rb(text, "x.rb"),
        Err(Error::Description(_))
    ));
}
