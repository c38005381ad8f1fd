//! Compiles the BPF C programs in `bpf/` with clang into `$OUT_DIR/*.o`.
//!
//! Needs clang (any version with the BPF target; 14 works with `-mcpu=v3`,
//! which it needs for atomics whose result is used), the kernel UAPI headers
//! (`linux-libc-dev`) and libbpf's headers (`libbpf-dev`). `CLANG` overrides
//! the compiler.

use std::path::{Path, PathBuf};
use std::process::Command;

const PROGRAMS: [&str; 3] = ["sg_source", "sg_sink", "sg_floor"];

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".to_owned());
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_else(|_| "x86_64".to_owned());
    let multiarch = format!("/usr/include/{arch}-linux-gnu");
    println!("cargo:rerun-if-env-changed=CLANG");
    for entry in [
        "bpf/sg_inline.h",
        "bpf/sg_maps.h",
        "bpf/sg_xdp.h",
        "bpf/sg_flow.h",
    ] {
        println!("cargo:rerun-if-changed={entry}");
    }
    for prog in PROGRAMS {
        let src = format!("bpf/{prog}.c");
        println!("cargo:rerun-if-changed={src}");
        let obj = out.join(format!("{prog}.o"));
        let mut cmd = Command::new(&clang);
        cmd.args([
            "-O2", "-g", "-target", "bpf", "-mcpu=v3", "-Wall", "-Werror",
        ]);
        if Path::new(&multiarch).is_dir() {
            cmd.arg(format!("-I{multiarch}"));
        }
        cmd.arg("-Ibpf").arg("-c").arg(&src).arg("-o").arg(&obj);
        let status = cmd.status().unwrap_or_else(|e| {
            panic!("cannot run {clang} to build the BPF programs ({e}); install clang, libbpf-dev and linux-libc-dev")
        });
        assert!(status.success(), "{clang} failed on {src}");
    }
}
