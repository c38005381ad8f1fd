//! The exported variadic functions `logerror` … `logdebug4`.
//!
//! A Rust cdylib exports only symbols defined in Rust, and stable Rust
//! cannot define C variadic functions. So each exported name is a naked
//! Rust function whose only instruction is a tail jump to the C
//! implementation in csrc/log.c: the caller's registers and stack, variadic
//! arguments included, reach the C function untouched.
#![allow(unsafe_code)]

macro_rules! trampolines {
    ($($name:ident => $target:ident),* $(,)?) => {
        extern "C" {
            $(fn $target(fmt: *const std::ffi::c_char, ...);)*
        }
        $(
            #[doc = concat!("`void ", stringify!($name), "(const char *fmt, ...)`.")]
            #[unsafe(naked)]
            #[no_mangle]
            pub unsafe extern "C" fn $name() {
                // SAFETY: a tail jump with no stack or register changes; the
                // target has the C signature callers use for this symbol.
                #[cfg(target_arch = "x86_64")]
                core::arch::naked_asm!("jmp {}", sym $target);
                #[cfg(target_arch = "aarch64")]
                core::arch::naked_asm!("b {}", sym $target);
                #[cfg(target_arch = "riscv64")]
                core::arch::naked_asm!("tail {}", sym $target);
            }
        )*
    };
}

#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64"
)))]
compile_error!(
    "client-ffi: add a tail-jump trampoline for this architecture in src/log/trampoline.rs"
);

trampolines! {
    logerror => sg_ffi_logerror,
    logwarn => sg_ffi_logwarn,
    loginfo => sg_ffi_loginfo,
    logdebug => sg_ffi_logdebug,
    logdebug2 => sg_ffi_logdebug2,
    logdebug3 => sg_ffi_logdebug3,
    logdebug4 => sg_ffi_logdebug4,
}
