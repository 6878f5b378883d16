//! File locks (Linux `fs/locks.c`): POSIX record locks (`fcntl` F_GETLK/F_SETLK/F_SETLKW), open
//! file description locks (F_OFD_*), and BSD `flock(2)` locks.
//!
//! Locks live in one table keyed by the inode ([`crate::mount::inode_key`]). A POSIX lock is
//! owned by a process and released when that process closes *any* descriptor of the file or
//! exits; an OFD or flock lock is owned by an open file description and released when its last
//! descriptor closes. POSIX/OFD locks and flock locks do not see each other (as on Linux).
//! Blocking requests sleep on one wait queue, woken whenever a lock is released, and are
//! interruptible by signals.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use um_kernel::task::{Task, lock};
use um_kernel::vfs::OpenFile;
use um_kernel::wait::{WaitError, WaitQueue, wait_event};
use um_uapi::{Errno, SysResult};

pub const F_RDLCK: i16 = 0;
pub const F_WRLCK: i16 = 1;
pub const F_UNLCK: i16 = 2;

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

/// All locks, by inode.
#[derive(Default)]
pub struct LockTable {
    locks: Mutex<HashMap<u64, Vec<Lock>>>,
    released: WaitQueue,
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
    let t = table();
    let try_set = || -> Option<SysResult<()>> {
        let mut locks = lock(&t.locks);
        let list = locks.entry(key).or_default();
        if unlock {
            LockTable::apply(list, want.owner, want.family, want.start, want.end, None);
            if list.is_empty() {
                locks.remove(&key);
            }
            drop(locks);
            t.released.wake_all();
            return Some(Ok(()));
        }
        if LockTable::conflict(list, &want).is_some() {
            return if wait { None } else { Some(Err(Errno::EAGAIN)) };
        }
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

/// What a close of `f` by process `pid` releases: the process's POSIX locks on the file, and,
/// when this was the description's last descriptor (`last`), its OFD and flock locks.
pub fn on_close(f: &Arc<OpenFile>, pid: u32, last: bool) {
    if let Some(key) = file_key(f) {
        release(key, Owner::Process(pid));
        if last {
            release(key, description_owner(f));
        }
    }
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
