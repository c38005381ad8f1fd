//! Compiles the C half of the logging functions (variadic functions cannot
//! be written in stable Rust).

fn main() {
    println!("cargo:rerun-if-changed=csrc/log.c");
    println!("cargo:rerun-if-changed=include/ocomm/o_log.h");
    cc::Build::new()
        .file("csrc/log.c")
        .include("include")
        .warnings(true)
        .extra_warnings(true)
        .compile("oml2_log");
}
