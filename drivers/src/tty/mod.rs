//! The TTY core (Linux `drivers/tty/tty_io.c`, `tty_ioctl.c`, `tty_jobctrl.c`): a [`Tty`] is
//! one terminal with its termios, window size, N_TTY line discipline ([`ldisc`]), controlling
//! session and foreground process group. A [`TtyDriver`] below it takes the processed output
//! (the host console in [`crate::console`], the master side of a pty in [`pty`]); whoever
//! produces input calls [`Tty::receive`].
//!
//! Opened ttys are [`TtyFile`]s. The controlling-terminal relationship lives in the tty (the
//! session id it belongs to), so "the caller's controlling tty" is the registered tty whose
//! session is the caller's (see [`registry`]). Job control follows `tty_jobctrl.c`: background
//! reads get SIGTTIN, background writes with TOSTOP and background termios changes get SIGTTOU,
//! and the call returns `ERESTARTSYS` so it restarts after SIGCONT.
//!
//! Neighbours: `um-kernel` (wait queues, signals, the task table, `FileOps`), `um-uapi`
//! (termios and ioctl numbers).

pub mod ldisc;
pub mod pty;

use ldisc::{EchoOp, NTty, OutState, noncanon_params};
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};
use um_kernel::kernel::Kernel;
use um_kernel::signal::{self, SIGCONT, SIGHUP, SIGTTIN, SIGTTOU, SIGWINCH, sigbit};
use um_kernel::task::{Process, Task, lock};
use um_kernel::vfs::{FileOps, GuestMem, Kstat, mode};
use um_kernel::wait::{IoCtx, PollTable, WaitError, WaitQueue, wait_event};
use um_uapi::abi::capability::{CAP_CHECKPOINT_RESTORE, CAP_SYS_ADMIN};
use um_uapi::abi::pod::Pod;
use um_uapi::abi::signal::Siginfo;
use um_uapi::abi::tty::*;
use um_uapi::{Errno, SysResult};

use um_uapi::abi::signal::SI_KERNEL;

use um_uapi::abi::poll::POLLERR;
use um_uapi::abi::poll::POLLHUP;
use um_uapi::abi::poll::POLLIN;
use um_uapi::abi::poll::POLLOUT;
use um_uapi::abi::poll::POLLRDNORM;
use um_uapi::abi::poll::POLLWRNORM;

pub use um_uapi::abi::fcntl::O_NOCTTY;
/// `KDGKBTYPE`, answered only by virtual consoles.
pub const KDGKBTYPE: u32 = 0x4B33;

/// The device below a tty: where processed output goes.
pub trait TtyDriver: Send + Sync {
    /// Takes output; returns how much was taken (less when the device is full).
    fn write(&self, data: &[u8]) -> usize;
    /// How much output the device takes now.
    fn write_room(&self) -> usize {
        usize::MAX
    }
    /// Output not yet consumed (TIOCOUTQ).
    fn chars_in_buffer(&self) -> usize {
        0
    }
    /// Discards output not yet consumed (TCOFLUSH).
    fn flush_output(&self) {}
    /// What the device keeps of new settings (`tty_operations.set_termios`), after the
    /// locked bits were applied.
    fn set_termios(&self, _t: &mut Termios) {}
    /// The first file on the tty was opened.
    fn opened(&self) {}
    /// The last file on the tty was closed.
    fn closed(&self) {}
    /// Whether this is a pty slave (the session-leader-exit hangup differs, as in Linux).
    fn is_pty(&self) -> bool {
        false
    }
}

/// Mutable tty state, under one lock.
struct TtyState {
    termios: Termios,
    /// The locked termios (`tty->termios_locked`, TIOCSLCKTRMIOS): a set bit or a non-zero
    /// control character keeps the current value on every termios change.
    locked: Termios,
    ld: NTty,
    winsize: Winsize,
    /// Session this is the controlling tty of (0: none).
    session: u32,
    /// Foreground process group (0: none).
    pgrp: u32,
    /// Processes of the session that gave the tty up with TIOCNOTTY (not session leaders).
    detached: BTreeSet<u32>,
    /// Output stopped by ^S or TCOOFF.
    stopped: bool,
    /// Hung up (pty master gone): reads see end of file, writes EIO.
    hung_up: bool,
    /// No more input will come (the console's host input ended): reads return 0 when empty.
    eof: bool,
    exclusive: bool,
    /// Open files on this tty.
    opens: usize,
    /// The session holds the tty only by the boot-time grant to init's session
    /// ([`Tty::set_ctty`]), which a session leader's TIOCSCTTY takes over: in Linux init has no
    /// controlling tty and /dev/console never becomes one by open, so busybox init's console
    /// shell (setsid, then TIOCSCTTY with arg 0) gets job control there.
    boot_grant: bool,
}

/// A terminal.
pub struct Tty {
    /// `console`, `pts/N`.
    pub name: String,
    /// Device number of the tty itself.
    pub rdev: u64,
    state: Mutex<TtyState>,
    out: Mutex<OutState>,
    /// Readers wait here for input, hangup or end of file.
    pub read_wait: WaitQueue,
    /// Writers wait here for output room or restart.
    pub write_wait: WaitQueue,
    /// Input producers (the host reader, pty master writers) wait here for input room.
    pub room_wait: WaitQueue,
    driver: Box<dyn TtyDriver>,
    kernel: Weak<Kernel>,
}

fn copy_in<T: Pod>(mem: &mut dyn GuestMem, arg: u64) -> SysResult<T> {
    let mut b = vec![0u8; T::SIZE];
    mem.read(arg, &mut b)?;
    T::from_bytes(&b).ok_or(Errno::EFAULT)
}

fn read_i32(mem: &mut dyn GuestMem, arg: u64) -> SysResult<i32> {
    let mut b = [0u8; 4];
    mem.read(arg, &mut b)?;
    Ok(i32::from_le_bytes(b))
}

fn write_i32(mem: &mut dyn GuestMem, arg: u64, v: i32) -> SysResult<u64> {
    mem.write(arg, &v.to_le_bytes())?;
    Ok(0)
}

/// `unset_locked_termios` (drivers/tty/tty_ioctl.c): every bit set in `locked`'s flags and
/// every control character non-zero in `locked` keeps its `old` value; the line discipline
/// too when `locked.c_line` is non-zero.
fn unset_locked(new: &Termios, old: &Termios, locked: &Termios) -> Termios {
    let keep = |n: u32, o: u32, l: u32| (n & !l) | (o & l);
    let mut t = *new;
    t.c_iflag = keep(new.c_iflag, old.c_iflag, locked.c_iflag);
    t.c_oflag = keep(new.c_oflag, old.c_oflag, locked.c_oflag);
    t.c_cflag = keep(new.c_cflag, old.c_cflag, locked.c_cflag);
    t.c_lflag = keep(new.c_lflag, old.c_lflag, locked.c_lflag);
    if locked.c_line != 0 {
        t.c_line = old.c_line;
    }
    for i in 0..NCCS {
        if locked.c_cc[i] != 0 {
            t.c_cc[i] = old.c_cc[i];
        }
    }
    t
}

/// Whether `sig` is blocked or ignored by the caller (Linux `is_ignored` in tty_jobctrl.c).
fn is_ignored(task: &Task, sig: u32) -> bool {
    *lock(&task.sigmask) & sigbit(sig) != 0
        || lock(&task.process.sigactions)[(sig - 1) as usize].handler == 1
}

fn alive(p: &Process) -> bool {
    lock(&p.exit).is_none()
}

/// Whether process group `pgrp` is orphaned: no member has a parent in another group of the
/// same session (Linux `will_become_orphaned_pgrp`; a parent that is init does not count).
pub fn pgrp_orphaned(k: &Kernel, pgrp: u32) -> bool {
    for p in k.tasks.processes() {
        if p.pgid.load(Ordering::Relaxed) != pgrp || !alive(&p) {
            continue;
        }
        let ppid = p.ppid.load(Ordering::Relaxed);
        if ppid <= 1 {
            continue;
        }
        if let Some(parent) = k.tasks.process(ppid)
            && parent.pgid.load(Ordering::Relaxed) != pgrp
            && parent.sid.load(Ordering::Relaxed) == p.sid.load(Ordering::Relaxed)
        {
            return false;
        }
    }
    true
}

/// Sends `sig` from the kernel to process group `pgrp` (Linux `kill_pgrp(pgrp, sig, 1)`).
fn kill_pgrp(k: &Kernel, pgrp: u32, sig: u32) {
    if pgrp != 0 {
        let _ = signal::send_to_pgrp(k, pgrp, Siginfo::kill(sig, SI_KERNEL, 0, 0));
    }
}

impl Tty {
    /// A tty with Linux's default termios, output to `driver`.
    pub fn new(
        name: String,
        rdev: u64,
        driver: Box<dyn TtyDriver>,
        kernel: Weak<Kernel>,
        winsize: Winsize,
    ) -> Arc<Tty> {
        let termios = Termios::linux_default();
        Arc::new(Tty {
            name,
            rdev,
            state: Mutex::new(TtyState {
                termios,
                locked: Termios::default(),
                ld: NTty::new(&termios),
                winsize,
                session: 0,
                boot_grant: false,
                pgrp: 0,
                detached: BTreeSet::new(),
                stopped: false,
                hung_up: false,
                eof: false,
                exclusive: false,
                opens: 0,
            }),
            out: Mutex::new(OutState::default()),
            read_wait: WaitQueue::new(),
            write_wait: WaitQueue::new(),
            room_wait: WaitQueue::new(),
            driver,
            kernel,
        })
    }

    fn kernel(&self) -> Option<Arc<Kernel>> {
        self.kernel.upgrade()
    }

    /// The driver's initial settings (`tty_driver.init_termios`), before the first open.
    pub fn set_initial_termios(&self, t: Termios) {
        let mut st = lock(&self.state);
        st.termios = t;
        st.ld = NTty::new(&t);
    }

    fn signal_pgrp(&self, pgrp: u32, sig: u32) {
        if let Some(k) = self.kernel() {
            kill_pgrp(&k, pgrp, sig);
        }
    }

    fn wake_all(&self) {
        self.read_wait.wake_all();
        self.write_wait.wake_all();
        self.room_wait.wake_all();
    }

    /// Writes echo output through the output stage.
    fn write_echoes(&self, t: &Termios, ops: &[EchoOp]) {
        if ops.is_empty() {
            return;
        }
        let mut o = lock(&self.out);
        let mut v = Vec::new();
        o.echo(t, ops, &mut v);
        self.driver.write(&v);
    }

    /// Input from the device, through the line discipline. Returns how many bytes were taken;
    /// the producer waits on [`Tty::room_wait`] for the rest.
    pub fn receive(&self, data: &[u8]) -> usize {
        let mut st = lock(&self.state);
        let t = st.termios;
        let stopped = st.stopped;
        let r = st.ld.receive(&t, data, stopped);
        if let Some(s) = r.flow {
            st.stopped = s;
        }
        let echoes = st.ld.take_echoes();
        let pgrp = st.pgrp;
        let readable = st.ld.readable();
        drop(st);
        self.write_echoes(&t, &echoes);
        for &sig in &r.signals {
            self.signal_pgrp(pgrp, sig);
        }
        if r.flushed {
            self.room_wait.wake_all();
        }
        if r.flow == Some(false) {
            self.write_wait.wake_all();
        }
        if readable || !r.signals.is_empty() {
            self.read_wait.wake_all();
        }
        r.consumed
    }

    /// Whether the line discipline takes more input now.
    pub fn has_room(&self) -> bool {
        let st = lock(&self.state);
        st.ld.has_room() || st.hung_up
    }

    /// The input side ended for good (the console's host input hit end of file): an unfinished
    /// line is delivered as ^D would, then every read returns 0.
    pub fn set_eof(&self) {
        let mut st = lock(&self.state);
        if !st.eof {
            st.eof = true;
            st.ld.end_partial_line();
        }
        drop(st);
        self.read_wait.wake_all();
    }

    /// Hangs the tty up (the pty master closed; Linux `__tty_hangup`): the session leader gets
    /// SIGHUP and SIGCONT, the session loses its controlling tty, reads see end of file and
    /// writes fail with EIO.
    pub fn hangup(&self) {
        let mut st = lock(&self.state);
        st.hung_up = true;
        let session = std::mem::take(&mut st.session);
        st.boot_grant = false;
        st.pgrp = 0;
        st.detached.clear();
        drop(st);
        if session != 0
            && let Some(k) = self.kernel()
            && let Some(leader) = k.tasks.process(session)
            && alive(&leader)
        {
            signal::send_to_process(&k, &leader, Siginfo::kill(SIGHUP, SI_KERNEL, 0, 0));
            signal::send_to_process(&k, &leader, Siginfo::kill(SIGCONT, SI_KERNEL, 0, 0));
        }
        self.wake_all();
    }

    /// Whether the tty was hung up.
    pub fn hung_up(&self) -> bool {
        lock(&self.state).hung_up
    }

    /// Makes this the controlling tty of `sid` with foreground group `pgrp` (boot: the console
    /// for init's session).
    pub fn set_ctty(&self, sid: u32, pgrp: u32) {
        let mut st = lock(&self.state);
        st.session = sid;
        st.boot_grant = true;
        st.pgrp = pgrp;
        st.detached.clear();
    }

    /// The session this tty controls (0: none).
    pub fn session(&self) -> u32 {
        lock(&self.state).session
    }

    /// Whether this is the controlling tty of process `p`.
    pub fn is_ctty_of(&self, p: &Process) -> bool {
        let st = lock(&self.state);
        Self::ctty_locked(&st, p)
    }

    fn ctty_locked(st: &TtyState, p: &Process) -> bool {
        st.session != 0
            && st.session == p.sid.load(Ordering::Relaxed)
            && !st.detached.contains(&p.pid)
    }

    /// A file on this tty was opened.
    pub fn open_ref(&self) {
        let mut st = lock(&self.state);
        st.opens += 1;
        let first = st.opens == 1;
        drop(st);
        if first {
            self.driver.opened();
        }
    }

    /// A file on this tty was closed.
    pub fn close_ref(&self) {
        let mut st = lock(&self.state);
        st.opens = st.opens.saturating_sub(1);
        let last = st.opens == 0;
        drop(st);
        if last {
            self.driver.closed();
        }
    }

    /// The session leader of the tty's session exited (Linux `disassociate_ctty(1)`): the
    /// foreground group gets SIGHUP and the session loses the tty.
    pub fn leader_exited(&self, sid: u32) {
        let mut st = lock(&self.state);
        if st.session != sid || sid == 0 {
            return;
        }
        let pgrp = st.pgrp;
        st.session = 0;
        st.boot_grant = false;
        st.pgrp = 0;
        st.detached.clear();
        drop(st);
        self.signal_pgrp(pgrp, SIGHUP);
    }

    /// Sets the window size; a change signals SIGWINCH to the foreground group (Linux
    /// `tty_do_resize`).
    pub fn set_winsize(&self, ws: Winsize) {
        let mut st = lock(&self.state);
        if st.winsize == ws {
            return;
        }
        st.winsize = ws;
        let pgrp = st.pgrp;
        drop(st);
        self.signal_pgrp(pgrp, SIGWINCH);
    }

    /// The foreground process group (0: none).
    pub fn foreground(&self) -> u32 {
        lock(&self.state).pgrp
    }

    /// Bytes a reader could get now (FIONREAD).
    pub fn inq(&self) -> usize {
        lock(&self.state).ld.inq()
    }

    /// The window size.
    pub fn winsize(&self) -> Winsize {
        lock(&self.state).winsize
    }

    /// Linux `__tty_check_change`: a caller in a background group of the tty's session gets
    /// `sig` (SIGTTIN/SIGTTOU) sent to its group and the call restarts after it continues;
    /// EIO when the group is orphaned or SIGTTIN is ignored or blocked.
    pub fn check_change(&self, io: &IoCtx<'_>, sig: u32) -> SysResult<()> {
        let p = &io.task.process;
        let tty_pgrp = {
            let st = lock(&self.state);
            if !Self::ctty_locked(&st, p) {
                return Ok(());
            }
            st.pgrp
        };
        let pgrp = p.pgid.load(Ordering::Relaxed);
        if tty_pgrp == 0 || pgrp == tty_pgrp {
            return Ok(());
        }
        if is_ignored(io.task, sig) {
            return if sig == SIGTTIN {
                Err(Errno::EIO)
            } else {
                Ok(())
            };
        }
        let Some(k) = self.kernel() else {
            return Ok(());
        };
        if pgrp_orphaned(&k, pgrp) {
            return Err(Errno::EIO);
        }
        kill_pgrp(&k, pgrp, sig);
        Err(Errno::ERESTARTSYS)
    }

    /// Reads input (Linux `n_tty_read`). `job_control`: the SIGTTIN check applies.
    pub fn read(&self, io: &IoCtx<'_>, buf: &mut [u8], job_control: bool) -> SysResult<usize> {
        if job_control {
            self.check_change(io, SIGTTIN)?;
        }
        if buf.is_empty() {
            return Ok(0);
        }
        let t = lock(&self.state).termios;
        let canon = t.c_lflag & ICANON != 0;
        let (minimum, time, inter_byte) = if canon {
            (0, None, false)
        } else {
            noncanon_params(&t)
        };
        let tenths = |d: u8| Duration::from_millis(100 * d as u64);
        let mut deadline = match time {
            Some(d) if !inter_byte => Some(Instant::now() + tenths(d)),
            _ => None,
        };
        let mut got = 0usize;
        loop {
            {
                let mut st = lock(&self.state);
                if st.ld.readable() {
                    let (n, _line_end) = st.ld.read(&mut buf[got..]);
                    got += n;
                    drop(st);
                    self.room_wait.wake_all();
                    // Canonical mode: one line (or what fits) per read.
                    if canon {
                        return Ok(got);
                    }
                    if got >= minimum.min(buf.len()) || got == buf.len() {
                        return Ok(got);
                    }
                    if inter_byte && let Some(d) = time {
                        deadline = Some(Instant::now() + tenths(d));
                    }
                    continue;
                }
                if st.hung_up || st.eof {
                    return Ok(got);
                }
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(got);
            }
            if io.nonblock {
                return if got > 0 { Ok(got) } else { Err(Errno::EAGAIN) };
            }
            let r = wait_event(io.task, &[&self.read_wait], deadline, || {
                let st = lock(&self.state);
                (st.ld.readable() || st.hung_up || st.eof).then_some(())
            });
            match r {
                Ok(()) => {}
                Err(WaitError::TimedOut) => return Ok(got),
                Err(WaitError::Interrupted) => {
                    return if got > 0 {
                        Ok(got)
                    } else {
                        Err(Errno::ERESTARTSYS)
                    };
                }
            }
        }
    }

    /// Writes output through OPOST processing (Linux `n_tty_write`). `job_control`: the
    /// TOSTOP check applies.
    pub fn write(&self, io: &IoCtx<'_>, data: &[u8], job_control: bool) -> SysResult<usize> {
        let tostop = lock(&self.state).termios.c_lflag & TOSTOP != 0;
        if job_control && tostop {
            self.check_change(io, SIGTTOU)?;
        }
        let mut done = 0usize;
        loop {
            let (t, stopped, hung) = {
                let st = lock(&self.state);
                (st.termios, st.stopped, st.hung_up)
            };
            if hung {
                return if done > 0 { Ok(done) } else { Err(Errno::EIO) };
            }
            if !stopped {
                let room = self.driver.write_room();
                let n = (data.len() - done).min(room);
                if n > 0 {
                    let mut o = lock(&self.out);
                    let mut v = Vec::with_capacity(n + n / 8);
                    o.output(&t, &data[done..done + n], &mut v);
                    self.driver.write(&v);
                    done += n;
                }
            }
            if done == data.len() {
                return Ok(done);
            }
            if io.nonblock {
                return if done > 0 {
                    Ok(done)
                } else {
                    Err(Errno::EAGAIN)
                };
            }
            let r = wait_event(io.task, &[&self.write_wait], None, || {
                let st = lock(&self.state);
                (st.hung_up || (!st.stopped && self.driver.write_room() > 0)).then_some(())
            });
            if r.is_err() {
                return if done > 0 {
                    Ok(done)
                } else {
                    Err(Errno::ERESTARTSYS)
                };
            }
        }
    }

    /// Poll readiness (Linux `n_tty_poll`).
    pub fn poll(&self, events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        if let Some(pt) = pt {
            pt.wait_on(&self.read_wait);
            pt.wait_on(&self.write_wait);
        }
        let st = lock(&self.state);
        let mut m = 0;
        if st.hung_up {
            m = POLLIN | POLLOUT | POLLERR | POLLHUP | POLLRDNORM | POLLWRNORM;
        } else {
            let t = &st.termios;
            // A non-canonical tty with VMIN > 1 and no VTIME polls readable only once VMIN
            // bytes are there (input_available_p with poll set).
            let amt = if t.c_lflag & ICANON == 0 && t.c_cc[VTIME] == 0 && t.c_cc[VMIN] > 0 {
                t.c_cc[VMIN] as usize
            } else {
                1
            };
            let readable = if t.c_lflag & ICANON != 0 {
                st.ld.readable()
            } else {
                st.ld.inq() >= amt
            };
            if readable || st.eof {
                m |= POLLIN | POLLRDNORM;
            }
            if !st.stopped && self.driver.write_room() > 0 {
                m |= POLLOUT | POLLWRNORM;
            }
        }
        m & (events | POLLERR | POLLHUP)
    }

    fn set_termios(&self, new: Termios, flush: bool) {
        let mut st = lock(&self.state);
        let old = st.termios;
        let mut new = unset_locked(&new, &old, &st.locked);
        self.driver.set_termios(&mut new);
        // The line discipline number is not changed through TCSETS.
        new.c_line = old.c_line;
        if flush {
            st.ld.flush();
        }
        st.ld.set_termios(&old, &new);
        st.termios = new;
        // Turning IXON off restarts stopped output (n_tty_set_termios).
        if new.c_iflag & IXON == 0 && old.c_iflag & IXON != 0 {
            st.stopped = false;
        }
        drop(st);
        self.wake_all();
    }

    /// The caller's process has this as its controlling tty.
    fn require_ctty(&self, io: &IoCtx<'_>) -> SysResult<()> {
        if self.is_ctty_of(&io.task.process) {
            Ok(())
        } else {
            Err(Errno::ENOTTY)
        }
    }

    /// Terminal ioctls (Linux `tty_ioctl`, `tty_mode_ioctl`, `n_tty_ioctl`). `via_master`: the
    /// call came through the pty master, which acts on this (slave) tty without the
    /// controlling-tty checks (`tty != real_tty`). `readable`: the file was opened for reading.
    pub fn ioctl(
        self: &Arc<Self>,
        io: &IoCtx<'_>,
        cmd: u32,
        arg: u64,
        mem: &mut dyn GuestMem,
        via_master: bool,
        readable: bool,
    ) -> SysResult<u64> {
        if !via_master && self.hung_up() {
            // Linux `hung_up_tty_ioctl`.
            return Err(if cmd == TIOCSPGRP {
                Errno::ENOTTY
            } else {
                Errno::EIO
            });
        }
        match cmd {
            TCGETS => {
                let t = lock(&self.state).termios;
                mem.write(arg, &t.as_bytes())?;
                Ok(0)
            }
            TCGETS2 => {
                let t = lock(&self.state).termios;
                let t2 = Termios2 {
                    c_iflag: t.c_iflag,
                    c_oflag: t.c_oflag,
                    c_cflag: t.c_cflag,
                    c_lflag: t.c_lflag,
                    c_line: t.c_line,
                    c_cc: t.c_cc,
                    c_ispeed: 38400,
                    c_ospeed: 38400,
                };
                mem.write(arg, &t2.as_bytes())?;
                Ok(0)
            }
            TCSETS | TCSETSW | TCSETSF => {
                self.check_change(io, SIGTTOU)?;
                let t: Termios = copy_in(mem, arg)?;
                self.set_termios(t, cmd == TCSETSF);
                Ok(0)
            }
            TCSETS2 | TCSETSW2 | TCSETSF2 => {
                self.check_change(io, SIGTTOU)?;
                let t2: Termios2 = copy_in(mem, arg)?;
                let t = Termios {
                    c_iflag: t2.c_iflag,
                    c_oflag: t2.c_oflag,
                    c_cflag: t2.c_cflag,
                    c_lflag: t2.c_lflag,
                    c_line: t2.c_line,
                    c_cc: t2.c_cc,
                };
                self.set_termios(t, cmd == TCSETSF2);
                Ok(0)
            }
            // The System V `struct termio` (tty_mode_ioctl: get_termio, set_termios with
            // TERMIOS_TERMIO): only the low 16 bits of the flags and the first NCC control
            // characters are the caller's; the rest stays.
            TCGETA => {
                let t = lock(&self.state).termios;
                mem.write(arg, &Termio::from_termios(&t).as_bytes()[..TERMIO_BYTES])?;
                Ok(0)
            }
            TCSETA | TCSETAW | TCSETAF => {
                self.check_change(io, SIGTTOU)?;
                let mut b = [0u8; TERMIO_BYTES + 1];
                mem.read(arg, &mut b[..TERMIO_BYTES])?;
                let o = Termio::from_bytes(&b).ok_or(Errno::EFAULT)?;
                let t = o.apply_to(&lock(&self.state).termios);
                self.set_termios(t, cmd == TCSETAF);
                Ok(0)
            }
            TIOCGLCKTRMIOS => {
                let l = lock(&self.state).locked;
                mem.write(arg, &l.as_bytes())?;
                Ok(0)
            }
            TIOCSLCKTRMIOS => {
                // checkpoint_restore_ns_capable: CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE.
                let p = &io.task.process;
                if !p.capable(CAP_SYS_ADMIN) && !p.capable(CAP_CHECKPOINT_RESTORE) {
                    return Err(Errno::EPERM);
                }
                let l: Termios = copy_in(mem, arg)?;
                lock(&self.state).locked = l;
                Ok(0)
            }
            // Software carrier (tty_mode_ioctl): CLOCAL, kept by every driver here.
            TIOCGSOFTCAR => {
                let on = lock(&self.state).termios.c_cflag & CLOCAL != 0;
                write_i32(mem, arg, on as i32)
            }
            TIOCSSOFTCAR => {
                let on = read_i32(mem, arg)? != 0;
                let mut st = lock(&self.state);
                let old = st.termios;
                let mut t = old;
                t.c_cflag = (t.c_cflag & !CLOCAL) | if on { CLOCAL } else { 0 };
                self.driver.set_termios(&mut t);
                st.termios = t;
                // tty_change_softcar: EINVAL if the driver did not keep the bit.
                if (t.c_cflag & CLOCAL != 0) != on {
                    return Err(Errno::EINVAL);
                }
                Ok(0)
            }
            // Break on and off (tty_ioctl): a job-control check, then nothing for a device
            // without `break_ctl`.
            TIOCSBRK | TIOCCBRK => {
                self.check_change(io, SIGTTOU)?;
                Ok(0)
            }
            // The tty's own device number (`new_encode_dev(tty_devnum(real_tty))`).
            TIOCGDEV => {
                let (ma, mi) = um_kernel::vfs::decode_dev(self.rdev);
                let dev = (mi & 0xff) | ((ma & 0xfff) << 8) | ((mi & !0xff) << 12);
                mem.write(arg, &dev.to_le_bytes())?;
                Ok(0)
            }
            TIOCGWINSZ => {
                let ws = self.winsize();
                mem.write(arg, &ws.as_bytes())?;
                Ok(0)
            }
            TIOCSWINSZ => {
                let ws: Winsize = copy_in(mem, arg)?;
                self.set_winsize(ws);
                Ok(0)
            }
            TCFLSH => {
                self.check_change(io, SIGTTOU)?;
                match arg as u32 {
                    TCIFLUSH => lock(&self.state).ld.flush(),
                    TCOFLUSH => self.driver.flush_output(),
                    TCIOFLUSH => {
                        lock(&self.state).ld.flush();
                        self.driver.flush_output();
                    }
                    _ => return Err(Errno::EINVAL),
                }
                self.wake_all();
                Ok(0)
            }
            TCXONC => {
                self.check_change(io, SIGTTOU)?;
                match arg as u32 {
                    TCOOFF => lock(&self.state).stopped = true,
                    TCOON => {
                        lock(&self.state).stopped = false;
                        self.write_wait.wake_all();
                    }
                    TCIOFF | TCION => {
                        let st = lock(&self.state);
                        let t = st.termios;
                        drop(st);
                        let c = t.c_cc[if arg as u32 == TCIOFF { VSTOP } else { VSTART }];
                        if c != 0 {
                            self.driver.write(&[c]);
                        }
                    }
                    _ => return Err(Errno::EINVAL),
                }
                Ok(0)
            }
            TCSBRK | TCSBRKP => {
                // Output is handed to the device synchronously: nothing to drain.
                self.check_change(io, SIGTTOU)?;
                Ok(0)
            }
            TIOCOUTQ => write_i32(mem, arg, self.driver.chars_in_buffer() as i32),
            TIOCINQ => {
                let n = lock(&self.state).ld.inq();
                write_i32(mem, arg, n as i32)
            }
            TIOCEXCL => {
                lock(&self.state).exclusive = true;
                Ok(0)
            }
            TIOCNXCL => {
                lock(&self.state).exclusive = false;
                Ok(0)
            }
            TIOCGEXCL => {
                let e = lock(&self.state).exclusive;
                write_i32(mem, arg, e as i32)
            }
            TIOCGETD => write_i32(mem, arg, 0),
            TIOCSETD => {
                // Only N_TTY exists here.
                if read_i32(mem, arg)? == 0 {
                    Ok(0)
                } else {
                    Err(Errno::EINVAL)
                }
            }
            TIOCSTI => {
                // Linux tiocsti: the caller's controlling tty, or CAP_SYS_ADMIN.
                let root = io.task.process.capable(CAP_SYS_ADMIN);
                if !root && (!readable || !self.is_ctty_of(&io.task.process)) {
                    return Err(Errno::EPERM);
                }
                let mut b = [0u8; 1];
                mem.read(arg, &mut b)?;
                self.receive(&b);
                Ok(0)
            }
            // tioccons: only CAP_SYS_ADMIN may redirect the console (the redirect itself is
            // not implemented: ENOTTY as before for a privileged caller).
            TIOCCONS => {
                if !io.task.process.capable(CAP_SYS_ADMIN) {
                    return Err(Errno::EPERM);
                }
                Err(Errno::ENOTTY)
            }
            TIOCSCTTY => self.tiocsctty(io, arg, readable),
            TIOCNOTTY => {
                self.require_ctty(io)?;
                self.no_tty(io);
                Ok(0)
            }
            TIOCGPGRP => {
                if !via_master {
                    self.require_ctty(io)?;
                }
                // As the caller's pid namespace sees it (tiocgpgrp's pid_vnr).
                let pg = lock(&self.state).pgrp;
                let pg = self.kernel().map_or(pg, |k| k.tasks.vnr(io.task, pg));
                write_i32(mem, arg, pg as i32)
            }
            TIOCSPGRP => self.tiocspgrp(io, arg, mem),
            TIOCGSID => {
                if !via_master {
                    self.require_ctty(io)?;
                }
                let sid = lock(&self.state).session;
                if sid == 0 {
                    return Err(Errno::ENOTTY);
                }
                let sid = self.kernel().map_or(sid, |k| k.tasks.vnr(io.task, sid));
                write_i32(mem, arg, sid as i32)
            }
            TIOCVHANGUP => {
                if !io.task.process.capable(CAP_SYS_ADMIN) {
                    return Err(Errno::EPERM);
                }
                self.hangup();
                Ok(0)
            }
            // Keyboard ioctls belong to virtual consoles; any other tty answers ENOTTY
            // (tty_ioctl turns the line discipline's ENOIOCTLCMD into ENOTTY).
            KDGKBTYPE => Err(Errno::ENOTTY),
            _ => Err(Errno::ENOTTY),
        }
    }

    /// Linux `tiocsctty`.
    fn tiocsctty(&self, io: &IoCtx<'_>, arg: u64, readable: bool) -> SysResult<u64> {
        let p = &io.task.process;
        let sid = p.sid.load(Ordering::Relaxed);
        let leader = p.pid == sid;
        let root = lock(&p.creds).euid == 0;
        {
            let st = lock(&self.state);
            if leader && st.session == sid {
                return Ok(0);
            }
        }
        if !leader || registry::ctty_of(p).is_some() {
            return Err(Errno::EPERM);
        }
        let mut st = lock(&self.state);
        if st.session != 0 && !st.boot_grant {
            // Already the controlling tty of another session: only root may steal it.
            if arg == 1 && root {
                st.session = 0;
                st.boot_grant = false;
                st.pgrp = 0;
            } else {
                return Err(Errno::EPERM);
            }
        }
        if !readable && !root {
            return Err(Errno::EPERM);
        }
        st.session = sid;
        st.boot_grant = false;
        st.pgrp = p.pgid.load(Ordering::Relaxed);
        st.detached.clear();
        Ok(0)
    }

    /// TIOCNOTTY (Linux `no_tty`): a session leader gives the tty up for the whole session,
    /// signalling SIGHUP and SIGCONT to the foreground group; anyone else just detaches.
    fn no_tty(&self, io: &IoCtx<'_>) {
        let p = &io.task.process;
        let sid = p.sid.load(Ordering::Relaxed);
        let mut st = lock(&self.state);
        if p.pid == sid {
            let pgrp = st.pgrp;
            st.session = 0;
            st.boot_grant = false;
            st.pgrp = 0;
            st.detached.clear();
            drop(st);
            self.signal_pgrp(pgrp, SIGHUP);
            self.signal_pgrp(pgrp, SIGCONT);
        } else {
            st.detached.insert(p.pid);
        }
    }

    /// Linux `tiocspgrp`.
    fn tiocspgrp(&self, io: &IoCtx<'_>, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        match self.check_change(io, SIGTTOU) {
            Err(Errno::EIO) => return Err(Errno::ENOTTY),
            Err(e) => return Err(e),
            Ok(()) => {}
        }
        let p = &io.task.process;
        let sid = p.sid.load(Ordering::Relaxed);
        if !self.is_ctty_of(p) {
            return Err(Errno::ENOTTY);
        }
        let pg = read_i32(mem, arg)?;
        if pg < 0 {
            return Err(Errno::EINVAL);
        }
        let k = self.kernel().ok_or(Errno::ESRCH)?;
        // A number of the caller's pid namespace (tiocspgrp's find_vpid).
        let pg = k.tasks.global_of(io.task, pg as u32).ok_or(Errno::ESRCH)?;
        let members: Vec<_> = k
            .tasks
            .processes()
            .into_iter()
            .filter(|q| q.pgid.load(Ordering::Relaxed) == pg && alive(q))
            .collect();
        if members.is_empty() {
            return Err(Errno::ESRCH);
        }
        if !members.iter().any(|q| q.sid.load(Ordering::Relaxed) == sid) {
            return Err(Errno::EPERM);
        }
        lock(&self.state).pgrp = pg;
        Ok(0)
    }

    /// Whether an open must fail because of TIOCEXCL (Linux `tty_reopen`: EBUSY unless root).
    fn excl_denied(&self, task: &Task) -> bool {
        lock(&self.state).exclusive && lock(&task.process.creds).euid != 0
    }

    /// What opening this tty does to the caller's session (Linux `tty_open_proc_set_tty`): a
    /// session leader without a controlling tty acquires this one if it is free, unless
    /// `O_NOCTTY` or the device never becomes one (console, /dev/tty, pty master).
    pub fn open_set_ctty(&self, task: &Task, flags: u32) {
        let p = &task.process;
        let sid = p.sid.load(Ordering::Relaxed);
        if flags & O_NOCTTY != 0 || p.pid != sid || flags & 3 == 1 {
            return;
        }
        if registry::ctty_of(p).is_some() {
            return;
        }
        let mut st = lock(&self.state);
        if st.session == 0 && !st.hung_up {
            st.session = sid;
            st.boot_grant = false;
            st.pgrp = p.pgid.load(Ordering::Relaxed);
            st.detached.clear();
        }
    }
}

/// Which device node a tty file was opened through (for `fstat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    pub rdev: u64,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub ino: u64,
    pub dev: u64,
}

/// An open tty (the slave side, the console, or /dev/tty).
pub struct TtyFile {
    pub tty: Arc<Tty>,
    node: Node,
    flags: u32,
}

impl TtyFile {
    /// Opens `tty` through `node` with open(2) `flags` for `task` (EBUSY if the tty is
    /// exclusive and the caller is not root).
    pub fn open(tty: Arc<Tty>, node: Node, flags: u32, task: &Task) -> SysResult<TtyFile> {
        if tty.excl_denied(task) {
            return Err(Errno::EBUSY);
        }
        Ok(TtyFile::attach(tty, node, flags))
    }

    /// A file on `tty` without any open checks (the console for init's descriptors at boot).
    pub fn attach(tty: Arc<Tty>, node: Node, flags: u32) -> TtyFile {
        tty.open_ref();
        TtyFile { tty, node, flags }
    }
}

impl Drop for TtyFile {
    fn drop(&mut self) {
        self.tty.close_ref();
    }
}

impl FileOps for TtyFile {
    fn read(&self, io: &IoCtx<'_>, buf: &mut [u8], _off: u64) -> SysResult<usize> {
        self.tty.read(io, buf, true)
    }

    fn write(&self, io: &IoCtx<'_>, data: &[u8], _off: u64) -> SysResult<usize> {
        self.tty.write(io, data, true)
    }

    fn is_stream(&self) -> bool {
        true
    }

    fn poll(&self, events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        self.tty.poll(events, pt)
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(Kstat {
            dev: self.node.dev,
            ino: self.node.ino,
            mode: mode::S_IFCHR | self.node.mode,
            rdev: self.node.rdev,
            nlink: 1,
            uid: self.node.uid,
            gid: self.node.gid,
            blksize: 1024,
            ..Kstat::default()
        })
    }

    fn ioctl(&self, io: &IoCtx<'_>, cmd: u32, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        let readable = self.flags & 3 != 1;
        match cmd {
            TIOCGPTN | TIOCSPTLCK | TIOCGPTLCK | TIOCSIG | TIOCPKT | TIOCGPKT => {
                pty::slave_ioctl(&self.tty, cmd, arg, mem)
            }
            _ => self.tty.ioctl(io, cmd, arg, mem, false, readable),
        }
    }
}

/// All ttys the kernel has, for "the caller's controlling tty" (/dev/tty, TIOCSCTTY) and for
/// the session-leader exit hook.
pub mod registry {
    use super::*;

    struct Registry {
        ttys: Mutex<Vec<Weak<Tty>>>,
    }

    fn reg() -> &'static Registry {
        static R: OnceLock<Registry> = OnceLock::new();
        R.get_or_init(|| Registry {
            ttys: Mutex::new(Vec::new()),
        })
    }

    /// Adds a tty.
    pub fn add(t: &Arc<Tty>) {
        let mut v = lock(&reg().ttys);
        v.retain(|w| w.strong_count() > 0);
        v.push(Arc::downgrade(t));
    }

    /// Every live tty.
    pub fn all() -> Vec<Arc<Tty>> {
        lock(&reg().ttys).iter().filter_map(Weak::upgrade).collect()
    }

    /// The controlling tty of `p`, if any.
    pub fn ctty_of(p: &Process) -> Option<Arc<Tty>> {
        all().into_iter().find(|t| t.is_ctty_of(p))
    }

    /// A process ended: if it led a session, that session loses its tty.
    pub fn process_exited(p: &Process) {
        let sid = p.sid.load(Ordering::Relaxed);
        if p.pid != sid {
            return;
        }
        for t in all() {
            if t.session() == sid {
                t.leader_exited(sid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locked_termios_keep_their_bits() {
        let old = Termios::linux_default();
        let mut new = old;
        new.c_lflag &= !(ECHO | ICANON);
        new.c_iflag |= IXOFF;
        new.c_cc[VINTR] = 0x01;
        new.c_cc[VMIN] = 9;
        new.c_line = 3;
        let mut locked = Termios::default();
        assert_eq!(unset_locked(&new, &old, &locked), new, "nothing locked");
        locked.c_lflag = ECHO;
        locked.c_cc[VINTR] = 0xff;
        locked.c_line = 1;
        let t = unset_locked(&new, &old, &locked);
        assert_eq!(t.c_lflag & ECHO, ECHO, "ECHO locked on");
        assert_eq!(t.c_lflag & ICANON, 0, "ICANON not locked");
        assert_eq!(t.c_iflag, new.c_iflag);
        assert_eq!(t.c_cc[VINTR], old.c_cc[VINTR]);
        assert_eq!(t.c_cc[VMIN], 9);
        assert_eq!(t.c_line, old.c_line);
    }
}
