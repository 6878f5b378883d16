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
//! The user's terminal going away (host SIGHUP to `linux`, or a read of a host terminal failing
//! with EIO or seeing end of file, as when a terminal window or tmux pane closes) is a hangup of
//! the console, as a pty slave's when its master closes (Linux `pty_close` -> `tty_vhangup`):
//! the console's session leader gets SIGHUP and SIGCONT, reads see end of file and writes fail
//! with EIO. Then [`hangup_watchdog`] powers the machine off once nothing but init has had the
//! console open for [`HANGUP_IDLE`], or [`HANGUP_GRACE`] after the hangup at the latest, so no
//! `linux` (and no stub) is left running unseen on the host.
//!
//! Neighbours: [`crate::tty`] (the tty core), `um-os-linux` (host fds and the terminal).

use crate::tty::{Tty, TtyDriver};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
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
/// mode (restored at exit by `um_os_linux::term`) and turns host SIGHUP into a console hangup.
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
    // Before raw mode installs its fatal-signal hooks, so SIGHUP is ours from the start.
    let hup = term::watch_hangup()
        .map_err(|e| log::warn!("console: no SIGHUP watch: {e}"))
        .ok();
    let in_fd = input.fd();
    if in_fd.is_none() {
        tty.set_eof();
    }
    if let Some(fd) = in_fd {
        match term::make_raw(fd) {
            Ok(true) => log::info!(
                "console: host terminal on fd {} in raw mode",
                fd.as_raw_fd()
            ),
            Ok(false) => {}
            Err(e) => log::warn!("console: cannot put the host terminal in raw mode: {e}"),
        }
    }
    let tty_is_terminal =
        in_fd.is_some_and(term::is_terminal) || output.fd().is_some_and(term::is_terminal);
    let winch = if tty_is_terminal {
        term::watch_winch()
            .map_err(|e| log::warn!("console: no SIGWINCH watch: {e}"))
            .ok()
    } else {
        None
    };
    let weak = Arc::downgrade(&tty);
    let k = Arc::downgrade(kernel);
    let spawned = std::thread::Builder::new()
        .name("console".into())
        .spawn(move || {
            reader(Reader {
                tty: weak,
                kernel: k,
                in_fd,
                winch,
                hup,
                input,
                output,
            })
        });
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

/// What the `console` thread watches.
struct Reader {
    tty: Weak<Tty>,
    kernel: Weak<Kernel>,
    /// Host input (`None`: `con0=null`).
    in_fd: Option<BorrowedFd<'static>>,
    /// Host SIGWINCH, when the console is a host terminal.
    winch: Option<std::os::fd::OwnedFd>,
    /// Host SIGHUP.
    hup: Option<std::os::fd::OwnedFd>,
    input: Channel,
    output: Channel,
}

/// The `console` thread: host input, resizes and hangups to the tty.
fn reader(r: Reader) {
    let waker = Arc::new(Waker::default());
    let mut buf = vec![0u8; 4096];
    let mut input_open = r.in_fd.is_some();
    let in_is_terminal = r.in_fd.is_some_and(term::is_terminal);
    let mut hung_up = false;
    loop {
        // Which fd sits at which index of the poll set.
        let mut fds = Vec::new();
        let mut idx_in = None;
        let mut idx_winch = None;
        let mut idx_hup = None;
        if input_open && let Some(fd) = r.in_fd {
            idx_in = Some(fds.len());
            fds.push(fd);
        }
        if !hung_up {
            if let Some(w) = &r.winch {
                idx_winch = Some(fds.len());
                fds.push(w.as_fd());
            }
            if let Some(h) = &r.hup {
                idx_hup = Some(fds.len());
                fds.push(h.as_fd());
            }
        }
        if fds.is_empty() {
            return;
        }
        let ready = match term::wait_readable(&fds) {
            Ok(v) => v,
            Err(e) => {
                log::warn!("console: poll: {e}");
                return;
            }
        };
        let is = |i: Option<usize>| i.is_some_and(|i| ready[i]);
        let Some(tty) = r.tty.upgrade() else {
            return;
        };
        if is(idx_winch) {
            if let Some(w) = &r.winch {
                term::drain(w.as_fd());
            }
            if let Some(ws) = host_winsize(r.input, r.output) {
                tty.set_winsize(ws);
            }
        }
        let mut hangup = false;
        if is(idx_hup) {
            if let Some(h) = &r.hup {
                term::drain(h.as_fd());
            }
            log::info!("console: host SIGHUP");
            hangup = true;
        }
        if let (true, Some(fd)) = (is(idx_in), r.in_fd) {
            match host::read(fd, &mut buf) {
                Ok(0) if in_is_terminal => {
                    log::info!("console: host terminal closed");
                    hangup = true;
                }
                Ok(0) => {
                    input_open = false;
                    tty.set_eof();
                }
                Ok(n) => feed(&tty, &waker, &buf[..n]),
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {}
                Err(e) if in_is_terminal => {
                    log::info!("console: host terminal gone ({e})");
                    hangup = true;
                }
                Err(_) => {
                    // EIO and friends on a pipe or file: no more input.
                    input_open = false;
                    tty.set_eof();
                }
            }
        }
        if hangup && !hung_up {
            hung_up = true;
            input_open = false;
            host_hangup(&tty, r.kernel.clone());
        }
    }
}

/// How long nothing but init may have the console open after a hangup before the machine
/// powers off (time for the guest's SIGHUP handlers, and for an init that shuts down by
/// itself, as busybox init does in about two seconds).
pub const HANGUP_IDLE: Duration = Duration::from_millis(2500);

/// The latest a hung-up console powers the machine off, however the guest reacts.
pub const HANGUP_GRACE: Duration = Duration::from_secs(10);

/// The user's terminal went away: put the host terminal back (it is gone or going), hang the
/// console up and start the power-off watchdog.
fn host_hangup(tty: &Arc<Tty>, kernel: Weak<Kernel>) {
    term::restore();
    tty.set_eof();
    tty.hangup();
    let t = Arc::downgrade(tty);
    let spawned = std::thread::Builder::new()
        .name("console-hup".into())
        .spawn(move || hangup_watchdog(t, kernel));
    if let Err(e) = spawned {
        log::error!("console: cannot start the hangup watchdog: {e}");
    }
}

/// Whether a process other than init (kernel-wide pid 1) has a file open on `tty`'s device.
/// Forks share their parent's open files, so every descriptor table is looked at.
fn console_in_use(k: &Kernel, rdev: u64) -> bool {
    k.tasks.processes().iter().filter(|p| p.pid != 1).any(|p| {
        let table = um_kernel::task::lock(&p.files).clone();
        let table = um_kernel::task::lock(&table);
        table
            .iter()
            .any(|(_, e)| e.file.ops.stat().is_ok_and(|st| st.rdev == rdev))
    })
}

/// Powers off after a hangup: once nothing but init has had the console open for
/// [`HANGUP_IDLE`], or [`HANGUP_GRACE`] after the hangup. An init that ends by itself (a shell
/// as init reading end of file) or powers off (busybox init after its console shell) ends
/// `linux` first.
fn hangup_watchdog(tty: Weak<Tty>, kernel: Weak<Kernel>) {
    let start = Instant::now();
    let mut idle_since: Option<Instant> = None;
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let (Some(k), Some(t)) = (kernel.upgrade(), tty.upgrade()) else {
            return;
        };
        let now = Instant::now();
        if console_in_use(&k, t.rdev) {
            idle_since = None;
        } else if idle_since.is_none() {
            idle_since = Some(now);
        }
        let idle = idle_since.is_some_and(|s| now - s >= HANGUP_IDLE);
        if idle || now - start >= HANGUP_GRACE {
            um_kernel::printk::line(if idle {
                "console: hung up and no longer in use; powering off"
            } else {
                "console: hung up and still in use; powering off"
            });
            um_kernel::printk::line("reboot: Power down");
            um_kernel::run::shutdown(&k, 0);
        }
    }
}
