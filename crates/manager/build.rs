//! Embeds the web front end (`web/dist/`, built by `web/build.mjs` and
//! committed) in the binary: writes `$OUT_DIR/assets_table.rs`, a table of
//! every file of `web/dist` with its URL path, content type and
//! `include_bytes!` body, which `src/assets.rs` includes.
//!
//! The bundle is committed so that `cargo build` and `cargo install` need
//! no Node: this script never runs npm. `scripts/test.sh` rebuilds the
//! bundle from `web/src` and fails unless the result is byte for byte what
//! is committed; whoever changes `web/src` runs
//! `npm --prefix crates/manager/web run build` and commits `web/dist`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let dist = manifest.join("web").join("dist");
    println!("cargo:rerun-if-changed={}", dist.display());
    if !dist.join("index.html").exists() {
        panic!(
            "\n\nThe manager's web front end is missing ({}/index.html): it is committed with \
             the source, so this checkout is incomplete. Restore it with `git checkout -- \
             crates/manager/web/dist`, or rebuild it:\n    \
             npm --prefix crates/manager/web ci && npm --prefix crates/manager/web run build\n\n",
            dist.display()
        );
    }

    let mut files = Vec::new();
    collect(&dist, &mut files);
    files.sort();
    let mut table = String::from(
        "/// Every file of `web/dist`: (URL path, content type, bytes).\n\
         pub(crate) static FILES: &[(&str, &str, &[u8])] = &[\n",
    );
    for file in &files {
        let rel = file.strip_prefix(&dist).expect("collected under dist");
        let url: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let url = format!("/{}", url.join("/"));
        writeln!(
            table,
            "    ({:?}, {:?}, include_bytes!({:?})),",
            url,
            content_type(file),
            file.display().to_string()
        )
        .expect("writing to a String");
    }
    table.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("assets_table.rs"), table).expect("writing assets_table.rs");
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            collect(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}
