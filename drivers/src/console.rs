//! The console (`con0=`): guest reads come from a host fd, writes go to a host fd, as UML's
//! `fd:N` channels do (arch/um/drivers/fd.c). To the guest it is a character device that
//! answers the basic terminal ioctls, so programs see a terminal.

use std::os::fd::{BorrowedFd, RawFd};
use std::sync::Mutex;
use um_kernel::vfs::{FileOps, GuestMem, Kstat, mode};
use um_kernel::wait::{IoCtx, PollTable};
use um_uapi::abi::pod::Pod;
use um_uapi::abi::tty::{Termios, Winsize};
use um_uapi::{Errno, SysResult};

/// A console input or output channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    /// Nothing: reads see end of file, writes are discarded.
    Null,
    /// A host descriptor.
    Fd(RawFd),
}

/// The console device.
pub struct Console {
    input: Channel,
    output: Channel,
    termios: Mutex<Termios>,
}

const TCGETS: u32 = 0x5401;
const TCSETS: u32 = 0x5402;
const TCSETSW: u32 = 0x5403;
const TCSETSF: u32 = 0x5404;
const TIOCGWINSZ: u32 = 0x5413;
const TIOCSWINSZ: u32 = 0x5414;
const TIOCGPGRP: u32 = 0x540f;
const TIOCSPGRP: u32 = 0x5410;
const TIOCSCTTY: u32 = 0x540e;

impl Console {
    /// A console reading from `input` and writing to `output`.
    pub fn new(input: Channel, output: Channel) -> Console {
        Console {
            input,
            output,
            termios: Mutex::new(Termios::linux_default()),
        }
    }

    fn fd(c: Channel) -> Option<BorrowedFd<'static>> {
        match c {
            Channel::Fd(fd) => Some(um_os_linux::host::console_fd(fd)),
            Channel::Null => None,
        }
    }
}

impl FileOps for Console {
    fn read(&self, _io: &IoCtx<'_>, buf: &mut [u8], _off: u64) -> SysResult<usize> {
        match Self::fd(self.input) {
            None => Ok(0),
            Some(fd) => um_os_linux::host::read(fd, buf)
                .map_err(|e| e.raw_os_error().and_then(Errno::new).unwrap_or(Errno::EIO)),
        }
    }

    fn write(&self, _io: &IoCtx<'_>, data: &[u8], _off: u64) -> SysResult<usize> {
        if let Some(fd) = Self::fd(self.output) {
            um_os_linux::host::write_all(fd, data)
                .map_err(|e| e.raw_os_error().and_then(Errno::new).unwrap_or(Errno::EIO))?;
        }
        Ok(data.len())
    }

    fn is_stream(&self) -> bool {
        true
    }

    fn poll(&self, events: u16, _pt: Option<&PollTable<'_>>) -> u16 {
        let mut r = events & 0x4; // POLLOUT: the host output never blocks for long
        if events & 0x1 != 0 {
            match Self::fd(self.input) {
                None => r |= 0x1,
                Some(fd) => {
                    if um_os_linux::host::poll_in(fd) {
                        r |= 0x1;
                    }
                }
            }
        }
        r
    }

    fn stat(&self) -> SysResult<Kstat> {
        // /dev/console is character device 5:1.
        Ok(Kstat {
            mode: mode::S_IFCHR | 0o600,
            rdev: (5 << 8) | 1,
            nlink: 1,
            blksize: 1024,
            ..Kstat::default()
        })
    }

    fn ioctl(&self, _io: &IoCtx<'_>, cmd: u32, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        match cmd {
            TCGETS => {
                let t = *um_kernel::task::lock(&self.termios);
                mem.write(arg, &t.as_bytes())?;
                Ok(0)
            }
            TCSETS | TCSETSW | TCSETSF => {
                let mut b = vec![0u8; Termios::SIZE];
                mem.read(arg, &mut b)?;
                *um_kernel::task::lock(&self.termios) =
                    Termios::from_bytes(&b).ok_or(Errno::EFAULT)?;
                Ok(0)
            }
            TIOCGWINSZ => {
                let (rows, cols) = Self::fd(self.output)
                    .and_then(um_os_linux::host::winsize)
                    .unwrap_or((24, 80));
                let ws = Winsize {
                    ws_row: rows,
                    ws_col: cols,
                    ..Default::default()
                };
                mem.write(arg, &ws.as_bytes())?;
                Ok(0)
            }
            TIOCSWINSZ | TIOCSCTTY => Ok(0),
            TIOCGPGRP => {
                mem.write(arg, &1i32.to_le_bytes())?;
                Ok(0)
            }
            TIOCSPGRP => Ok(0),
            _ => Err(Errno::ENOTTY),
        }
    }
}
