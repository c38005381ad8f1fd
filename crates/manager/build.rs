//! Embeds the web front end (`web/dist/`, built by `web/build.mjs`) in the
//! binary: writes `$OUT_DIR/assets_table.rs`, a table of every file of
//! `web/dist` with its URL path, content type and `include_bytes!` body,
//! which `src/assets.rs` includes.
//!
//! When `web/dist` is missing or older than `web/src`, and the front-end
//! toolchain is installed (`web/node_modules`), `npm run build` is run here
//! (local only: it downloads nothing). Without the toolchain a missing
//! `web/dist` fails the build with the commands that make it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

fn main() {
    let manifest = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let web = manifest.join("web");
    let dist = web.join("dist");
    for p in [
        "src",
        "dist",
        "build.mjs",
        "package.json",
        "package-lock.json",
        "tsconfig.json",
    ] {
        println!("cargo:rerun-if-changed={}", web.join(p).display());
    }

    let index = dist.join("index.html");
    let have_toolchain = web
        .join("node_modules")
        .join(".bin")
        .join("esbuild")
        .exists();
    let stale = match (newest(&web.join("src")), modified(&index)) {
        (Some(src), Some(built)) => src > built,
        _ => false,
    };
    if !index.exists() || stale {
        if have_toolchain {
            build_front_end(&web);
        } else if index.exists() {
            println!(
                "cargo:warning=web/dist is older than web/src and the front-end toolchain is not installed; \
                 embedding the old build (run `npm --prefix crates/manager/web ci` to rebuild it)"
            );
        } else {
            panic!(
                "\n\nThe manager's web front end is not built (crates/manager/web/dist is missing) and \
                 the front-end toolchain is not installed.\nRun `bash scripts/setup.sh`, or:\n    \
                 npm --prefix crates/manager/web ci && npm --prefix crates/manager/web run build\n\n"
            );
        }
    }
    if !index.exists() {
        panic!(
            "web/dist/index.html is still missing after `npm run build` in {}",
            web.display()
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

/// Runs `npm run build` in `web` (type check, then esbuild).
fn build_front_end(web: &Path) {
    let status = Command::new("npm")
        .args(["run", "build"])
        .current_dir(web)
        .status()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run `npm run build` in {}: {e} (is npm installed? run scripts/setup.sh)",
                web.display()
            )
        });
    if !status.success() {
        panic!(
            "`npm run build` failed in {} ({status}); its errors are above",
            web.display()
        );
    }
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

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The newest modification time of any file under `dir`.
fn newest(dir: &Path) -> Option<SystemTime> {
    let mut best = modified(dir);
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let t = if path.is_dir() {
            newest(&path)
        } else {
            modified(&path)
        };
        best = best.max(t);
    }
    best
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
