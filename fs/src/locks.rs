//! File locks (Linux `fs/locks.c`): POSIX record locks (`fcntl` F_GETLK/F_SETLK/F_SETLKW), open
//! file description locks (F_OFD_*), and BSD `flock(2)` locks.
//!
//! Locks live in one table keyed by the inode ([`crate::mount::inode_key`]). A POSIX lock is
//! owned by a process and released when that process closes *any* descriptor of the file or
//! exits; an OFD or flock lock is owned by an open file description and released when its last
//! descriptor closes. POSIX/OFD locks and flock locks do not see each other (as on Linux).
//! Blocking requests sleep on one wait queue, woken whenever a lock is released, and are
//! interruptible by signals.
//!
//! **Deadlock detection** (`posix_locks_deadlock`): a sleeping request is recorded as a
//! [`Waiter`] (Linux's `blocked_hash` entry: who waits, and for which lock, its `fl_blocker`).
//! A process's `F_SETLKW` that would sleep on a lock whose owner is itself, transitively,
//! waiting for a lock of the caller fails with `EDEADLK` at once. As on Linux the check is made
//! only when a request is about to sleep (first, or after its blocker went away), so the
//! newcomer that would close a cycle is the one that fails; OFD and flock requests are never
//! checked, and chains longer than `MAX_DEADLK_ITERATIONS` are not followed.
//!
//! Also here: **leases** (`F_SETLEASE`/`F_GETLEASE`, `generic_setlease`, `__break_lease`),
//! owned by an open file description. A read lease needs the file open for writing nowhere
//! (not even through the requester), a write lease needs it open nowhere else; opens are
//! counted over every process's descriptor table (files held only by a mapping are not seen).
//! A conflicting `open(2)` or `truncate(2)` ([`break_lease`]) marks the lease as breaking
//! (to `F_UNLCK` for a writer, `F_RDLCK` for a reader), signals its holder (`SIGIO` or the
//! `F_SETSIG` signal, `POLL_MSG`, through `fasync`), and waits until the holder gives it up or
//! `/proc/sys/fs/lease-break-time` seconds pass, when the kernel does it instead; an
//! `O_NONBLOCK` opener gets `EWOULDBLOCK` at once. Leases go with their description.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use um_kernel::kernel::Kernel;
use um_kernel::task::{Task, lock};
use um_kernel::vfs::{Dentry, OpenFile, mode};
use um_kernel::wait::{WaitError, WaitQueue, wait_event};
use um_uapi::{Errno, SysResult};

pub use um_uapi::abi::fcntl::F_RDLCK;
pub use um_uapi::abi::fcntl::F_UNLCK;
pub use um_uapi::abi::fcntl::F_WRLCK;

/// Who owns a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// A process (POSIX record locks).
    Process(u32),
    /// An open file description (OFD locks), by address.
    File(usize),
}

/// Which family a lock belongs to: the two never conflict with each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Posix,
    Flock,
}

/// One lock: `[start, end]` inclusive (`end == u64::MAX`: to the end of the file, and beyond).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lock {
    pub owner: Owner,
    pub family: Family,
    pub write: bool,
    pub start: u64,
    pub end: u64,
    /// The pid that set it, for F_GETLK.
    pub pid: u32,
}

fn overlaps(a: &Lock, start: u64, end: u64) -> bool {
    a.start <= end && start <= a.end
}

/// A request asleep in `F_SETLKW` (or flock's wait): Linux's entry in `blocked_hash`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Waiter {
    /// This request (one `set_lock` call).
    id: u64,
    /// Who waits.
    owner: Owner,
    /// The inode of the lock it waits for.
    key: u64,
    /// The lock it waits for (`fl_blocker`), as it was when the request went to sleep.
    blocker: Lock,
}

/// All locks, by inode.
#[derive(Default)]
pub struct LockTable {
    locks: Mutex<HashMap<u64, Vec<Lock>>>,
    /// The sleeping requests. Taken only alone or inside `locks` (check and insert are one
    /// step, as Linux does both under `blocked_lock_lock`).
    blocked: Mutex<Vec<Waiter>>,
    released: WaitQueue,
}

/// fs/locks.c `MAX_DEADLK_ITERATIONS`: how far a waits-for chain is followed.
const MAX_DEADLK_ITERATIONS: u32 = 10;

/// `posix_locks_deadlock`: would `want`, sleeping on `blocker`, close a cycle of waiting
/// owners? `waits_for(o)` is the owner of the lock `o` waits for, if `o` is asleep on one
/// (`what_owner_is_waiting_for`). Only a process's POSIX request is checked: OFD locks have
/// no process to follow (fs/locks.c says so) and flock(2) never reports `EDEADLK`.
fn posix_locks_deadlock(
    want: &Lock,
    blocker: &Lock,
    mut waits_for: impl FnMut(Owner) -> Option<Owner>,
) -> bool {
    if want.family != Family::Posix || !matches!(want.owner, Owner::Process(_)) {
        return false;
    }
    let mut owner = blocker.owner;
    let mut i = 0;
    while let Some(next) = waits_for(owner) {
        // `if (i++ > MAX_DEADLK_ITERATIONS) return 0;`: also ends cycles that do not
        // include the caller.
        if i > MAX_DEADLK_ITERATIONS {
            return false;
        }
        i += 1;
        if next == want.owner {
            return true;
        }
        owner = next;
    }
    false
}

/// `what_owner_is_waiting_for` over the live table: the owner of the lock `owner` sleeps on.
/// A waiter whose lock is gone or changed has been woken (Linux unlinks it from
/// `blocked_hash` when its blocker goes) and waits for nothing until it looks again. Only
/// waiters on a process's POSIX lock count (`__locks_insert_block` hashes no others).
fn what_owner_is_waiting_for(
    locks: &HashMap<u64, Vec<Lock>>,
    blocked: &[Waiter],
    owner: Owner,
) -> Option<Owner> {
    blocked
        .iter()
        .filter(|w| {
            w.owner == owner
                && w.blocker.family == Family::Posix
                && matches!(w.blocker.owner, Owner::Process(_))
        })
        .find(|w| locks.get(&w.key).is_some_and(|l| l.contains(&w.blocker)))
        .map(|w| w.blocker.owner)
}

/// Removes a request's [`Waiter`] when it stops waiting, however it stops (the lock, a
/// signal, `EDEADLK`).
struct WaiterGuard<'a> {
    blocked: &'a Mutex<Vec<Waiter>>,
    id: u64,
}

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        lock(self.blocked).retain(|w| w.id != self.id);
    }
}

static TABLE: std::sync::OnceLock<LockTable> = std::sync::OnceLock::new();

fn table() -> &'static LockTable {
    TABLE.get_or_init(LockTable::default)
}

impl LockTable {
    /// The lock of another owner that conflicts with `want`, if any.
    fn conflict(list: &[Lock], want: &Lock) -> Option<Lock> {
        // The lowest-starting one, as Linux's start-ordered lock list reports it.
        list.iter()
            .filter(|l| {
                l.family == want.family
                    && l.owner != want.owner
                    && overlaps(l, want.start, want.end)
                    && (l.write || want.write)
            })
            .min_by_key(|l| l.start)
            .copied()
    }

    /// Replaces `owner`'s locks over `[start, end]` with `new` (or removes them): the range
    /// arithmetic of `posix_lock_inode` (split, trim, and merge of adjacent same-type locks).
    fn apply(
        list: &mut Vec<Lock>,
        owner: Owner,
        family: Family,
        start: u64,
        end: u64,
        new: Option<Lock>,
    ) {
        let mut out = Vec::with_capacity(list.len() + 2);
        for l in list.drain(..) {
            if l.owner != owner || l.family != family || !overlaps(&l, start, end) {
                out.push(l);
                continue;
            }
            if l.start < start {
                out.push(Lock {
                    end: start - 1,
                    ..l
                });
            }
            if l.end > end {
                out.push(Lock {
                    start: end + 1,
                    ..l
                });
            }
        }
        if let Some(mut n) = new {
            // Merge with adjacent locks of the same owner and type.
            out.retain(|l| {
                let adjacent = l.owner == n.owner
                    && l.family == n.family
                    && l.write == n.write
                    && (l.end.checked_add(1) == Some(n.start)
                        || n.end.checked_add(1) == Some(l.start));
                if adjacent {
                    n.start = n.start.min(l.start);
                    n.end = n.end.max(l.end);
                }
                !adjacent
            });
            out.push(n);
        }
        *list = out;
    }
}

/// F_GETLK: the first lock that would block `want`, if any.
pub fn test_lock(key: u64, want: &Lock) -> Option<Lock> {
    let t = table();
    let locks = lock(&t.locks);
    locks.get(&key).and_then(|l| LockTable::conflict(l, want))
}

/// F_SETLK/F_SETLKW/flock: sets (or, with `write == None`, removes) a lock, waiting for
/// conflicting ones if `wait`.
pub fn set_lock(task: &Task, key: u64, want: Lock, unlock: bool, wait: bool) -> SysResult<()> {
    static NEXT_ID: AtomicU64 = AtomicU64::new(0);
    let t = table();
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    // Dropped when this call returns: the request no longer waits.
    let _waiter = WaiterGuard {
        blocked: &t.blocked,
        id,
    };
    let try_set = || -> Option<SysResult<()>> {
        let mut locks = lock(&t.locks);
        if unlock {
            if let Some(list) = locks.get_mut(&key) {
                LockTable::apply(list, want.owner, want.family, want.start, want.end, None);
                if list.is_empty() {
                    locks.remove(&key);
                }
            }
            drop(locks);
            t.released.wake_all();
            return Some(Ok(()));
        }
        if let Some(blocker) = locks
            .get(&key)
            .and_then(|list| LockTable::conflict(list, &want))
        {
            if !wait {
                return Some(Err(Errno::EAGAIN));
            }
            let mut blocked = lock(&t.blocked);
            let me = blocked.iter().position(|w| w.id == id);
            // Woken by some other release while the same lock still blocks: Linux would not
            // have woken this request, so it goes back to sleep without a second look.
            if me.is_some_and(|i| blocked[i].key == key && blocked[i].blocker == blocker) {
                return None;
            }
            // posix_lock_inode: the check and the insertion into `blocked_hash` are one step.
            let cycle = posix_locks_deadlock(&want, &blocker, |o| {
                what_owner_is_waiting_for(&locks, &blocked, o)
            });
            if cycle {
                if let Some(i) = me {
                    blocked.swap_remove(i);
                }
                return Some(Err(Errno::EDEADLK));
            }
            let w = Waiter {
                id,
                owner: want.owner,
                key,
                blocker,
            };
            match me {
                Some(i) => blocked[i] = w,
                None => blocked.push(w),
            }
            return None;
        }
        lock(&t.blocked).retain(|w| w.id != id);
        let list = locks.entry(key).or_default();
        LockTable::apply(
            list,
            want.owner,
            want.family,
            want.start,
            want.end,
            Some(want),
        );
        drop(locks);
        // A downgrade (write to read) may unblock readers.
        t.released.wake_all();
        Some(Ok(()))
    };
    if let Some(r) = try_set() {
        return r;
    }
    match wait_event(task, &[&t.released], None, try_set) {
        Ok(r) => r,
        Err(WaitError::Interrupted) => Err(Errno::ERESTARTSYS),
        Err(WaitError::TimedOut) => Err(Errno::EAGAIN),
    }
}

/// Releases every lock `owner` holds on `key` (POSIX: the process closed a descriptor of the
/// file; OFD/flock: the last descriptor of the description closed).
pub fn release(key: u64, owner: Owner) {
    let t = table();
    let mut locks = lock(&t.locks);
    if let Some(list) = locks.get_mut(&key) {
        let before = list.len();
        list.retain(|l| l.owner != owner);
        let changed = list.len() != before;
        if list.is_empty() {
            locks.remove(&key);
        }
        drop(locks);
        if changed {
            t.released.wake_all();
        }
    }
}

/// Releases every POSIX lock of process `pid` (exit).
pub fn release_process(pid: u32) {
    let t = table();
    let mut locks = lock(&t.locks);
    let mut changed = false;
    locks.retain(|_, list| {
        let before = list.len();
        list.retain(|l| l.owner != Owner::Process(pid));
        changed |= list.len() != before;
        !list.is_empty()
    });
    drop(locks);
    if changed {
        t.released.wake_all();
    }
}

/// The lock key of an open file: its inode's, or, for a file with no name (a pipe, the
/// console), the description's own identity (the top bit keeps the two spaces apart).
pub fn file_key(f: &OpenFile) -> Option<u64> {
    Some(match &f.dentry {
        Some(d) => crate::mount::inode_key(&*d.inode) & !(1 << 63),
        None => (f as *const OpenFile as u64) | (1 << 63),
    })
}

/// The owner of OFD and flock locks taken through `f`.
pub fn description_owner(f: &Arc<OpenFile>) -> Owner {
    Owner::File(Arc::as_ptr(f) as usize)
}

/// What a close of `f` by process `pid` releases: its dnotify marks through `f`, the
/// process's POSIX locks on the file, and,
/// when this was the description's last descriptor (`last`), its OFD and flock locks.
pub fn on_close(f: &Arc<OpenFile>, pid: u32, last: bool) {
    // filp_close -> dnotify_flush: the process's directory notifications through `f` end.
    crate::dnotify::flush(f, pid);
    if let Some(key) = file_key(f) {
        release(key, Owner::Process(pid));
        if last {
            release(key, description_owner(f));
        }
    }
}

pub use um_uapi::abi::capability::CAP_LEASE;
use um_uapi::abi::fcntl::O_NONBLOCK;
use um_uapi::abi::fcntl::O_PATH;

/// `/proc/sys/fs/lease-break-time` in seconds (fs/locks.c `lease_break_time`, default 45).
static LEASE_BREAK_TIME: AtomicI64 = AtomicI64::new(45);

/// `/proc/sys/fs/lease-break-time`.
pub fn lease_break_time() -> i64 {
    LEASE_BREAK_TIME.load(Ordering::Relaxed)
}

/// Sets `/proc/sys/fs/lease-break-time`.
pub fn set_lease_break_time(v: i64) {
    LEASE_BREAK_TIME.store(v, Ordering::Relaxed);
}

/// `/proc/sys/fs/lease-break-time` as a sysctl file (`proc_dointvec`), for `/proc/sys/fs`
/// (`procfs/system.rs` lists it).
pub fn proc_lease_break_time(fs: &Arc<crate::procfs::ProcFs>) -> Arc<crate::procfs::ProcInode> {
    crate::procfs::ProcInode::file_rw(
        fs,
        |_, _| Ok(format!("{}\n", lease_break_time()).into_bytes()),
        |_, io, data| {
            // A root-only sysctl (0644), as pipe-max-size.
            if lock(&io.task.process.creds).euid != 0 {
                return Err(Errno::EPERM);
            }
            let v = std::str::from_utf8(data)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
                .ok_or(Errno::EINVAL)?;
            set_lease_break_time(i64::from(v));
            Ok(data.len())
        },
    )
}

/// One lease (`struct file_lease` with `FL_LEASE`).
#[derive(Clone, Debug)]
struct Lease {
    file: Weak<OpenFile>,
    /// The holding description's address.
    filp: usize,
    /// The descriptor it was set through (`fa_fd`, for `si_fd`).
    fd: i32,
    /// `F_RDLCK` or `F_WRLCK`.
    ty: i16,
    /// Being broken: what it must become (`FL_UNLOCK_PENDING`: `F_UNLCK`,
    /// `FL_DOWNGRADE_PENDING`: `F_RDLCK`), and when the kernel does it (None: never).
    pending: Option<(i16, Option<Instant>)>,
}

impl Lease {
    /// `target_leasetype`: what F_GETLEASE reports.
    fn target(&self) -> i16 {
        self.pending.map_or(self.ty, |p| p.0)
    }
}

/// `check_conflicting_open`: may a lease of type `arg` be taken through a description opened
/// for (`self_read`, `self_write`), with `readers` read-only and `writers` writable opens of
/// the file in all (the requester's included)?
pub fn lease_open_conflict(
    arg: i16,
    self_read: bool,
    self_write: bool,
    readers: usize,
    writers: usize,
) -> SysResult<()> {
    let busy = match arg {
        F_RDLCK => writers > 0,
        F_WRLCK => {
            let (sw, sr) = if self_write {
                (1, 0)
            } else {
                (0, usize::from(self_read))
            };
            writers != sw || readers != sr
        }
        _ => false,
    };
    if busy { Err(Errno::EAGAIN) } else { Ok(()) }
}

/// `leases_conflict`: does an open for writing (`want_write`) or reading conflict with a lease
/// of type `ty`?
pub fn lease_breaks(ty: i16, want_write: bool) -> bool {
    want_write || ty == F_WRLCK
}

/// Every lease by inode, and the queue breakers wait on.
#[derive(Default)]
struct Leases {
    table: Mutex<HashMap<u64, Vec<Lease>>>,
    /// Woken whenever a lease changes or goes.
    changed: WaitQueue,
}

fn leases() -> &'static Leases {
    static L: std::sync::OnceLock<Leases> = std::sync::OnceLock::new();
    L.get_or_init(Default::default)
}

/// `time_out_leases`: leases whose break time passed become their target.
fn time_out(list: &mut Vec<Lease>, now: Instant) -> bool {
    let mut changed = false;
    list.retain_mut(|l| match l.pending {
        Some((target, Some(when))) if now >= when => {
            changed = true;
            if target == F_UNLCK {
                return false;
            }
            l.ty = target;
            l.pending = None;
            true
        }
        _ => true,
    });
    changed
}

/// Counts the open descriptions of the inode `key` over every process: (read-only, writable).
fn open_counts(k: &Kernel, key: u64) -> (usize, usize) {
    let mut seen: Vec<*const OpenFile> = Vec::new();
    let (mut readers, mut writers) = (0, 0);
    for p in k.tasks.processes() {
        let table = p.files();
        let files = lock(&table);
        for (_, e) in files.iter() {
            let f = &e.file;
            let Some(d) = &f.dentry else { continue };
            if f.flags() & O_PATH != 0 || crate::mount::inode_key(&*d.inode) != key {
                continue;
            }
            let ptr = Arc::as_ptr(f);
            if seen.contains(&ptr) {
                continue;
            }
            seen.push(ptr);
            match f.flags() & 3 {
                0 => readers += 1,
                _ => writers += 1,
            }
        }
    }
    (readers, writers)
}

/// `fcntl(fd, F_SETLEASE, arg)` (`fcntl_setlease`, `generic_setlease`): `fsuid` and
/// `cap_lease` are the caller's.
pub fn set_lease(
    k: &Kernel,
    f: &Arc<OpenFile>,
    fd: i32,
    arg: i16,
    fsuid: u32,
    cap_lease: bool,
) -> SysResult<u64> {
    if !matches!(arg, F_RDLCK | F_WRLCK | F_UNLCK) {
        return Err(Errno::EINVAL);
    }
    let d = f.dentry.as_ref().ok_or(Errno::EINVAL)?;
    let st = f.ops.stat()?;
    if st.uid != fsuid && !cap_lease {
        return Err(Errno::EACCES);
    }
    if st.mode & mode::S_IFMT != mode::S_IFREG {
        return Err(Errno::EINVAL);
    }
    let key = crate::mount::inode_key(&*d.inode);
    let filp = Arc::as_ptr(f) as usize;
    let Leases { table, changed } = leases();
    // Counted before taking the table: the descriptor tables are locked one by one.
    let counts = (arg != F_UNLCK).then(|| open_counts(k, key));
    let mut all = lock(table);
    let list = all.entry(key).or_default();
    list.retain(|l| l.file.strong_count() > 0);
    time_out(list, Instant::now());
    let mine = list.iter().position(|l| l.filp == filp);
    let r = if arg == F_UNLCK {
        // generic_delete_lease: no lease is EAGAIN.
        match mine {
            Some(i) => {
                list.remove(i);
                Ok(0)
            }
            None => Err(Errno::EAGAIN),
        }
    } else {
        let acc = f.flags() & 3;
        let (readers, writers) = counts.unwrap_or_default();
        lease_open_conflict(arg, acc != 1, acc != 0, readers, writers).and_then(|()| {
            // generic_add_lease: no write lease beside another's lease, and no new lease
            // while another is being broken for a writer.
            for (i, l) in list.iter().enumerate() {
                if Some(i) == mine {
                    continue;
                }
                if arg == F_WRLCK || l.pending.is_some_and(|p| p.0 == F_UNLCK) {
                    return Err(Errno::EAGAIN);
                }
            }
            match mine {
                Some(i) => {
                    // lease_modify with lease_clear_pending.
                    let l = &mut list[i];
                    l.ty = arg;
                    l.fd = fd;
                    if arg == F_WRLCK || l.pending.is_some_and(|p| p.0 == F_RDLCK) {
                        l.pending = None;
                    }
                }
                None => list.push(Lease {
                    file: Arc::downgrade(f),
                    filp,
                    fd,
                    ty: arg,
                    pending: None,
                }),
            }
            Ok(0)
        })
    };
    if list.is_empty() {
        all.remove(&key);
    }
    drop(all);
    changed.wake_all();
    r
}

/// `F_GETLEASE`: the type of `f`'s lease (its target while being broken), or `F_UNLCK`.
pub fn get_lease(f: &OpenFile) -> i16 {
    let Some(d) = &f.dentry else { return F_UNLCK };
    let key = crate::mount::inode_key(&*d.inode);
    let filp = f as *const OpenFile as usize;
    let mut all = lock(&leases().table);
    let Some(list) = all.get_mut(&key) else {
        return F_UNLCK;
    };
    time_out(list, Instant::now());
    list.iter()
        .find(|l| l.filp == filp)
        .map_or(F_UNLCK, Lease::target)
}

/// `break_lease` before an open of `d` with `flags` (and `truncate`, with `O_WRONLY`):
/// conflicting leases are broken and their holders signalled; waits for them unless
/// `O_NONBLOCK` (`EWOULDBLOCK`).
pub fn break_lease(task: &Task, d: &Dentry, flags: u32) -> SysResult<()> {
    let Leases { table, changed } = leases();
    if lock(table).is_empty() {
        return Ok(());
    }
    let key = crate::mount::inode_key(&*d.inode);
    let want_write = flags & 3 != 0;
    let secs = lease_break_time();
    let deadline = (secs > 0).then(|| Instant::now() + Duration::from_secs(secs as u64));
    let mut notify = Vec::new();
    {
        let mut all = lock(table);
        let Some(list) = all.get_mut(&key) else {
            return Ok(());
        };
        list.retain(|l| l.file.strong_count() > 0);
        time_out(list, Instant::now());
        for l in list.iter_mut() {
            if !lease_breaks(l.ty, want_write) {
                continue;
            }
            if want_write {
                if l.pending.is_some_and(|p| p.0 == F_UNLCK) {
                    continue;
                }
                l.pending = Some((F_UNLCK, deadline));
            } else {
                if l.pending.is_some() {
                    continue;
                }
                l.pending = Some((F_RDLCK, deadline));
            }
            notify.push((l.file.clone(), l.fd));
        }
        if list.is_empty() {
            all.remove(&key);
            return Ok(());
        }
    }
    // lease_break_callback: kill_fasync(&fl->fl_fasync, SIGIO, POLL_MSG).
    for (f, fd) in notify {
        if let Some(f) = f.upgrade() {
            let fown = crate::fasync::fown(&f);
            drop(f);
            crate::fasync::send_sigio(&fown, fd, crate::fasync::POLL_MSG);
        }
    }
    let conflict = || -> Option<()> {
        let mut all = lock(table);
        let Some(list) = all.get_mut(&key) else {
            return Some(());
        };
        list.retain(|l| l.file.strong_count() > 0);
        time_out(list, Instant::now());
        let busy = list.iter().any(|l| lease_breaks(l.ty, want_write));
        if list.is_empty() {
            all.remove(&key);
        }
        (!busy).then_some(())
    };
    if conflict().is_some() {
        return Ok(());
    }
    if flags & O_NONBLOCK != 0 {
        return Err(Errno::EWOULDBLOCK);
    }
    loop {
        // Wake up when the earliest forced break is due.
        let due = lock(table)
            .get(&key)
            .and_then(|l| l.iter().filter_map(|l| l.pending.and_then(|p| p.1)).min());
        match wait_event(task, &[changed], due, conflict) {
            Ok(()) => return Ok(()),
            Err(WaitError::Interrupted) => return Err(Errno::ERESTARTSYS),
            Err(WaitError::TimedOut) => {
                if conflict().is_some() {
                    return Ok(());
                }
            }
        }
    }
}

/// The description `f` is gone: its leases go (`locks_remove_file` -> `locks_remove_lease`).
pub fn lease_released(f: &OpenFile) {
    let a = f as *const OpenFile as usize;
    let Leases { table, changed } = leases();
    let mut all = lock(table);
    if all.is_empty() {
        return;
    }
    all.retain(|_, list| {
        list.retain(|l| l.filp != a);
        !list.is_empty()
    });
    drop(all);
    changed.wake_all();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lk(owner: u32, write: bool, start: u64, end: u64) -> Lock {
        Lock {
            owner: Owner::Process(owner),
            family: Family::Posix,
            write,
            start,
            end,
            pid: owner,
        }
    }

    #[test]
    fn split_trim_and_merge() {
        let mut v = vec![lk(1, true, 0, 99)];
        // Unlock the middle: two pieces remain.
        LockTable::apply(&mut v, Owner::Process(1), Family::Posix, 40, 59, None);
        assert_eq!(v.len(), 2);
        assert!(v.contains(&lk(1, true, 0, 39)) && v.contains(&lk(1, true, 60, 99)));
        // Lock the hole again: merged into one.
        LockTable::apply(
            &mut v,
            Owner::Process(1),
            Family::Posix,
            40,
            59,
            Some(lk(1, true, 40, 59)),
        );
        assert_eq!(v, vec![lk(1, true, 0, 99)]);
        // A read lock in the middle splits the write lock into three.
        LockTable::apply(
            &mut v,
            Owner::Process(1),
            Family::Posix,
            10,
            19,
            Some(lk(1, false, 10, 19)),
        );
        assert_eq!(v.len(), 3);
    }

    #[test]
    fn lease_conflict_rules() {
        // A read lease: no writable open anywhere, the requester's included.
        assert!(lease_open_conflict(F_RDLCK, true, false, 3, 0).is_ok());
        assert_eq!(
            lease_open_conflict(F_RDLCK, true, true, 0, 1),
            Err(Errno::EAGAIN)
        );
        // A write lease: only the requester's own open.
        assert!(lease_open_conflict(F_WRLCK, true, false, 1, 0).is_ok());
        assert!(lease_open_conflict(F_WRLCK, true, true, 0, 1).is_ok());
        assert_eq!(
            lease_open_conflict(F_WRLCK, true, false, 2, 0),
            Err(Errno::EAGAIN)
        );
        assert_eq!(
            lease_open_conflict(F_WRLCK, true, true, 1, 1),
            Err(Errno::EAGAIN)
        );
        // Breaking: a writer breaks any lease, a reader only a write lease.
        assert!(lease_breaks(F_RDLCK, true) && lease_breaks(F_WRLCK, false));
        assert!(!lease_breaks(F_RDLCK, false));
    }

    #[test]
    fn leases_time_out_to_their_target() {
        let now = Instant::now();
        let mut v = vec![
            Lease {
                file: Weak::new(),
                filp: 1,
                fd: 3,
                ty: F_WRLCK,
                pending: Some((F_RDLCK, Some(now))),
            },
            Lease {
                file: Weak::new(),
                filp: 2,
                fd: 4,
                ty: F_RDLCK,
                pending: Some((F_UNLCK, Some(now))),
            },
            Lease {
                file: Weak::new(),
                filp: 3,
                fd: 5,
                ty: F_RDLCK,
                pending: Some((F_UNLCK, None)),
            },
        ];
        assert!(time_out(&mut v, now));
        assert_eq!(v.len(), 2);
        assert_eq!((v[0].ty, v[0].pending), (F_RDLCK, None));
        assert_eq!(v[1].target(), F_UNLCK);
    }

    /// A waits-for relation from `(waiter, owner of its blocker)` pairs.
    fn waits(edges: &[(u32, u32)]) -> impl FnMut(Owner) -> Option<Owner> + '_ {
        move |o| {
            edges
                .iter()
                .find(|e| Owner::Process(e.0) == o)
                .map(|e| Owner::Process(e.1))
        }
    }

    #[test]
    fn deadlock_cycles_of_two_and_three_owners() {
        // 1 would sleep on 2's lock while 2 sleeps on 1's.
        assert!(posix_locks_deadlock(
            &lk(1, true, 0, 0),
            &lk(2, true, 0, 0),
            waits(&[(2, 1)])
        ));
        // fcntl17: 3 would sleep on 2's lock, 2 sleeps on 4's... and 4 on 3's.
        assert!(posix_locks_deadlock(
            &lk(3, true, 0, 0),
            &lk(2, true, 0, 0),
            waits(&[(2, 4), (4, 3)])
        ));
        // A chain that ends in a running owner is no deadlock.
        assert!(!posix_locks_deadlock(
            &lk(3, true, 0, 0),
            &lk(2, true, 0, 0),
            waits(&[(2, 4), (4, 5)])
        ));
        assert!(!posix_locks_deadlock(
            &lk(1, true, 0, 0),
            &lk(2, true, 0, 0),
            waits(&[])
        ));
        // A cycle the caller is not part of ends at the iteration cap.
        assert!(!posix_locks_deadlock(
            &lk(1, true, 0, 0),
            &lk(2, true, 0, 0),
            waits(&[(2, 3), (3, 2)])
        ));
    }

    #[test]
    fn deadlock_not_checked_for_ofd_or_flock_requests() {
        let ofd = Lock {
            owner: Owner::File(1),
            ..lk(1, true, 0, 0)
        };
        let flock = Lock {
            family: Family::Flock,
            ..lk(1, true, 0, u64::MAX)
        };
        let rel = [(2, 1)];
        assert!(!posix_locks_deadlock(&ofd, &lk(2, true, 0, 0), waits(&rel)));
        assert!(!posix_locks_deadlock(
            &flock,
            &lk(2, true, 0, u64::MAX),
            waits(&rel)
        ));
    }

    #[test]
    fn deadlock_chain_is_followed_only_so_far() {
        // Owners 1..=n, each waiting for the next, the last for 1 (the caller), who would
        // sleep on 2's lock: `i++ > MAX_DEADLK_ITERATIONS` sees cycles of up to 12 owners.
        let cycle = |n: u32| {
            let edges: Vec<(u32, u32)> = (2..=n)
                .map(|o| (o, if o == n { 1 } else { o + 1 }))
                .collect();
            posix_locks_deadlock(&lk(1, true, 0, 0), &lk(2, true, 0, 0), waits(&edges))
        };
        assert!(cycle(2) && cycle(12));
        assert!(!cycle(13));
    }

    #[test]
    fn waiters_count_while_their_blocker_stands() {
        let held = lk(2, true, 0, 9);
        let mut locks = HashMap::new();
        locks.insert(7, vec![held]);
        let w = |id, owner, blocker| Waiter {
            id,
            owner: Owner::Process(owner),
            key: 7,
            blocker,
        };
        let blocked = [w(1, 1, held)];
        assert_eq!(
            what_owner_is_waiting_for(&locks, &blocked, Owner::Process(1)),
            Some(Owner::Process(2))
        );
        assert_eq!(
            what_owner_is_waiting_for(&locks, &blocked, Owner::Process(2)),
            None
        );
        // The lock went (or changed): its waiter is as good as woken.
        let gone = [w(1, 1, lk(2, true, 0, 4))];
        assert_eq!(
            what_owner_is_waiting_for(&locks, &gone, Owner::Process(1)),
            None
        );
        // Waiters on an OFD lock are not followed (`__locks_insert_block`).
        let ofd = Lock {
            owner: Owner::File(9),
            ..held
        };
        locks.insert(7, vec![ofd]);
        assert_eq!(
            what_owner_is_waiting_for(&locks, &[w(1, 1, ofd)], Owner::Process(1)),
            None
        );
    }

    #[test]
    fn conflicts_only_between_owners_and_with_a_writer() {
        let v = vec![lk(1, false, 0, 9)];
        assert!(LockTable::conflict(&v, &lk(2, false, 5, 5)).is_none());
        assert!(LockTable::conflict(&v, &lk(2, true, 5, 5)).is_some());
        assert!(LockTable::conflict(&v, &lk(1, true, 5, 5)).is_none());
        assert!(LockTable::conflict(&v, &lk(2, true, 10, 20)).is_none());
        let flock = Lock {
            family: Family::Flock,
            ..lk(2, true, 0, u64::MAX)
        };
        assert!(LockTable::conflict(&v, &flock).is_none());
    }
}
