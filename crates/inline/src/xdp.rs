//! Attaching the sink at XDP: a BPF link on the interface's XDP hook in
//! native (driver) mode, so the sink strips the header before the kernel
//! builds an skb. Like a tcx link, the link belongs to the file descriptor
//! that made it: a killed agent's program leaves with it.
//!
//! Generic (skb) XDP is refused on purpose: it runs after the skb exists
//! and would only be a slower tc hook; [`crate::program`] falls back to tc.
//! Same thin-wrapper style as [`crate::tcx`], hence the module-wide unsafe.
#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use libbpf_rs::libbpf_sys as sys;
use libbpf_rs::query::LinkInfoIter;

use crate::tcx::last_error;

/// Attach `prog` to the XDP hook of `ifindex` in driver mode; the returned
/// link keeps it attached until it is closed or detached.
pub fn attach(prog: BorrowedFd<'_>, ifindex: i32) -> std::io::Result<OwnedFd> {
    let opts = sys::bpf_link_create_opts {
        sz: std::mem::size_of::<sys::bpf_link_create_opts>() as _,
        flags: sys::XDP_FLAGS_DRV_MODE,
        ..Default::default()
    };
    // SAFETY: plain syscall wrapper; `opts` outlives the call.
    let fd = unsafe { sys::bpf_link_create(prog.as_raw_fd(), ifindex, sys::BPF_XDP, &opts) };
    if fd < 0 {
        return Err(last_error(fd));
    }
    // SAFETY: a fresh fd that nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Id of the program on the driver-mode XDP hook of `ifindex` (calling
/// thread's namespace), if any.
pub fn attached(ifindex: i32) -> Option<u32> {
    let mut id = 0u32;
    // SAFETY: `id` outlives the call.
    let ret = unsafe { sys::bpf_xdp_query_id(ifindex, sys::XDP_FLAGS_DRV_MODE as i32, &mut id) };
    (ret == 0 && id != 0).then_some(id)
}

/// Detach the XDP link through which program `prog_id` is attached (ids
/// are global, so this cannot touch another namespace's interface).
pub fn detach_prog(prog_id: u32) -> std::io::Result<()> {
    let link = LinkInfoIter::default()
        .find(|l| l.prog_id == prog_id)
        .ok_or_else(|| std::io::Error::from_raw_os_error(nix::errno::Errno::ENOENT as i32))?;
    crate::tcx::detach_id(link.id)
}
