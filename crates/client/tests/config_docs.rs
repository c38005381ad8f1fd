//! `docs/client-config.md` stays in step with the definitions: its option
//! table is generated from `config::options` (regenerate with
//! `UPDATE_DOCS=1 cargo test -p client --test config_docs`), and every XML
//! element and attribute and every TOML key is documented.

use std::path::PathBuf;

use client::config::{options, toml, xml};

const BEGIN: &str = "<!-- BEGIN generated options table";
const END: &str = "<!-- END generated options table -->";

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/client-config.md")
}

#[test]
fn option_table_is_generated_from_the_definitions() {
    let path = doc_path();
    let doc = std::fs::read_to_string(&path).unwrap();
    let start = doc.find(BEGIN).expect("begin marker");
    let body = start + doc[start..].find('\n').expect("marker line") + 1;
    let end = doc.find(END).expect("end marker");
    let table = options::markdown_table();
    if doc[body..end] != table {
        if std::env::var_os("UPDATE_DOCS").is_some() {
            let updated = format!("{}{table}{}", &doc[..body], &doc[end..]);
            std::fs::write(&path, updated).unwrap();
        } else {
            panic!(
                "{} is out of date; run UPDATE_DOCS=1 cargo test -p client --test config_docs",
                path.display()
            );
        }
    }
}

#[test]
fn every_xml_element_attribute_and_toml_key_is_documented() {
    let doc = std::fs::read_to_string(doc_path()).unwrap();
    for el in xml::ELEMENTS {
        assert!(doc.contains(&format!("<{}", el.name)), "<{}>", el.name);
        for a in el.attributes {
            assert!(doc.contains(&format!("`{a}`")), "<{}> `{a}`", el.name);
        }
    }
    for (table, keys) in toml::KEYS {
        assert!(doc.contains(table), "{table}");
        for k in *keys {
            assert!(doc.contains(&format!("`{k}`")), "{table} `{k}`");
        }
    }
    for o in options::OPTIONS {
        for e in o.env {
            assert!(doc.contains(&format!("`{e}`")), "{e}");
        }
    }
}
