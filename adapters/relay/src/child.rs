//! Waiting for the program, and whatever else the relay must reap. Run as the first
//! process of a pid namespace (the process sandbox), the relay inherits every orphan
//! there; reaping any child, not only its own, keeps them from piling up as zombies.

use std::io;
use std::os::raw::c_int;

unsafe extern "C" {
    fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
}

/// How the program ended, as a shell would report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this code.
    Exited(i32),
    /// A signal killed it.
    Signalled(i32),
}

impl Ended {
    /// The relay's own exit code: the program's, or 128 + the signal.
    pub fn code(self) -> i32 {
        match self {
            Ended::Exited(code) => code,
            Ended::Signalled(signal) => 128 + signal,
        }
    }

    /// Decodes a `waitpid` status.
    fn from_status(status: c_int) -> Self {
        let signal = status & 0x7f;
        if signal == 0 {
            Ended::Exited((status >> 8) & 0xff)
        } else {
            Ended::Signalled(signal)
        }
    }
}

/// Reaps children until `pid` ends; how it ended.
pub fn wait_for(pid: u32) -> io::Result<Ended> {
    let pid = c_int::try_from(pid).map_err(io::Error::other)?;
    loop {
        let mut status: c_int = 0;
        // SAFETY: waitpid only writes the status through the pointer, which is valid.
        let reaped = unsafe { waitpid(-1, &mut status, 0) };
        if reaped == pid {
            return Ok(Ended::from_status(status));
        }
        if reaped < 0 {
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
        // Another child (an orphan of the program) was reaped: keep waiting.
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    #[test]
    fn statuses_decode_as_a_shell_reports_them() {
        assert_eq!(Ended::from_status(0), Ended::Exited(0));
        assert_eq!(Ended::from_status(3 << 8), Ended::Exited(3));
        assert_eq!(Ended::from_status(9), Ended::Signalled(9));
        // A core dump sets bit 7, which is not part of the signal.
        assert_eq!(Ended::from_status(0x80 | 11), Ended::Signalled(11));
        assert_eq!(Ended::Signalled(15).code(), 143);
        assert_eq!(Ended::Exited(7).code(), 7);
    }

    #[test]
    // `wait_for` reaps them with waitpid, which clippy cannot see.
    #[allow(clippy::zombie_processes)]
    fn the_programs_exit_is_waited_for() {
        let child = Command::new("/bin/sh")
            .args(["-c", "exit 5"])
            .spawn()
            .unwrap();
        assert_eq!(wait_for(child.id()).unwrap(), Ended::Exited(5));
        let child = Command::new("/bin/sh")
            .args(["-c", "kill -TERM $$"])
            .spawn()
            .unwrap();
        assert_eq!(wait_for(child.id()).unwrap(), Ended::Signalled(15));
    }
}
