//! Bringing the loopback interface up. In a fresh network namespace (the process sandbox's
//! `unshare --net`) `lo` is down: 127.0.0.1 can be bound but not connected to. The relay
//! runs as the namespace's root there, so it may bring it up itself, which saves needing
//! `ip` in the image. In a container `lo` is already up and nothing is done.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::os::raw::{c_int, c_ulong};

/// `SIOCGIFFLAGS` / `SIOCSIFFLAGS` from `<linux/sockios.h>`.
const SIOCGIFFLAGS: c_ulong = 0x8913;
const SIOCSIFFLAGS: c_ulong = 0x8914;
/// `IFF_UP` from `<net/if.h>`.
const IFF_UP: i16 = 0x1;

/// `struct ifreq` as these two requests use it: the name, then the flags in a 24-byte
/// union.
#[repr(C)]
struct InterfaceFlags {
    name: [u8; 16],
    flags: i16,
    _rest: [u8; 22],
}

unsafe extern "C" {
    fn ioctl(fd: c_int, request: c_ulong, ...) -> c_int;
}

/// Brings `lo` up if it is down; `Ok(true)` when it did.
pub fn ensure_up() -> io::Result<bool> {
    // Any socket will do for interface requests; binding 127.0.0.1 works even while lo is
    // down. An address, not a string: resolving names would link glibc's resolver into
    // the static binary.
    let socket = UdpSocket::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
    let mut request = InterfaceFlags {
        name: [0; 16],
        flags: 0,
        _rest: [0; 22],
    };
    request.name[..2].copy_from_slice(b"lo");
    // SAFETY: the request is a properly sized and aligned `struct ifreq` the kernel reads
    // the name from and writes the flags into; the socket is open for the whole call.
    if unsafe { ioctl(socket.as_raw_fd(), SIOCGIFFLAGS, &mut request) } < 0 {
        return Err(io::Error::last_os_error());
    }
    if request.flags & IFF_UP != 0 {
        return Ok(false);
    }
    request.flags |= IFF_UP;
    // SAFETY: as above; the kernel only reads the request.
    if unsafe { ioctl(socket.as_raw_fd(), SIOCSIFFLAGS, &request) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_is_the_size_of_an_ifreq() {
        assert_eq!(std::mem::size_of::<InterfaceFlags>(), 40);
    }

    #[test]
    fn an_interface_that_is_up_is_left_alone() {
        // The test host's lo is up (the tests connect over it), so nothing changes and no
        // privilege is needed.
        assert!(!ensure_up().unwrap());
    }
}
