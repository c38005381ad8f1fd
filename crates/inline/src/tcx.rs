//! Attaching through tcx (Linux ≥ 6.6): BPF links on the tc ingress/egress
//! hooks without a qdisc or a classifier in between.
//!
//! Why: on the 2-core test machine an *empty* program attached through
//! clsact/cls_bpf on both ends already cost several per cent of small-packet
//! UDP throughput; through tcx the same empty programs cost nothing
//! measurable (docs/benchmarks.md, "In-line"). A link also belongs to the
//! file descriptor that made it, so a SIGKILLed agent's program goes away
//! with the process instead of staying on the interface.
//!
//! libbpf-rs does not wrap tcx yet; these are thin calls into the libbpf it
//! bundles (hence the module-wide unsafe, one syscall wrapper per block).
//! [`crate::program`] falls back to clsact where tcx is missing.
#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use libbpf_rs::libbpf_sys as sys;

use crate::program::Role;

fn attach_type(role: Role) -> sys::bpf_attach_type {
    match role {
        Role::Source => sys::BPF_TCX_EGRESS,
        Role::Sink => sys::BPF_TCX_INGRESS,
    }
}

pub(crate) fn last_error(ret: i32) -> std::io::Error {
    // libbpf returns -errno (and also sets errno).
    std::io::Error::from_raw_os_error(if ret < 0 { -ret } else { ret })
}

/// Attach `prog` to the hook of `role` on `ifindex`; the returned link fd
/// keeps it attached until it is closed or [`detach`]ed.
pub fn attach(prog: BorrowedFd<'_>, ifindex: i32, role: Role) -> std::io::Result<OwnedFd> {
    let opts = sys::bpf_link_create_opts {
        sz: std::mem::size_of::<sys::bpf_link_create_opts>() as _,
        ..Default::default()
    };
    // SAFETY: plain syscall wrapper; `opts` outlives the call.
    let fd = unsafe { sys::bpf_link_create(prog.as_raw_fd(), ifindex, attach_type(role), &opts) };
    if fd < 0 {
        return Err(last_error(fd));
    }
    // SAFETY: a fresh fd that nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Detach the link behind `link` (the program leaves the hook even if
/// other processes still hold the link).
pub fn detach(link: BorrowedFd<'_>) -> std::io::Result<()> {
    // SAFETY: plain syscall wrapper.
    let ret = unsafe { sys::bpf_link_detach(link.as_raw_fd()) };
    if ret < 0 {
        return Err(last_error(ret));
    }
    Ok(())
}

/// (program id, link id) of everything attached to the hook of `role`.
/// Empty where the kernel has no tcx.
pub fn attached(ifindex: i32, role: Role) -> Vec<(u32, u32)> {
    let mut progs = [0u32; 64];
    let mut links = [0u32; 64];
    let mut opts = sys::bpf_prog_query_opts {
        sz: std::mem::size_of::<sys::bpf_prog_query_opts>() as _,
        prog_ids: progs.as_mut_ptr(),
        link_ids: links.as_mut_ptr(),
        ..Default::default()
    };
    opts.__bindgen_anon_1.count = progs.len() as u32;
    // SAFETY: the id arrays hold `count` entries and outlive the call.
    let ret = unsafe { sys::bpf_prog_query_opts(ifindex, attach_type(role), &mut opts) };
    if ret < 0 {
        return Vec::new();
    }
    // SAFETY: the kernel wrote the number of entries it filled.
    let n = (unsafe { opts.__bindgen_anon_1.count } as usize).min(progs.len());
    progs[..n]
        .iter()
        .copied()
        .zip(links[..n].iter().copied())
        .collect()
}

/// Detach the link with kernel id `link_id` (a killed or older agent's).
pub fn detach_id(link_id: u32) -> std::io::Result<()> {
    // SAFETY: plain syscall wrapper.
    let fd = unsafe { sys::bpf_link_get_fd_by_id(link_id) };
    if fd < 0 {
        return Err(last_error(fd));
    }
    // SAFETY: a fresh fd that nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    detach(std::os::fd::AsFd::as_fd(&fd))
}

/// Name of the program with kernel id `id`, if it still exists.
pub fn program_name(id: u32) -> Option<String> {
    libbpf_rs::ProgramHandle::from_prog_id(id)
        .ok()
        .map(|p| p.name().to_string_lossy().into_owned())
}

/// Kernel id of the loaded program behind `prog`.
pub fn program_id(prog: BorrowedFd<'_>) -> std::io::Result<u32> {
    let mut info = sys::bpf_prog_info::default();
    let mut len = std::mem::size_of::<sys::bpf_prog_info>() as u32;
    // SAFETY: `info` is a bpf_prog_info of `len` bytes.
    let ret = unsafe { sys::bpf_prog_get_info_by_fd(prog.as_raw_fd(), &mut info, &mut len) };
    if ret < 0 {
        return Err(last_error(ret));
    }
    Ok(info.id)
}
