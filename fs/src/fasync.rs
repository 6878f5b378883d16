//! Signal-driven I/O (Linux `fs/fcntl.c`: `f_setown`, `f_getown_ex`, `send_sigio`,
//! `fasync_helper`, `kill_fasync`).
//!
//! Every open file description may have an *owner* ([`Fown`]: a thread, a process or a
//! process group, set with `F_SETOWN`/`F_SETOWN_EX`, with the setter's uid and euid for the
//! permission check `sigio_perm` makes) and a signal (`F_SETSIG`; 0 means plain `SIGIO`).
//! They live in a side table keyed by the description's address, dropped when the description
//! is released ([`released`]).
//!
//! `O_ASYNC` (through `F_SETFL` or `FIOASYNC`) arms an [`Entry`] (Linux's `fasync_struct`):
//! a [`WakeHook`] registered, through the file's own `poll`, on every wait queue its readers
//! or writers sleep on. So whatever wakes them (a pipe write, a socket receive, a tty input
//! line, a hangup) also raises the signal, with no code per file type. The hook runs inside
//! `WaitQueue::wake_all`, possibly under the waker's locks, so it only queues the entry for
//! the `fasync` kernel thread, which polls the file (registering again on its current queues,
//! since a socket's may change when it connects), and signals the owner: `POLL_IN` when the
//! file is readable, `POLL_OUT`/`POLL_HUP`/`POLL_ERR`/`POLL_PRI` when such readiness is new
//! since the last look (Linux signals writers when room appears, not on every wakeup). With
//! `F_SETSIG` non-zero the signal carries `si_code` = the reason, `si_band` and `si_fd` (the
//! descriptor `O_ASYNC` was set through); if that real-time signal cannot be queued, plain
//! `SIGIO` is sent instead, as `send_sigio_to_task` does.
//!
//! Leases (`locks.rs`) and dnotify (`dnotify.rs`) signal the owner directly with
//! [`send_sigio`] (`POLL_MSG`).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use um_kernel::kernel::Kernel;
use um_kernel::signal as sigs;
use um_kernel::task::{Process, lock};
use um_kernel::vfs::OpenFile;
use um_kernel::wait::{PollTable, WakeHook, Waker};
use um_uapi::abi::poll::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLPRI};
use um_uapi::abi::signal::{SI_KERNEL, SIGIO, Siginfo};
use um_uapi::{Errno, SysResult};

/// `struct f_owner_ex.type` (include/uapi/asm-generic/fcntl.h).
pub const F_OWNER_TID: i32 = 0;
pub const F_OWNER_PID: i32 = 1;
pub const F_OWNER_PGRP: i32 = 2;

/// `si_code` reasons of `SIGIO`/`SIGPOLL` (include/uapi/asm-generic/siginfo.h), from uapi.
pub use um_uapi::abi::signal::{POLL_ERR, POLL_HUP, POLL_IN, POLL_MSG, POLL_OUT, POLL_PRI};

/// Whom the owner id names (`enum pid_type` as `f_owner` uses it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OwnerKind {
    /// One thread (`PIDTYPE_PID`, `F_OWNER_TID`); also the zeroed default.
    #[default]
    Tid,
    /// A process (`PIDTYPE_TGID`, `F_OWNER_PID`, a positive `F_SETOWN`).
    Pid,
    /// A process group (`PIDTYPE_PGID`, `F_OWNER_PGRP`, a negative `F_SETOWN`).
    Pgrp,
}

/// A file's `fown_struct`: owner, the setter's ids, and the `F_SETSIG` signal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fown {
    pub kind: OwnerKind,
    /// 0: no owner.
    pub id: u32,
    pub uid: u32,
    pub euid: u32,
    pub signum: u32,
}

impl Fown {
    /// `F_GETOWN`: a process group as its negated id.
    pub fn getown(&self) -> i64 {
        match self.kind {
            OwnerKind::Pgrp => -i64::from(self.id),
            _ => i64::from(self.id),
        }
    }

    /// `F_GETOWN_EX`: (type, pid).
    pub fn getown_ex(&self) -> (i32, i32) {
        let t = match self.kind {
            OwnerKind::Tid => F_OWNER_TID,
            OwnerKind::Pid => F_OWNER_PID,
            OwnerKind::Pgrp => F_OWNER_PGRP,
        };
        (t, self.id as i32)
    }
}

/// `F_SETOWN`'s argument (`f_setown`): negative is a process group; `INT_MIN` is `EINVAL`.
pub fn decode_setown(who: i32) -> SysResult<(OwnerKind, u32)> {
    match who {
        i32::MIN => Err(Errno::EINVAL),
        w if w < 0 => Ok((OwnerKind::Pgrp, w.unsigned_abs())),
        w => Ok((OwnerKind::Pid, w as u32)),
    }
}

/// `F_SETOWN_EX`'s argument (`f_setown_ex`): an unknown type is `EINVAL`, a negative pid names
/// nobody (`ESRCH`).
pub fn decode_setown_ex(kind: i32, pid: i32) -> SysResult<(OwnerKind, u32)> {
    let k = match kind {
        F_OWNER_TID => OwnerKind::Tid,
        F_OWNER_PID => OwnerKind::Pid,
        F_OWNER_PGRP => OwnerKind::Pgrp,
        _ => return Err(Errno::EINVAL),
    };
    if pid < 0 {
        return Err(Errno::ESRCH);
    }
    Ok((k, pid as u32))
}

/// `si_band` of a reason (fs/fcntl.c `band_table`, through `mangle_poll`).
pub fn band(reason: i32) -> i64 {
    let b = match reason {
        POLL_IN | POLL_MSG => POLLIN | 0x0040 /* RDNORM */ | 0x0400, /* MSG */
        POLL_OUT => POLLOUT | 0x0100 /* WRNORM */ | 0x0200,          /* WRBAND */
        POLL_ERR => POLLERR,
        POLL_PRI => POLLPRI | 0x0080, /* RDBAND */
        POLL_HUP => POLLHUP | POLLERR,
        _ => return !0,
    };
    i64::from(b)
}

/// The reason to signal for readiness `now` when it was `last` at the previous look, if any:
/// readable files are signalled on every wakeup (new data may have come), other readiness
/// only when it appears.
pub fn reason_for(now: u16, last: u16) -> Option<i32> {
    let new = now & !last;
    if now & POLLERR != 0 && new & POLLERR != 0 {
        Some(POLL_ERR)
    } else if now & POLLIN != 0 {
        Some(POLL_IN)
    } else if new & POLLPRI != 0 {
        Some(POLL_PRI)
    } else if new & POLLHUP != 0 {
        Some(POLL_HUP)
    } else if new & POLLOUT != 0 {
        Some(POLL_OUT)
    } else {
        None
    }
}

/// The kernel, for the signal thread and hooks that run without a syscall context.
static KERNEL: OnceLock<Weak<Kernel>> = OnceLock::new();

/// Remembers the kernel (from any syscall that sets up signal-driven I/O).
pub fn init(k: &Arc<Kernel>) {
    let _ = KERNEL.get_or_init(|| Arc::downgrade(k));
}

fn kernel() -> Option<Arc<Kernel>> {
    KERNEL.get()?.upgrade()
}

/// One armed `O_ASYNC` file (`fasync_struct`).
pub struct Entry {
    file: Weak<OpenFile>,
    /// Address of the description: the side-table key.
    key: usize,
    /// `fa_fd`: the descriptor `O_ASYNC` was set through, for `si_fd`.
    fd: Mutex<i32>,
    /// Queued for the signal thread and not yet handled.
    queued: AtomicBool,
    /// Readiness at the last look.
    last: AtomicU16,
    me: Weak<Entry>,
}

impl WakeHook for Entry {
    fn woken(&self) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            let w = worker();
            lock(&w.queue).push_back(self.me.clone());
            w.cv.notify_one();
        }
    }
}

impl Entry {
    /// Polls the file, registering this hook on its queues; returns its readiness.
    fn poll(self: &Arc<Self>, f: &OpenFile) -> u16 {
        let hook: Arc<dyn WakeHook> = self.clone();
        let waker = Arc::new(Waker::default());
        f.ops.poll(!0, Some(&PollTable::for_hook(&waker, &hook)))
    }
}

/// A description's asynchronous I/O state.
#[derive(Default)]
struct FileAsync {
    fown: Fown,
    entry: Option<Arc<Entry>>,
}

fn table() -> &'static Mutex<HashMap<usize, FileAsync>> {
    static T: OnceLock<Mutex<HashMap<usize, FileAsync>>> = OnceLock::new();
    T.get_or_init(Default::default)
}

fn key(f: &OpenFile) -> usize {
    f as *const OpenFile as usize
}

/// The owner of `f`.
pub fn fown(f: &OpenFile) -> Fown {
    lock(table())
        .get(&key(f))
        .map(|a| a.fown)
        .unwrap_or_default()
}

/// Sets the owner of `f` (`__f_setown`), keeping its signal; `creds` = (uid, euid) of the
/// setter.
pub fn set_owner(f: &OpenFile, kind: OwnerKind, id: u32, uid: u32, euid: u32) {
    let mut t = lock(table());
    let a = t.entry(key(f)).or_default();
    a.fown = Fown {
        kind,
        id,
        uid,
        euid,
        signum: a.fown.signum,
    };
}

/// `F_SETSIG`.
pub fn set_signal(f: &OpenFile, sig: u32) {
    lock(table()).entry(key(f)).or_default().fown.signum = sig;
}

/// Whether the owner `id` of `kind` exists (`find_vpid`): `ESRCH` if not.
pub fn check_owner(k: &Kernel, kind: OwnerKind, id: u32) -> SysResult<()> {
    if id == 0 {
        return Ok(());
    }
    let exists = match kind {
        OwnerKind::Tid | OwnerKind::Pid => k.tasks.get(id).is_some(),
        OwnerKind::Pgrp => {
            k.tasks.get(id).is_some()
                || k.tasks
                    .processes()
                    .iter()
                    .any(|p| p.pgid.load(Ordering::Relaxed) == id)
        }
    };
    if exists { Ok(()) } else { Err(Errno::ESRCH) }
}

/// `O_ASYNC` was turned on or off for `f` through descriptor `fd` (`fasync_helper`).
pub fn set_async(f: &Arc<OpenFile>, fd: i32, on: bool) {
    let mut t = lock(table());
    let a = t.entry(key(f)).or_default();
    if !on {
        // Dropping the entry unhooks it: the queues hold it weakly.
        a.entry = None;
        return;
    }
    if let Some(e) = &a.entry {
        *lock(&e.fd) = fd;
        return;
    }
    let e = Arc::new_cyclic(|me| Entry {
        file: Arc::downgrade(f),
        key: key(f),
        fd: Mutex::new(fd),
        queued: AtomicBool::new(false),
        last: AtomicU16::new(0),
        me: me.clone(),
    });
    a.entry = Some(e.clone());
    drop(t);
    let now = e.poll(f);
    e.last.store(now, Ordering::Relaxed);
}

/// The description `f` is going away: its owner and armed entry go too.
pub fn released(f: &OpenFile) {
    let mut t = lock(table());
    if !t.is_empty() {
        t.remove(&key(f));
    }
}

/// `sigio_perm`: the owner's setter may signal `p` if root or matching `p`'s uid or saved uid.
fn sigio_perm(p: &Process, fown: &Fown) -> bool {
    let c = *lock(&p.creds);
    fown.euid == 0
        || fown.euid == c.suid
        || fown.euid == c.uid
        || fown.uid == c.suid
        || fown.uid == c.uid
}

/// Signals the owner of a file (`send_sigio`): `fd` and `reason` fill the siginfo when a
/// signal was set with `F_SETSIG`; plain `SIGIO` (`SI_KERNEL`) otherwise.
pub fn send_sigio(fown: &Fown, fd: i32, reason: i32) {
    if fown.id == 0 {
        return;
    }
    let Some(k) = kernel() else { return };
    let info_for = |p: &Process| -> Siginfo {
        if fown.signum != 0 && sigs::check_sigpending(&k, p, fown.signum, reason).is_ok() {
            Siginfo::poll(fown.signum, reason, band(reason), fd)
        } else {
            Siginfo::new(SIGIO, SI_KERNEL)
        }
    };
    match fown.kind {
        OwnerKind::Tid => {
            if let Some(t) = k.tasks.get(fown.id)
                && !t.exited.load(Ordering::Acquire)
                && sigio_perm(&t.process, fown)
            {
                let info = info_for(&t.process);
                sigs::send_to_task(&t, info);
            }
        }
        OwnerKind::Pid => {
            if let Some(t) = k.tasks.get(fown.id) {
                let p = t.process.clone();
                if !p.zombie.load(Ordering::Acquire) && sigio_perm(&p, fown) {
                    let info = info_for(&p);
                    sigs::send_to_process(&k, &p, info);
                }
            }
        }
        OwnerKind::Pgrp => {
            for p in k.tasks.processes() {
                if p.pgid.load(Ordering::Relaxed) == fown.id
                    && !p.zombie.load(Ordering::Acquire)
                    && sigio_perm(&p, fown)
                {
                    let info = info_for(&p);
                    sigs::send_to_process(&k, &p, info);
                }
            }
        }
    }
}

/// The signal thread's work queue.
struct Worker {
    queue: Mutex<VecDeque<Weak<Entry>>>,
    cv: Condvar,
}

/// The signal thread, started on first use.
fn worker() -> &'static Worker {
    static W: OnceLock<Worker> = OnceLock::new();
    static STARTED: OnceLock<()> = OnceLock::new();
    let w = W.get_or_init(|| Worker {
        queue: Mutex::new(VecDeque::new()),
        cv: Condvar::new(),
    });
    STARTED.get_or_init(|| {
        let _ = std::thread::Builder::new()
            .name("fasync".into())
            .spawn(run_worker);
    });
    w
}

fn run_worker() {
    let w = worker();
    loop {
        let next = {
            let mut q = lock(&w.queue);
            loop {
                if let Some(e) = q.pop_front() {
                    break e;
                }
                q = w.cv.wait(q).unwrap_or_else(|e| e.into_inner());
            }
        };
        if let Some(e) = next.upgrade() {
            handle(&e);
        }
    }
}

/// One wakeup of an armed file: look at its readiness and signal its owner.
fn handle(e: &Arc<Entry>) {
    e.queued.store(false, Ordering::Release);
    let Some(f) = e.file.upgrade() else { return };
    let now = e.poll(&f);
    let last = e.last.swap(now, Ordering::Relaxed);
    let Some(reason) = reason_for(now, last) else {
        return;
    };
    // Still armed (O_ASYNC not turned off meanwhile)?
    let fown = {
        let t = lock(table());
        match t.get(&e.key) {
            Some(a) if a.entry.as_ref().is_some_and(|x| Arc::ptr_eq(x, e)) => a.fown,
            _ => return,
        }
    };
    let fd = *lock(&e.fd);
    drop(f);
    send_sigio(&fown, fd, reason);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_encoding() {
        assert_eq!(decode_setown(42), Ok((OwnerKind::Pid, 42)));
        assert_eq!(decode_setown(-7), Ok((OwnerKind::Pgrp, 7)));
        assert_eq!(decode_setown(i32::MIN), Err(Errno::EINVAL));
        assert_eq!(decode_setown_ex(F_OWNER_TID, 5), Ok((OwnerKind::Tid, 5)));
        assert_eq!(decode_setown_ex(F_OWNER_PGRP, 5), Ok((OwnerKind::Pgrp, 5)));
        assert_eq!(decode_setown_ex(3, 5), Err(Errno::EINVAL));
        assert_eq!(decode_setown_ex(F_OWNER_PID, -1), Err(Errno::ESRCH));
        let f = Fown {
            kind: OwnerKind::Pgrp,
            id: 9,
            ..Fown::default()
        };
        assert_eq!(f.getown(), -9);
        assert_eq!(f.getown_ex(), (F_OWNER_PGRP, 9));
        // The zeroed owner reads back as F_OWNER_TID 0, as on Linux.
        assert_eq!(Fown::default().getown_ex(), (F_OWNER_TID, 0));
    }

    #[test]
    fn reasons_and_bands() {
        assert_eq!(
            reason_for(POLLIN | POLLOUT, POLLIN | POLLOUT),
            Some(POLL_IN)
        );
        assert_eq!(reason_for(POLLOUT, POLLOUT), None);
        assert_eq!(reason_for(POLLOUT, 0), Some(POLL_OUT));
        assert_eq!(reason_for(POLLHUP, 0), Some(POLL_HUP));
        assert_eq!(reason_for(0, POLLIN), None);
        assert_eq!(band(POLL_IN), 0x441);
        assert_eq!(band(POLL_OUT), 0x304);
        assert_eq!(band(POLL_HUP), 0x18);
    }
}
