//! The two system calls the source threads need beyond the ring itself:
//! entering a network namespace (for nodes whose tap interfaces live in
//! one) and asking whether an interface still exists there.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::os::fd::AsRawFd;

/// Moves the calling thread (only) into the network namespace `name`
/// (`/var/run/netns/<name>`, as created by `ip netns add`).
pub fn enter(name: &str) -> std::io::Result<()> {
    let f = std::fs::File::open(format!("/var/run/netns/{name}"))?;
    // SAFETY: setns on a valid descriptor; affects only this thread.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether `interface` exists in the calling thread's network namespace.
pub fn interface_exists(interface: &str) -> bool {
    let Ok(c) = CString::new(interface) else {
        return false;
    };
    // SAFETY: a valid NUL-terminated name.
    unsafe { libc::if_nametoindex(c.as_ptr()) != 0 }
}

/// CPU time (user + system) the calling thread has used, in seconds.
pub fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec for the kernel to fill.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// What the kernel says of a link, read through ioctls on a socket of the
/// calling thread's network namespace (sysfs shows the namespace it was
/// mounted in, not the thread's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// `up` (administratively up and running) or `down`.
    pub operstate: &'static str,
    /// Speed in Mbit/s, when the driver reports one.
    pub speed_mbps: Option<u64>,
}

/// `SIOCETHTOOL`, from linux/sockios.h.
const SIOCETHTOOL: libc::c_ulong = 0x8946;
/// `ETHTOOL_GSET`, from linux/ethtool.h.
const ETHTOOL_GSET: u32 = 0x1;

/// `struct ethtool_cmd` of linux/ethtool.h (the fields read here and the
/// layout around them).
#[repr(C)]
#[derive(Default)]
struct EthtoolCmd {
    cmd: u32,
    supported: u32,
    advertising: u32,
    speed: u16,
    duplex: u8,
    port: u8,
    phy_address: u8,
    transceiver: u8,
    autoneg: u8,
    mdio_support: u8,
    maxtxpkt: u32,
    maxrxpkt: u32,
    speed_hi: u16,
    eth_tp_mdix: u8,
    eth_tp_mdix_ctrl: u8,
    lp_advertising: u32,
    reserved: [u32; 2],
}

/// The state and speed of `interface` in the calling thread's network
/// namespace; `None` if it does not exist there.
pub fn link(interface: &str) -> Option<Link> {
    let name = CString::new(interface).ok()?;
    if name.as_bytes().len() >= libc::IFNAMSIZ {
        return None;
    }
    // SAFETY: a datagram socket for ioctls, closed by the OwnedFd.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: fd is a socket we just opened and own.
    let sock = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    // SAFETY: ifreq is plain data; all zeroes is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name.as_bytes()) {
        *dst = *src as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS fills ifru_flags of the ifreq we own.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) } != 0 {
        return None;
    }
    // SAFETY: the kernel wrote the flags member.
    let flags = i32::from(unsafe { req.ifr_ifru.ifru_flags });
    let running = libc::IFF_UP | libc::IFF_RUNNING;
    let operstate = if flags & running == running {
        "up"
    } else {
        "down"
    };
    let mut cmd = EthtoolCmd {
        cmd: ETHTOOL_GSET,
        ..EthtoolCmd::default()
    };
    req.ifr_ifru.ifru_data = (&mut cmd as *mut EthtoolCmd).cast();
    // SAFETY: SIOCETHTOOL reads cmd and fills the EthtoolCmd ifru_data
    // points to, which outlives the call.
    let ok = unsafe { libc::ioctl(sock.as_raw_fd(), SIOCETHTOOL, &mut req) } == 0;
    let speed = (u32::from(cmd.speed_hi) << 16) | u32::from(cmd.speed);
    // Drivers without a speed answer an error, 0 or all ones ("unknown").
    let speed_mbps = (ok && speed != 0 && speed != u32::MAX && cmd.speed != u16::MAX)
        .then_some(u64::from(speed));
    Some(Link {
        operstate,
        speed_mbps,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn loopback_is_up_without_a_speed_and_missing_links_are_none() {
        let lo = super::link("lo").expect("every namespace has lo");
        assert_eq!(lo.operstate, "up");
        assert_eq!(lo.speed_mbps, None);
        assert_eq!(super::link("sg-no-such-link"), None);
        assert_eq!(super::link(&"x".repeat(40)), None);
    }
}
