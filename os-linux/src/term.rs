//! The host terminal behind the console: raw mode and getting the user's settings back
//! (Linux UML `arch/um/drivers/chan_user.c` puts the host tty in raw mode with `cfmakeraw`).
//!
//! [`make_raw`] saves the host termios, switches to raw mode (the guest's line discipline does
//! echo and editing) and arranges that [`restore`] runs on every way out: `exit` (an `atexit`
//! handler), a Rust panic (a panic hook), and SIGTERM, SIGINT, SIGHUP (unless [`watch_hangup`]
//! took it) and SIGQUIT to `linux` (handlers that restore, then let the signal kill the process
//! as it would have). [`restore`]
//! itself is idempotent and async-signal-safe.
//!
//! [`watch_winch`] turns host SIGWINCH into a readable pipe (the classic self-pipe), so the
//! console's reader thread can wait for input and resizes with one [`wait_readable`].
//! [`watch_hangup`] does the same for SIGHUP (the user's terminal went away): the console turns
//! it into a hangup of the guest's console instead of dying of it, and takes the SIGHUP out
//! of the fatal set above.
//!
//! Neighbours: `um-drivers` (the console) above; only libc below.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// The host terminal settings to put back, and the fd they belong to.
struct Saved {
    fd: RawFd,
    termios: libc::termios,
}

static SAVED: OnceLock<Saved> = OnceLock::new();
/// Raw mode is on (cleared by the first restore).
static RAW: AtomicBool = AtomicBool::new(false);
/// Write end of the SIGWINCH pipe (-1: none).
static WINCH_FD: AtomicI32 = AtomicI32::new(-1);
/// Write end of the SIGHUP pipe (-1: none).
static HUP_FD: AtomicI32 = AtomicI32::new(-1);

/// Whether `fd` is a terminal.
pub fn is_terminal(fd: BorrowedFd<'_>) -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(fd.as_raw_fd()) == 1 }
}

/// Whether the host terminal is in raw mode now (the kernel log then needs `\r\n`).
pub fn raw_active() -> bool {
    RAW.load(Ordering::Acquire)
}

/// Puts the host terminal `fd` into raw mode (`cfmakeraw`), saving its settings for
/// [`restore`], and installs the restore hooks. Returns false if `fd` is not a terminal
/// (nothing changes). Only the first call does anything.
pub fn make_raw(fd: BorrowedFd<'static>) -> io::Result<bool> {
    if !is_terminal(fd) {
        return Ok(false);
    }
    if SAVED.get().is_some() {
        return Ok(true);
    }
    // SAFETY: termios is plain data; tcgetattr fills it in completely on success.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: tcgetattr writes one termios.
    if unsafe { libc::tcgetattr(fd.as_raw_fd(), &mut t) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let _ = SAVED.set(Saved {
        fd: fd.as_raw_fd(),
        termios: t,
    });
    install_hooks();
    let mut raw = t;
    // SAFETY: cfmakeraw edits the termios we own.
    unsafe { libc::cfmakeraw(&mut raw) };
    raw.c_cc[libc::VMIN] = 1;
    raw.c_cc[libc::VTIME] = 0;
    RAW.store(true, Ordering::Release);
    // SAFETY: tcsetattr reads one termios.
    if unsafe { libc::tcsetattr(fd.as_raw_fd(), libc::TCSADRAIN, &raw) } != 0 {
        RAW.store(false, Ordering::Release);
        return Err(io::Error::last_os_error());
    }
    Ok(true)
}

/// Puts the saved host terminal settings back. Idempotent; safe in a signal handler (only
/// atomics and `tcsetattr`).
pub fn restore() {
    if !RAW.swap(false, Ordering::AcqRel) {
        return;
    }
    if let Some(s) = SAVED.get() {
        // SAFETY: tcsetattr reads one termios that lives in a static.
        unsafe { libc::tcsetattr(s.fd, libc::TCSADRAIN, &s.termios) };
    }
}

extern "C" fn restore_at_exit() {
    restore();
}

/// A terminating signal: restore the terminal, then die of the signal as before (the handler
/// was installed with SA_RESETHAND, so re-raising takes the default action once it returns).
extern "C" fn on_fatal_signal(sig: libc::c_int) {
    restore();
    // SAFETY: raise is async-signal-safe; the signal stays blocked until the handler returns.
    unsafe { libc::raise(sig) };
}

extern "C" fn on_winch(_sig: libc::c_int) {
    notify(&WINCH_FD);
}

extern "C" fn on_hup(_sig: libc::c_int) {
    notify(&HUP_FD);
}

/// One byte to a signal's self-pipe (async-signal-safe).
fn notify(pipe: &AtomicI32) {
    let fd = pipe.load(Ordering::Relaxed);
    if fd >= 0 {
        let b = 1u8;
        // SAFETY: write is async-signal-safe; one byte from a local; a full pipe just drops
        // the notification (one pending byte is enough). errno is saved and restored.
        unsafe {
            let e = *libc::__errno_location();
            libc::write(fd, (&b as *const u8).cast(), 1);
            *libc::__errno_location() = e;
        }
    }
}

fn set_handler(sig: libc::c_int, handler: extern "C" fn(libc::c_int), flags: libc::c_int) {
    // SAFETY: sigaction is plain data; zeroed is a valid empty action.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = handler as usize;
    sa.sa_flags = flags;
    // SAFETY: sa_mask is ours; sigaction installs a handler that only calls
    // async-signal-safe functions.
    unsafe {
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut());
    }
}

fn install_hooks() {
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.swap(true, Ordering::AcqRel) {
        return;
    }
    // SAFETY: registers a plain extern "C" function to run at exit.
    unsafe { libc::atexit(restore_at_exit) };
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
        if sig == libc::SIGHUP && HUP_FD.load(Ordering::Acquire) >= 0 {
            continue; // a hangup of the console, see watch_hangup
        }
        set_handler(sig, on_fatal_signal, libc::SA_RESETHAND);
    }
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        prev(info);
    }));
}

/// Delivers host SIGWINCH as a byte on the returned pipe (read end, non-blocking). Only one
/// watcher exists; a second call fails with `EBUSY`.
pub fn watch_winch() -> io::Result<OwnedFd> {
    watch(libc::SIGWINCH, &WINCH_FD, on_winch)
}

/// Delivers host SIGHUP as a byte on the returned pipe (read end, non-blocking) instead of
/// letting it kill `linux`. Only one watcher exists; a second call fails with `EBUSY`.
pub fn watch_hangup() -> io::Result<OwnedFd> {
    watch(libc::SIGHUP, &HUP_FD, on_hup)
}

/// A self-pipe for `sig`, whose handler writes to `slot`'s descriptor.
fn watch(
    sig: libc::c_int,
    slot: &AtomicI32,
    handler: extern "C" fn(libc::c_int),
) -> io::Result<OwnedFd> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned here.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    if slot
        .compare_exchange(-1, wr.as_raw_fd(), Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return Err(io::Error::from_raw_os_error(libc::EBUSY));
    }
    // The write end lives as long as the process: the handler may run at any time.
    std::mem::forget(wr);
    set_handler(sig, handler, libc::SA_RESTART);
    Ok(rd)
}

/// Empties a non-blocking pipe.
pub fn drain(fd: BorrowedFd<'_>) {
    let mut buf = [0u8; 64];
    loop {
        // SAFETY: read writes at most 64 bytes into the buffer.
        let r = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if r <= 0 {
            break;
        }
    }
}

/// Waits until at least one of `fds` is readable (or at end of file / in error); returns which.
pub fn wait_readable(fds: &[BorrowedFd<'_>]) -> io::Result<Vec<bool>> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|f| libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    loop {
        // SAFETY: poll on pollfds we own, no timeout.
        let r = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, -1) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        return Ok(p.iter().map(|x| x.revents != 0).collect());
    }
}

/// The window size of a host terminal: (rows, cols, xpixel, ypixel).
pub fn winsize(fd: BorrowedFd<'_>) -> Option<(u16, u16, u16, u16)> {
    // SAFETY: winsize is plain data.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGWINSZ, &mut ws) } == 0 {
        Some((ws.ws_row, ws.ws_col, ws.ws_xpixel, ws.ws_ypixel))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn pipe() -> (OwnedFd, OwnedFd) {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two descriptors.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: both were just created and are owned here.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    #[test]
    fn not_a_terminal_is_left_alone() {
        let (r, _w) = pipe();
        // SAFETY: the pipe lives until the end of the test; the borrow is not kept.
        let fd: BorrowedFd<'static> = unsafe { BorrowedFd::borrow_raw(r.as_fd().as_raw_fd()) };
        assert!(!make_raw(fd).unwrap());
        assert!(!raw_active());
        restore();
        assert!(winsize(r.as_fd()).is_none());
    }

    #[test]
    fn wait_readable_reports_ready_fds() {
        let (r1, w1) = pipe();
        let (r2, _w2) = pipe();
        // SAFETY: writes one byte from a static string.
        let n = unsafe { libc::write(w1.as_raw_fd(), b"x".as_ptr().cast(), 1) };
        assert_eq!(n, 1);
        let v = wait_readable(&[r1.as_fd(), r2.as_fd()]).unwrap();
        assert_eq!(v, vec![true, false]);
    }
}
