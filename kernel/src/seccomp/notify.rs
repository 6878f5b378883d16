//! Seccomp user notification (Linux `kernel/seccomp.c` `seccomp_do_user_notification`,
//! `seccomp_notify_*`; seccomp_unotify(2)).
//!
//! A filter installed with SECCOMP_FILTER_FLAG_NEW_LISTENER owns a [`Notif`] (Linux
//! `struct notification`), and the installer gets a listener descriptor ([`Listener`], the
//! anonymous inode "seccomp notify"). A syscall whose verdict is SECCOMP_RET_USER_NOTIF
//! from that filter queues a [`Knotif`] and sleeps ([`notify`]) until the supervisor answers
//! through the listener's ioctls: NOTIF_RECV (take the oldest unreceived notification),
//! NOTIF_SEND (a return value, an errno, or SECCOMP_USER_NOTIF_FLAG_CONTINUE), NOTIF_ID_VALID,
//! NOTIF_SET_FLAGS. poll on the listener: POLLIN while a notification waits to be received,
//! POLLOUT while one is received and unanswered, POLLHUP once no task uses the filter any
//! more (the filter is dropped: [`Notif::orphan`]).
//!
//! Neighbours: [`super`] runs the filters and calls [`notify`]; the woken task returns
//! through the run loop, whose signal delivery applies the restart rules to `ERESTARTSYS`.
//! RECV sleeps inside an ioctl: the `GuestMem` it gets locks the address space for each copy
//! only (`fs/src/sys/rw.rs`), so the supervisor's sibling threads, the notified one among
//! them, keep running meanwhile.
//!
//! NOTIF_ADDFD (with SETFD and SEND) puts a supervisor's descriptor into the notified
//! task's table ([`Listener`]'s `addfd`).
//!
//! A signal for the notified task withdraws its notification: the call returns
//! `ERESTARTSYS`, so with SA_RESTART (or no handler) it runs again after the signal and is
//! notified anew, with a new id, as on Linux (the interrupted wait's `-ERESTARTSYS` becomes
//! the return value that `syscall_set_return_value` leaves for signal delivery).
//!
//! Differences from Linux: SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP is accepted and changes
//! nothing (there is no CPU placement to hint at); RECV waits for a notification in the
//! list rather than for Linux's separate request counter, so a RECV racing with an
//! interrupted notification keeps waiting instead of returning `ENOENT`; ADDFD installs the
//! descriptor itself instead of queueing it to the notified task (see `addfd`), and a
//! descriptor it replaces is dropped without the POSIX-lock release of close(2), as dup2
//! here does.

use crate::task::{Task, lock};
use crate::vfs::{FileOps, GuestMem, Kstat};
use crate::wait::{IoCtx, PollTable, WaitQueue, wait_event};
use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use um_uapi::abi::pod::Pod;
use um_uapi::abi::poll::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use um_uapi::abi::seccomp::*;
use um_uapi::{Errno, SysResult};

/// `enum notify_state`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// Queued, not yet received.
    Init,
    /// Received by the supervisor, not yet answered.
    Sent,
    /// Answered (or the listener went away).
    Replied,
}

/// `struct seccomp_knotif`: one notified syscall.
struct Knotif {
    id: u64,
    task: Arc<Task>,
    data: SeccompData,
    state: State,
    val: i64,
    error: i32,
    flags: u32,
}

#[derive(Default)]
struct Inner {
    list: Vec<Knotif>,
    /// `seccomp_next_notify_id`: ids start from a value that is not 0.
    next_id: u64,
    /// The listener is open (Linux `filter->notif != NULL`).
    attached: bool,
    /// No task uses the filter any more (Linux `filter->users == 0`).
    orphaned: bool,
}

/// `struct notification` of one filter, shared by the filter and its listener.
pub struct Notif {
    inner: Mutex<Inner>,
    /// Listener side: pollers and RECV (Linux `filter->wqh`).
    wqh: WaitQueue,
    /// Notified tasks waiting for their answer (Linux's per-notification `ready`).
    ready: WaitQueue,
    /// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV.
    wait_killable: bool,
    sync_wakeup: AtomicBool,
}

impl Notif {
    /// A notification state for a new filter, with its listener attached.
    pub fn new(wait_killable: bool) -> Arc<Notif> {
        Arc::new(Notif {
            inner: Mutex::new(Inner {
                next_id: 0x4a5c_8c3b_0000_0001,
                attached: true,
                ..Default::default()
            }),
            wqh: WaitQueue::new(),
            ready: WaitQueue::new(),
            wait_killable,
            sync_wakeup: AtomicBool::new(false),
        })
    }

    /// Whether the listener is still open (`has_duplicate_listener` sees only those).
    pub fn attached(&self) -> bool {
        lock(&self.inner).attached
    }

    /// `__seccomp_filter_orphan`: the last task using the filter is gone.
    pub fn orphan(&self) {
        lock(&self.inner).orphaned = true;
        self.wqh.wake_all();
    }

    /// `seccomp_notify_detach`: the listener closed; every unanswered notification is
    /// answered with `ENOSYS`, and later USER_NOTIF verdicts get `ENOSYS` at once.
    fn detach(&self) {
        let mut g = lock(&self.inner);
        for n in g.list.iter_mut().filter(|n| n.state != State::Replied) {
            n.state = State::Replied;
            n.error = Errno::ENOSYS.to_return() as i64 as i32;
            n.val = 0;
            n.flags = 0;
        }
        g.attached = false;
        drop(g);
        self.ready.wake_all();
    }
}

/// How a notified syscall ends.
pub enum Outcome {
    /// SECCOMP_USER_NOTIF_FLAG_CONTINUE: the syscall runs.
    Continue,
    /// The syscall returns this value (`syscall_set_return_value(error, val)`: the error if
    /// it is not 0, else the value).
    Return(u64),
}

/// `seccomp_do_user_notification`: queues the call for the listener and sleeps until it is
/// answered. A signal before the answer withdraws the notification and the call returns
/// `ERESTARTSYS` (so the signal's handler and SA_RESTART decide between EINTR and running
/// the call again, which notifies anew); with WAIT_KILLABLE_RECV, once received only a fatal
/// signal interrupts.
pub fn notify(n: &Notif, task: &Arc<Task>, data: SeccompData) -> Outcome {
    let id = {
        let mut g = lock(&n.inner);
        if !g.attached {
            return Outcome::Return(Errno::ENOSYS.to_return());
        }
        let id = g.next_id;
        g.next_id = g.next_id.wrapping_add(1);
        g.list.push(Knotif {
            id,
            task: task.clone(),
            data,
            state: State::Init,
            val: 0,
            error: 0,
            flags: 0,
        });
        id
    };
    n.wqh.wake_all();
    loop {
        task.waker.reset();
        n.ready.add(&task.waker);
        let mut g = lock(&n.inner);
        let Some(pos) = g.list.iter().position(|k| k.id == id) else {
            // Cannot happen (only this task removes its entry); answer as a closed listener.
            return Outcome::Return(Errno::ENOSYS.to_return());
        };
        let k = &g.list[pos];
        if k.state == State::Replied {
            let (val, error, flags) = (k.val, k.error, k.flags);
            g.list.remove(pos);
            if flags & SECCOMP_USER_NOTIF_FLAG_CONTINUE != 0 {
                return Outcome::Continue;
            }
            let ret = if error != 0 { i64::from(error) } else { val };
            return Outcome::Return(ret as u64);
        }
        let killable = n.wait_killable && k.state == State::Sent;
        let interrupted = if killable {
            crate::ptrace::fatal_signal_pending(task) || task.dying()
        } else {
            task.signal_pending()
        };
        if interrupted {
            g.list.remove(pos);
            drop(g);
            // A supervisor polling for POLLOUT sees the notification gone.
            n.wqh.wake_all();
            return Outcome::Return(Errno::ERESTARTSYS.to_return());
        }
        drop(g);
        task.waker.sleep(None);
    }
}

/// `_IOC_SIZEMASK << _IOC_SIZESHIFT`: what kernel/seccomp.c's `EA_IOCTL` clears from an
/// extensible ioctl's number.
const EA_SIZE_MASK: u32 = 0x3fff << 16;

/// The listener descriptor's file (Linux `seccomp_notify_ops`).
pub struct Listener {
    notif: Arc<Notif>,
    ino: u64,
}

impl Listener {
    /// A listener for `notif`.
    pub fn new(notif: Arc<Notif>) -> Listener {
        static NEXT: AtomicU64 = AtomicU64::new(3 << 32);
        Listener {
            notif,
            ino: NEXT.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// `seccomp_notify_recv`.
    fn recv(&self, io: &IoCtx<'_>, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        // check_zeroed_user: the struct must come zeroed, to keep it extensible.
        let mut buf = [0u8; SeccompNotif::SIZE];
        mem.read(arg, &mut buf)?;
        if buf.iter().any(|&b| b != 0) {
            return Err(Errno::EINVAL);
        }
        let n = &self.notif;
        // recv_wait_event: until a notification waits, or no task uses the filter.
        wait_event(io.task, &[&n.wqh], None, || {
            let g = lock(&n.inner);
            (g.orphaned || g.list.iter().any(|k| k.state == State::Init)).then_some(())
        })
        .map_err(|_| Errno::ERESTARTSYS)?;
        let unotif = {
            let mut g = lock(&n.inner);
            let k = g
                .list
                .iter_mut()
                .find(|k| k.state == State::Init)
                .ok_or(Errno::ENOENT)?;
            k.state = State::Sent;
            SeccompNotif {
                id: k.id,
                pid: k.task.pids.nr_in(io.task.pids.ns()),
                flags: 0,
                data: k.data,
            }
        };
        n.wqh.wake_all();
        if let Err(e) = mem.write(arg, &unotif.as_bytes()) {
            // The supervisor's buffer is bad: the notification goes back to the queue.
            let mut g = lock(&n.inner);
            if let Some(k) = g.list.iter_mut().find(|k| k.id == unotif.id) {
                k.state = State::Init;
            }
            drop(g);
            n.wqh.wake_all();
            n.ready.wake_all();
            return Err(e);
        }
        Ok(0)
    }

    /// `seccomp_notify_send`.
    fn send(&self, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        let mut buf = [0u8; SeccompNotifResp::SIZE];
        mem.read(arg, &mut buf)?;
        let resp = SeccompNotifResp::from_bytes(&buf).ok_or(Errno::EFAULT)?;
        if resp.flags & !SECCOMP_USER_NOTIF_FLAG_CONTINUE != 0 {
            return Err(Errno::EINVAL);
        }
        if resp.flags & SECCOMP_USER_NOTIF_FLAG_CONTINUE != 0 && (resp.error != 0 || resp.val != 0)
        {
            return Err(Errno::EINVAL);
        }
        let mut g = lock(&self.notif.inner);
        let k = g
            .list
            .iter_mut()
            .find(|k| k.id == resp.id)
            .ok_or(Errno::ENOENT)?;
        // Exactly one answer, and only to a received notification.
        if k.state != State::Sent {
            return Err(Errno::EINPROGRESS);
        }
        k.state = State::Replied;
        k.val = resp.val;
        k.error = resp.error;
        k.flags = resp.flags;
        drop(g);
        self.notif.ready.wake_all();
        Ok(0)
    }

    /// `seccomp_notify_addfd` (with the notified task's part, `seccomp_handle_addfd`): puts a
    /// descriptor of the supervisor's into the table of the task whose received notification
    /// `id` names, at the lowest free number or (SETFD) at `newfd`, replacing what is there;
    /// with SEND that descriptor is also the notified call's answer. Returns the new number.
    ///
    /// Linux queues the request to the notified task, which installs the file itself when it
    /// wakes, and the supervisor waits for that. Here the supervisor installs it under the
    /// notification lock while the notified task is known to wait (state SENT): the same
    /// result, and the task can neither be interrupted nor answered halfway (it needs that
    /// lock to leave its wait). So a request is never pending, and SEND's `EBUSY` (requests
    /// still pending) and `ESRCH` (the task left with requests pending) do not arise.
    fn addfd(&self, io: &IoCtx<'_>, cmd: u32, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        use um_uapi::abi::fcntl::O_CLOEXEC;
        let size = um_uapi::abi::tty::ioc_size(cmd);
        if size < SECCOMP_NOTIFY_ADDFD_SIZE_VER0 || size as u64 >= um_mm::page_size() {
            return Err(Errno::EINVAL);
        }
        // copy_struct_from_user: what a newer, larger struct adds must be zero.
        let mut buf = vec![0u8; size];
        mem.read(arg, &mut buf)?;
        if buf[SECCOMP_NOTIFY_ADDFD_SIZE_VER0..]
            .iter()
            .any(|&b| b != 0)
        {
            return Err(Errno::E2BIG);
        }
        let a =
            SeccompNotifAddfd::from_bytes(&buf[..SeccompNotifAddfd::SIZE]).ok_or(Errno::EFAULT)?;
        if a.newfd_flags & !O_CLOEXEC != 0
            || a.flags & !(SECCOMP_ADDFD_FLAG_SETFD | SECCOMP_ADDFD_FLAG_SEND) != 0
            || (a.newfd != 0 && a.flags & SECCOMP_ADDFD_FLAG_SETFD == 0)
        {
            return Err(Errno::EINVAL);
        }
        // fget: the supervisor's own descriptor (not an O_PATH one).
        let file = lock(&io.task.process.files()).get_nopath(u64::from(a.srcfd))?;
        let cloexec = a.newfd_flags & O_CLOEXEC != 0;
        let mut g = lock(&self.notif.inner);
        let k = g
            .list
            .iter_mut()
            .find(|k| k.id == a.id)
            .ok_or(Errno::ENOENT)?;
        // Not before the supervisor has received the notification, nor after its answer.
        if k.state != State::Sent {
            return Err(Errno::EINPROGRESS);
        }
        let table = k.task.process.files();
        let mut files = lock(&table);
        // receive_fd / receive_fd_replace (replace_fd: EBADF at or above RLIMIT_NOFILE).
        let (fd, replaced) = if a.flags & SECCOMP_ADDFD_FLAG_SETFD != 0 {
            let old = files.install_at(a.newfd, file, cloexec)?;
            (a.newfd, old)
        } else {
            (files.install(file, cloexec, 0)?, None)
        };
        drop(files);
        let send = a.flags & SECCOMP_ADDFD_FLAG_SEND != 0;
        if send {
            // The one answer: the call returns the new descriptor.
            k.state = State::Replied;
            k.val = i64::from(fd);
            k.error = 0;
            k.flags = 0;
        }
        drop(g);
        // A replaced file is let go only now, outside both locks (its release may take
        // other locks, a listener's included).
        drop(replaced);
        if send {
            self.notif.ready.wake_all();
        }
        Ok(u64::from(fd))
    }

    /// `seccomp_notify_id_valid`: the notification is received and its task still waits.
    fn id_valid(&self, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        let mut buf = [0u8; 8];
        mem.read(arg, &mut buf)?;
        let id = u64::from_le_bytes(buf);
        let g = lock(&self.notif.inner);
        match g.list.iter().find(|k| k.id == id) {
            Some(k) if k.state == State::Sent => Ok(0),
            _ => Err(Errno::ENOENT),
        }
    }
}

impl Drop for Listener {
    /// `seccomp_notify_release`.
    fn drop(&mut self) {
        self.notif.detach();
    }
}

impl FileOps for Listener {
    /// An anonymous inode: mode 0600, no file type.
    fn stat(&self) -> SysResult<Kstat> {
        Ok(crate::vfs::anon_kstat(0o600, self.ino, 0x0d, 0, 0))
    }

    fn is_stream(&self) -> bool {
        true
    }

    /// `seccomp_notify_ioctl`: unknown commands are `EINVAL`.
    fn ioctl(&self, io: &IoCtx<'_>, cmd: u32, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        match cmd {
            SECCOMP_IOCTL_NOTIF_RECV => self.recv(io, arg, mem),
            SECCOMP_IOCTL_NOTIF_SEND => self.send(arg, mem),
            SECCOMP_IOCTL_NOTIF_ID_VALID | SECCOMP_IOCTL_NOTIF_ID_VALID_WRONG_DIR => {
                self.id_valid(arg, mem)
            }
            SECCOMP_IOCTL_NOTIF_SET_FLAGS => {
                if arg & !SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP != 0 {
                    return Err(Errno::EINVAL);
                }
                self.notif.sync_wakeup.store(arg != 0, Ordering::Relaxed);
                Ok(0)
            }
            // The extensible-argument ioctl: any size (`EA_IOCTL` masks it out).
            _ if cmd & !EA_SIZE_MASK == SECCOMP_IOCTL_NOTIF_ADDFD & !EA_SIZE_MASK => {
                self.addfd(io, cmd, arg, mem)
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// `seccomp_notify_poll`.
    fn poll(&self, events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        if let Some(pt) = pt {
            pt.wait_on(&self.notif.wqh);
        }
        let g = lock(&self.notif.inner);
        let mut ret = 0;
        for k in &g.list {
            match k.state {
                State::Init => ret |= POLLIN | POLLRDNORM,
                State::Sent => ret |= POLLOUT | POLLWRNORM,
                State::Replied => {}
            }
        }
        if g.orphaned {
            ret |= POLLHUP;
        }
        ret & (events | POLLHUP | POLLERR)
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }

    fn anon_name(&self) -> Option<&'static str> {
        Some("seccomp notify")
    }
}
