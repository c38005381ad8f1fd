//! Compiles the C half of the logging functions (variadic functions cannot
//! be written in stable Rust).

fn main() {
    // The reference's SONAME, so that binaries built against the stock
    // liboml2 (NEEDED liboml2.so.9) load this library once it is installed
    // (`make install` names the file liboml2.so.9).
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,liboml2.so.9");
    println!("cargo:rerun-if-changed=csrc/log.c");
    println!("cargo:rerun-if-changed=include/ocomm/o_log.h");
    cc::Build::new()
        .file("csrc/log.c")
        .include("include")
        .warnings(true)
        .extra_warnings(true)
        .compile("oml2_log");
}
