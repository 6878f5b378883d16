//! The console (`con0=IN,OUT`): a [`Tty`] whose input comes from a host fd and whose output goes
//! to a host fd, as UML's `fd:N` channels (arch/um/drivers/fd.c, line.c, chan_kern.c).
//!
//! A host reader thread (`console`) reads host IN all the time and feeds the tty's line
//! discipline, so ^C reaches the foreground process group even while nobody reads. When host IN
//! is a terminal it is put in raw mode (`um_os_linux::term`): the guest's line discipline does
//! echo and editing, and host SIGWINCH becomes a window-size change (SIGWINCH to the guest's
//! foreground group). End of file on host IN (a pipe closed, `con0=null`) ends the console's
//! input for good: an unfinished line is delivered as ^D would, then every read returns 0.
//!
//! Neighbours: [`crate::tty`] (the tty core), `um-os-linux` (host fds and the terminal).

use crate::tty::{Tty, TtyDriver};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::{Arc, Weak};
use um_kernel::kernel::Kernel;
use um_kernel::vfs::encode_dev;
use um_kernel::wait::Waker;
use um_os_linux::{host, term};
use um_uapi::abi::tty::Winsize;

/// A console input or output channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    /// Nothing: reads see end of file, writes are discarded.
    Null,
    /// A host descriptor.
    Fd(RawFd),
}

impl Channel {
    fn fd(self) -> Option<BorrowedFd<'static>> {
        match self {
            Channel::Fd(fd) => Some(host::console_fd(fd)),
            Channel::Null => None,
        }
    }
}

/// Output to the host.
struct ConsoleDriver {
    out: Option<BorrowedFd<'static>>,
}

impl TtyDriver for ConsoleDriver {
    fn write(&self, data: &[u8]) -> usize {
        if let Some(fd) = self.out {
            // A host output that went away loses the output, as a disconnected line would.
            let _ = host::write_all(fd, data);
        }
        data.len()
    }
}

/// The host terminal's size, if either channel is a terminal.
fn host_winsize(input: Channel, output: Channel) -> Option<Winsize> {
    [input, output]
        .iter()
        .filter_map(|c| c.fd())
        .find_map(term::winsize)
        .map(|(r, c, x, y)| Winsize {
            ws_row: r,
            ws_col: c,
            ws_xpixel: x,
            ws_ypixel: y,
        })
}

/// Creates the console tty and starts its host reader. Puts a host terminal on IN into raw
/// mode (restored at exit by `um_os_linux::term`).
pub fn start(kernel: &Arc<Kernel>, input: Channel, output: Channel) -> Arc<Tty> {
    let ws = host_winsize(input, output).unwrap_or(Winsize {
        ws_row: 24,
        ws_col: 80,
        ..Winsize::default()
    });
    let tty = Tty::new(
        "console".into(),
        encode_dev(5, 1),
        Box::new(ConsoleDriver { out: output.fd() }),
        Arc::downgrade(kernel),
        ws,
    );
    let Some(in_fd) = input.fd() else {
        tty.set_eof();
        return tty;
    };
    match term::make_raw(in_fd) {
        Ok(true) => log::info!(
            "console: host terminal on fd {} in raw mode",
            in_fd.as_raw_fd()
        ),
        Ok(false) => {}
        Err(e) => log::warn!("console: cannot put the host terminal in raw mode: {e}"),
    }
    let tty_is_terminal = term::is_terminal(in_fd) || output.fd().is_some_and(term::is_terminal);
    let winch = if tty_is_terminal {
        term::watch_winch()
            .map_err(|e| log::warn!("console: no SIGWINCH watch: {e}"))
            .ok()
    } else {
        None
    };
    let weak = Arc::downgrade(&tty);
    let spawned = std::thread::Builder::new()
        .name("console".into())
        .spawn(move || reader(weak, in_fd, winch, input, output));
    if let Err(e) = spawned {
        log::error!("console: cannot start the input thread: {e}");
        tty.set_eof();
    }
    tty
}

/// Feeds all of `data` to the tty, waiting for room when the line discipline is full.
fn feed(tty: &Tty, waker: &Arc<Waker>, mut data: &[u8]) {
    while !data.is_empty() {
        let n = tty.receive(data);
        data = &data[n..];
        if n == 0 {
            loop {
                waker.reset();
                tty.room_wait.add(waker);
                if tty.has_room() {
                    break;
                }
                waker.sleep(None);
            }
        }
    }
}

/// The `console` thread: host input and resizes to the tty.
fn reader(
    tty: Weak<Tty>,
    in_fd: BorrowedFd<'static>,
    winch: Option<std::os::fd::OwnedFd>,
    input: Channel,
    output: Channel,
) {
    let waker = Arc::new(Waker::default());
    let mut buf = vec![0u8; 4096];
    let mut input_open = true;
    loop {
        let mut fds = Vec::new();
        if input_open {
            fds.push(in_fd);
        }
        if let Some(w) = &winch {
            fds.push(w.as_fd());
        }
        if fds.is_empty() {
            return;
        }
        let ready = match term::wait_readable(&fds) {
            Ok(r) => r,
            Err(e) => {
                log::warn!("console: poll: {e}");
                return;
            }
        };
        let Some(tty) = tty.upgrade() else {
            return;
        };
        if let Some(w) = &winch
            && ready[fds.len() - 1]
        {
            term::drain(w.as_fd());
            if let Some(ws) = host_winsize(input, output) {
                tty.set_winsize(ws);
            }
        }
        if input_open && ready[0] {
            match host::read(in_fd, &mut buf) {
                Ok(0) => {
                    input_open = false;
                    tty.set_eof();
                }
                Ok(n) => feed(&tty, &waker, &buf[..n]),
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {}
                Err(_) => {
                    // EIO and friends: the host side is gone, like a hangup of the line.
                    input_open = false;
                    tty.set_eof();
                }
            }
        }
    }
}
