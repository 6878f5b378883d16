//! Fast user-space mutexes (Linux `kernel/futex/{core,waitwake,requeue,syscalls}.c`):
//! `futex`, `futex_waitv`, robust lists (`set_robust_list`, `get_robust_list`) and the exit-time
//! futex work (`mm_release`: the robust-list walk and `CLONE_CHILD_CLEARTID`).
//!
//! Key types: [`Key`] names a futex the way Linux's `union futex_key` does (private: address
//! space and address; shared in a private mapping: the same but never equal to a private key;
//! shared in a `MAP_SHARED` mapping: the physical frame and offset, so every process mapping
//! the object finds it). Waiters are [`Waiter`]s in a fixed table of hash buckets, each a FIFO
//! under its own mutex. A waiter sleeps on its task's [`crate::wait::Waker`], so a signal
//! interrupts it.
//!
//! Lock order: a bucket, then (inside) the address space lock (the value check reads guest
//! memory under the bucket lock, as Linux's `futex_get_value_locked`), then a waiter's key.
//! Nothing here takes a bucket lock while holding the address space lock.
//!
//! The PI operations (`FUTEX_LOCK_PI`, ...) are `ENOSYS`, so libcs fall back (musl does).
//! Neighbours: [`crate::wait`] (sleeping), `um_mm::Mm` (guest words, `cmpxchg_u32`),
//! [`super::time`] (timeouts); the exit path calls [`mm_release`].

use crate::sysarg::args;
use crate::syscall::{SyscallCtx, SyscallTable, lock_mm};
use crate::task::{Task, lock};
use crate::wait::{WaitError, Waker, wait_event};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
use std::time::Instant;
use um_mm::Mm;
use um_uapi::abi::Pod;
use um_uapi::abi::futex::*;
use um_uapi::abi::time::Timespec;
use um_uapi::{Errno, SysResult};

use super::time::{duration, instant_after, instant_at, read_timespec_valid};

/// What identifies a futex (Linux `union futex_key`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    /// `FUTEX_PRIVATE_FLAG`: the address space (its `Arc` pointer) and the address.
    Private { mm: usize, addr: u64 },
    /// A shared futex in a private mapping: keyed by address space and address as well, but
    /// Linux sets `FUT_OFF_MMSHARED` in the key, so it never matches a private waiter.
    MmShared { mm: usize, addr: u64 },
    /// A shared futex in a `MAP_SHARED` mapping: the physical frame and offset (Linux: the
    /// inode or shmem object and page index), the same for every mapper.
    Frame { frame: u32, offset: u64 },
}

/// One sleeping `FUTEX_WAIT` (Linux `struct futex_q`).
struct Waiter {
    /// Changed by requeue, under the bucket locks of both the old and the new key.
    key: Mutex<Key>,
    bitset: u32,
    /// Set (under the bucket lock) by whoever removed it from its queue to wake it.
    woken: AtomicBool,
    waker: Arc<Waker>,
}

impl Waiter {
    fn key(&self) -> Key {
        *lock(&self.key)
    }
}

type Queue = Vec<Arc<Waiter>>;

const BUCKETS: usize = 256;

static TABLE: LazyLock<Vec<Mutex<Queue>>> =
    LazyLock::new(|| (0..BUCKETS).map(|_| Mutex::new(Vec::new())).collect());

fn bucket_of(k: &Key) -> usize {
    let mut h = DefaultHasher::new();
    k.hash(&mut h);
    (h.finish() % BUCKETS as u64) as usize
}

fn bucket(k: &Key) -> MutexGuard<'static, Queue> {
    lock(&TABLE[bucket_of(k)])
}

/// Locks the buckets of two keys in a fixed order (Linux `double_lock_hb`); the second guard
/// is `None` when both keys hash to the same bucket.
fn lock_two(
    k1: &Key,
    k2: &Key,
) -> (
    MutexGuard<'static, Queue>,
    Option<MutexGuard<'static, Queue>>,
) {
    let (b1, b2) = (bucket_of(k1), bucket_of(k2));
    if b1 == b2 {
        (lock(&TABLE[b1]), None)
    } else if b1 < b2 {
        let g1 = lock(&TABLE[b1]);
        (g1, Some(lock(&TABLE[b2])))
    } else {
        let g2 = lock(&TABLE[b2]);
        (lock(&TABLE[b1]), Some(g2))
    }
}

fn mark_woken(w: &Waiter) {
    w.woken.store(true, Ordering::Release);
    w.waker.wake();
}

/// Wakes waiters of `key` whose bitset meets `bitset`, in FIFO order. Like Linux
/// (`if (++ret >= nr_wake) break;`) at least one is woken even when `nr` is 0 or negative.
fn wake_in(q: &mut Queue, key: Key, nr: i32, bitset: u32) -> u64 {
    let limit = if nr <= 0 { 1 } else { nr as u64 };
    let mut n = 0;
    let mut i = 0;
    while i < q.len() {
        if q[i].key() == key && q[i].bitset & bitset != 0 {
            let w = q.remove(i);
            mark_woken(&w);
            n += 1;
            if n >= limit {
                break;
            }
        } else {
            i += 1;
        }
    }
    n
}

/// Removes `w` from its queue; false if a waker took it first (it was woken).
fn unqueue(w: &Arc<Waiter>) -> bool {
    loop {
        let k = w.key();
        let mut q = bucket(&k);
        if w.key() != k {
            continue; // requeued meanwhile
        }
        return match q.iter().position(|x| Arc::ptr_eq(x, w)) {
            Some(i) => {
                q.remove(i);
                true
            }
            None => false,
        };
    }
}

/// The key of the futex at `uaddr` (Linux `get_futex_key`): `EINVAL` if misaligned, `EFAULT`
/// if outside user space or (shared futexes) not mapped.
fn get_key(mm: &Arc<Mutex<Mm>>, uaddr: u64, private: bool) -> SysResult<Key> {
    if uaddr % 4 != 0 {
        return Err(Errno::EINVAL);
    }
    let id = Arc::as_ptr(mm) as usize;
    let mut m = lock_mm(mm);
    if uaddr
        .checked_add(4)
        .is_none_or(|end| end > m.layout().task_size)
    {
        return Err(Errno::EFAULT);
    }
    if private {
        return Ok(Key::Private {
            mm: id,
            addr: uaddr,
        });
    }
    let vma = m.find_vma(uaddr).ok_or(Errno::EFAULT)?;
    // Fault the page in (Linux pins it with get_user_pages_fast).
    let mut b = [0u8; 4];
    m.read_bytes(uaddr, &mut b)?;
    if !vma.is_shared() {
        // Linux keys an anonymous page by mm and address; a private file page that was never
        // written would be keyed by inode, which only matters for futexes in read-only private
        // file mappings shared between processes.
        return Ok(Key::MmShared {
            mm: id,
            addr: uaddr,
        });
    }
    let g = m.granule();
    let pte = m.pte(g.align_down(uaddr)).ok_or(Errno::EFAULT)?;
    Ok(Key::Frame {
        frame: pte.frame.0,
        offset: g.offset_in_page(uaddr),
    })
}

fn read_u32(mm: &Arc<Mutex<Mm>>, addr: u64) -> SysResult<u32> {
    let mut b = [0u8; 4];
    lock_mm(mm).read_bytes(addr, &mut b)?;
    Ok(u32::from_le_bytes(b))
}

/// How a futex wait was bounded.
#[derive(Clone, Copy)]
struct Timeout {
    /// `None`: no timeout, or one too far away to represent.
    deadline: Option<Instant>,
    /// Whether the caller gave a timeout (decides the restart errno).
    given: bool,
}

const NO_TIMEOUT: Timeout = Timeout {
    deadline: None,
    given: false,
};

/// FUTEX_WAIT / FUTEX_WAIT_BITSET (kernel/futex/waitwake.c `futex_wait`).
fn futex_wait(
    task: &Task,
    mm: &Arc<Mutex<Mm>>,
    uaddr: u64,
    private: bool,
    val: u32,
    to: Timeout,
    bitset: u32,
) -> SysResult {
    if bitset == 0 {
        return Err(Errno::EINVAL);
    }
    let key = get_key(mm, uaddr, private)?;
    let w = Arc::new(Waiter {
        key: Mutex::new(key),
        bitset,
        woken: AtomicBool::new(false),
        waker: task.waker.clone(),
    });
    {
        let mut q = bucket(&key);
        if read_u32(mm, uaddr)? != val {
            return Err(Errno::EAGAIN);
        }
        q.push(w.clone());
    }
    match wait_event(task, &[], to.deadline, || {
        w.woken.load(Ordering::Acquire).then_some(())
    }) {
        Ok(()) => Ok(0),
        Err(e) => {
            if !unqueue(&w) {
                return Ok(0); // woken after all: success, whatever else happened
            }
            Err(match e {
                WaitError::TimedOut => Errno::ETIMEDOUT,
                // Linux: -ERESTARTSYS without a timeout; with one, a restart block that resumes
                // with the same absolute deadline. ERESTARTNOHAND restarts the call itself when
                // no handler runs (exact for absolute timeouts; a relative FUTEX_WAIT timeout
                // starts again) and gives EINTR to a handler, as the restart block does.
                WaitError::Interrupted if to.given => Errno::ERESTARTNOHAND,
                WaitError::Interrupted => Errno::ERESTARTSYS,
            })
        }
    }
}

/// FUTEX_WAKE / FUTEX_WAKE_BITSET (`futex_wake`).
fn futex_wake(mm: &Arc<Mutex<Mm>>, uaddr: u64, private: bool, nr: i32, bitset: u32) -> SysResult {
    if bitset == 0 {
        return Err(Errno::EINVAL);
    }
    let key = get_key(mm, uaddr, private)?;
    Ok(wake_in(&mut bucket(&key), key, nr, bitset))
}

/// FUTEX_REQUEUE / FUTEX_CMP_REQUEUE (kernel/futex/requeue.c `futex_requeue`, non-PI): wakes
/// up to `nr_wake` waiters of `uaddr1` and moves up to `nr_requeue` more to `uaddr2`; returns
/// how many were woken plus requeued. `cmpval`: `EAGAIN` unless `*uaddr1` equals it.
#[allow(clippy::too_many_arguments)]
fn futex_requeue(
    mm: &Arc<Mutex<Mm>>,
    uaddr1: u64,
    uaddr2: u64,
    private: bool,
    nr_wake: i32,
    nr_requeue: i32,
    cmpval: Option<u32>,
) -> SysResult {
    if nr_wake < 0 || nr_requeue < 0 {
        return Err(Errno::EINVAL);
    }
    let key1 = get_key(mm, uaddr1, private)?;
    let key2 = get_key(mm, uaddr2, private)?;
    let (mut q1, mut q2) = lock_two(&key1, &key2);
    if let Some(v) = cmpval
        && read_u32(mm, uaddr1)? != v
    {
        return Err(Errno::EAGAIN);
    }
    let (nw, nrq) = (i64::from(nr_wake), i64::from(nr_requeue));
    let mut count: i64 = 0;
    let mut moved = Vec::new();
    let mut i = 0;
    while i < q1.len() {
        if count - nw >= nrq {
            break;
        }
        if q1[i].key() != key1 {
            i += 1;
            continue;
        }
        count += 1;
        if count <= nw {
            let w = q1.remove(i);
            mark_woken(&w);
            continue;
        }
        *lock(&q1[i].key) = key2;
        if q2.is_some() {
            moved.push(q1.remove(i));
        } else {
            i += 1;
        }
    }
    if let Some(q2) = q2.as_mut() {
        q2.extend(moved);
    }
    Ok(count as u64)
}

/// A decoded `FUTEX_WAKE_OP` operation (`futex_atomic_op_inuser`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct WakeOp {
    op: u32,
    cmp: u32,
    oparg: i32,
    cmparg: i32,
}

/// Sign-extends the low 12 bits.
fn sign_extend12(v: u32) -> i32 {
    ((v << 20) as i32) >> 20
}

impl WakeOp {
    /// Splits `val3`: op in bits 28..30 (bit 31 = `FUTEX_OP_OPARG_SHIFT`), comparison in bits
    /// 24..27, 12-bit signed oparg and cmparg. A shift outside 0..=31 is masked, as Linux does
    /// (which also logs "fix this program").
    fn decode(encoded: u32) -> WakeOp {
        let op = (encoded & 0x7000_0000) >> 28;
        let cmp = (encoded & 0x0f00_0000) >> 24;
        let mut oparg = sign_extend12((encoded & 0x00ff_f000) >> 12);
        let cmparg = sign_extend12(encoded & 0xfff);
        if encoded & (FUTEX_OP_OPARG_SHIFT << 28) != 0 {
            if !(0..=31).contains(&oparg) {
                log::debug!("futex_wake_op: shift by {oparg} masked to {}", oparg & 31);
                oparg &= 31;
            }
            oparg = (1u32 << oparg) as i32;
        }
        WakeOp {
            op,
            cmp,
            oparg,
            cmparg,
        }
    }

    /// The new word for `old`; `None` (ENOSYS) for an unknown operation.
    fn apply(&self, old: u32) -> Option<u32> {
        let a = self.oparg as u32;
        Some(match self.op {
            FUTEX_OP_SET => a,
            FUTEX_OP_ADD => old.wrapping_add(a),
            FUTEX_OP_OR => old | a,
            FUTEX_OP_ANDN => old & !a,
            FUTEX_OP_XOR => old ^ a,
            _ => return None,
        })
    }

    /// The (signed) comparison of the old word; `None` (ENOSYS) for an unknown one.
    fn compare(&self, old: u32) -> Option<bool> {
        let (o, c) = (old as i32, self.cmparg);
        Some(match self.cmp {
            FUTEX_OP_CMP_EQ => o == c,
            FUTEX_OP_CMP_NE => o != c,
            FUTEX_OP_CMP_LT => o < c,
            FUTEX_OP_CMP_LE => o <= c,
            FUTEX_OP_CMP_GT => o > c,
            FUTEX_OP_CMP_GE => o >= c,
            _ => return None,
        })
    }
}

/// Applies `op` to the word at `uaddr` atomically (a compare-and-exchange loop, as the arch
/// code does for OR/ANDN/XOR) and returns the comparison of the old value.
fn atomic_op(mm: &Arc<Mutex<Mm>>, uaddr: u64, op: &WakeOp) -> SysResult<bool> {
    let mut m = lock_mm(mm);
    let mut b = [0u8; 4];
    m.read_bytes(uaddr, &mut b)?;
    let mut old = u32::from_le_bytes(b);
    loop {
        let new = op.apply(old).ok_or(Errno::ENOSYS)?;
        let found = m.cmpxchg_u32(uaddr, old, new)?;
        if found == old {
            break;
        }
        old = found;
    }
    op.compare(old).ok_or(Errno::ENOSYS)
}

/// FUTEX_WAKE_OP (`futex_wake_op`).
fn futex_wake_op(
    mm: &Arc<Mutex<Mm>>,
    uaddr1: u64,
    uaddr2: u64,
    private: bool,
    nr_wake: i32,
    nr_wake2: i32,
    encoded: u32,
) -> SysResult {
    let key1 = get_key(mm, uaddr1, private)?;
    let key2 = get_key(mm, uaddr2, private)?;
    let (mut q1, mut q2) = lock_two(&key1, &key2);
    let op_ret = atomic_op(mm, uaddr2, &WakeOp::decode(encoded))?;
    let mut n = wake_in(&mut q1, key1, nr_wake, FUTEX_BITSET_MATCH_ANY);
    if op_ret {
        let q = match q2.as_mut() {
            Some(q2) => q2,
            None => &mut q1,
        };
        n += wake_in(q, key2, nr_wake2, FUTEX_BITSET_MATCH_ANY);
    }
    Ok(n)
}

/// The `futex` commands that take a timeout (`futex_cmd_has_timeout`).
fn has_timeout(cmd: u32) -> bool {
    matches!(
        cmd,
        FUTEX_WAIT | FUTEX_WAIT_BITSET | FUTEX_LOCK_PI | FUTEX_LOCK_PI2 | FUTEX_WAIT_REQUEUE_PI
    )
}

/// futex(uaddr, op, val, timeout/val2, uaddr2, val3) (kernel/futex/syscalls.c).
fn futex(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (uaddr, op, val, utime, uaddr2, val3): (u64, u32, u32, u64, u64, u64) = args(&a)?;
    let val3 = val3 as u32;
    let cmd = op & FUTEX_CMD_MASK;
    let private = op & FUTEX_PRIVATE_FLAG != 0;
    let clock_rt = op & FUTEX_CLOCK_REALTIME != 0;
    if clock_rt
        && !matches!(
            cmd,
            FUTEX_WAIT_BITSET | FUTEX_WAIT_REQUEUE_PI | FUTEX_LOCK_PI2
        )
    {
        return Err(Errno::ENOSYS);
    }
    let mut to = NO_TIMEOUT;
    if utime != 0 && has_timeout(cmd) {
        let ts: Timespec = read_timespec_valid(c, utime)?;
        to.given = true;
        to.deadline = if cmd == FUTEX_WAIT {
            // Relative, measured on CLOCK_MONOTONIC.
            instant_after(duration(ts))
        } else if clock_rt {
            instant_at(libc::CLOCK_REALTIME, ts)
        } else {
            instant_at(libc::CLOCK_MONOTONIC, ts)
        };
    }
    // For the requeue and wake-op commands the timeout argument is a second count.
    let val2 = utime as u32 as i32;
    let mm = c.mm();
    match cmd {
        FUTEX_WAIT => futex_wait(c.task, &mm, uaddr, private, val, to, FUTEX_BITSET_MATCH_ANY),
        FUTEX_WAIT_BITSET => futex_wait(c.task, &mm, uaddr, private, val, to, val3),
        FUTEX_WAKE => futex_wake(&mm, uaddr, private, val as i32, FUTEX_BITSET_MATCH_ANY),
        FUTEX_WAKE_BITSET => futex_wake(&mm, uaddr, private, val as i32, val3),
        FUTEX_REQUEUE => futex_requeue(&mm, uaddr, uaddr2, private, val as i32, val2, None),
        FUTEX_CMP_REQUEUE => {
            futex_requeue(&mm, uaddr, uaddr2, private, val as i32, val2, Some(val3))
        }
        FUTEX_WAKE_OP => futex_wake_op(&mm, uaddr, uaddr2, private, val as i32, val2, val3),
        // Priority-inheritance futexes are not implemented: ENOSYS makes libcs fall back.
        _ => Err(Errno::ENOSYS),
    }
}

/// `struct futex_waitv`: 24 bytes.
const WAITV_SIZE: usize = 24;
/// `FUTEX2_SIZE_MASK`.
const FUTEX2_SIZE_MASK: u32 = 3;
/// `FUTEX2_PRIVATE` (= `FUTEX_PRIVATE_FLAG`).
const FUTEX2_PRIVATE: u32 = FUTEX_PRIVATE_FLAG;

/// futex_waitv(waiters, nr_futexes, flags, timeout, clockid) (kernel/futex/syscalls.c,
/// waitwake.c `futex_wait_multiple`): sleeps until any of the futexes is woken; returns its
/// index. The timeout is absolute on `clockid` (REALTIME or MONOTONIC).
fn futex_waitv(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (uwaiters, nr, flags, utime, clockid): (u64, u32, u32, u64, u64) = args(&a)?;
    if flags != 0 || nr == 0 || nr as usize > FUTEX_WAITV_MAX || uwaiters == 0 {
        return Err(Errno::EINVAL);
    }
    let mut to = NO_TIMEOUT;
    if utime != 0 {
        let clk = match clockid as i32 {
            0 => libc::CLOCK_REALTIME,
            1 => libc::CLOCK_MONOTONIC,
            _ => return Err(Errno::EINVAL),
        };
        let ts = read_timespec_valid(c, utime)?;
        to = Timeout {
            deadline: instant_at(clk, ts),
            given: true,
        };
    }
    let raw = c.read_bytes(uwaiters, WAITV_SIZE * nr as usize)?;
    let mm = c.mm();
    let mut vs = Vec::with_capacity(nr as usize);
    for e in raw.chunks_exact(WAITV_SIZE) {
        let val = u64::from_le_bytes(e[0..8].try_into().map_err(|_| Errno::EFAULT)?);
        let uaddr = u64::from_le_bytes(e[8..16].try_into().map_err(|_| Errno::EFAULT)?);
        let fl = u32::from_le_bytes(e[16..20].try_into().map_err(|_| Errno::EFAULT)?);
        let reserved = u32::from_le_bytes(e[20..24].try_into().map_err(|_| Errno::EFAULT)?);
        if fl & !(FUTEX2_SIZE_MASK | FUTEX2_PRIVATE) != 0
            || reserved != 0
            || fl & FUTEX2_SIZE_MASK != FUTEX_32
            || val >> 32 != 0
        {
            return Err(Errno::EINVAL);
        }
        vs.push((uaddr, val as u32, fl & FUTEX2_PRIVATE != 0));
    }
    let mut keys = Vec::with_capacity(vs.len());
    for &(uaddr, _, private) in &vs {
        keys.push(get_key(&mm, uaddr, private)?);
    }
    let waiters: Vec<Arc<Waiter>> = keys
        .iter()
        .map(|&k| {
            Arc::new(Waiter {
                key: Mutex::new(k),
                bitset: FUTEX_BITSET_MATCH_ANY,
                woken: AtomicBool::new(false),
                waker: c.task.waker.clone(),
            })
        })
        .collect();
    // Queue one at a time, checking each value under its bucket lock.
    let first_woken = |upto: usize| -> Option<usize> {
        let mut found = None;
        for (i, w) in waiters[..upto].iter().enumerate() {
            if !unqueue(w) && found.is_none() {
                found = Some(i);
            }
        }
        found
    };
    for (i, (&(uaddr, val, _), w)) in vs.iter().zip(&waiters).enumerate() {
        let mut q = bucket(&keys[i]);
        let cur = match read_u32(&mm, uaddr) {
            Ok(v) => v,
            Err(e) => {
                drop(q);
                return first_woken(i).map(|j| j as u64).ok_or(e);
            }
        };
        if cur != val {
            drop(q);
            return first_woken(i).map(|j| j as u64).ok_or(Errno::EWOULDBLOCK);
        }
        q.push(w.clone());
    }
    let r = wait_event(c.task, &[], to.deadline, || {
        waiters
            .iter()
            .any(|w| w.woken.load(Ordering::Acquire))
            .then_some(())
    });
    if let Some(i) = first_woken(waiters.len()) {
        return Ok(i as u64);
    }
    match r {
        Err(WaitError::TimedOut) => Err(Errno::ETIMEDOUT),
        // The timeout is absolute, so restarting is exact (Linux returns -ERESTARTSYS here).
        _ => Err(Errno::ERESTARTSYS),
    }
}

/// set_robust_list(head, len): `len` must be `sizeof(struct robust_list_head)`.
fn set_robust_list(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[1] != RobustListHead::SIZE as u64 {
        return Err(Errno::EINVAL);
    }
    *lock(&c.task.robust_list) = (a[0], a[1]);
    Ok(0)
}

/// get_robust_list(pid, head_ptr, len_ptr): the caller's (pid 0) or another thread's list
/// head; `ESRCH` if no such thread, `EPERM` unless the caller may ptrace-read it
/// (`PTRACE_MODE_READ_REALCREDS`: same thread group, matching real ids, or root).
fn get_robust_list(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let pid = a[0] as i32;
    let target = if pid == 0 {
        c.task.clone()
    } else if pid < 0 {
        return Err(Errno::ESRCH);
    } else {
        // A tid of the caller's pid namespace (crate::pidns).
        c.kernel
            .tasks
            .find_task_vpid(c.task, pid as u32)
            .ok_or(Errno::ESRCH)?
    };
    if !Arc::ptr_eq(&target.process, &c.task.process) {
        let me = *lock(&c.task.process.creds);
        let t = *lock(&target.process.creds);
        let ids_match = [t.uid, t.euid, t.suid].iter().all(|&u| u == me.uid)
            && [t.gid, t.egid, t.sgid].iter().all(|&g| g == me.gid);
        if !ids_match && me.euid != 0 {
            return Err(Errno::EPERM);
        }
    }
    let head = lock(&target.robust_list).0;
    c.write_u64(a[2], RobustListHead::SIZE as u64)?;
    c.write_u64(a[1], head)?;
    Ok(0)
}

/// What the robust-list walk needs from guest memory (a trait so tests can walk a fake one).
trait RobustMem {
    fn read_u64(&mut self, addr: u64) -> Option<u64>;
    fn read_u32(&mut self, addr: u64) -> Option<u32>;
    /// Atomic compare-and-exchange; the value found.
    fn cmpxchg_u32(&mut self, addr: u64, old: u32, new: u32) -> Option<u32>;
}

struct GuestMem<'a>(&'a Arc<Mutex<Mm>>);

impl RobustMem for GuestMem<'_> {
    fn read_u64(&mut self, addr: u64) -> Option<u64> {
        let mut b = [0u8; 8];
        lock_mm(self.0).read_bytes(addr, &mut b).ok()?;
        Some(u64::from_le_bytes(b))
    }
    fn read_u32(&mut self, addr: u64) -> Option<u32> {
        read_u32(self.0, addr).ok()
    }
    fn cmpxchg_u32(&mut self, addr: u64, old: u32, new: u32) -> Option<u32> {
        lock_mm(self.0).cmpxchg_u32(addr, old, new).ok()
    }
}

/// Linux `handle_futex_death` for the word at `uaddr` of a thread `tid` that is exiting:
/// if the thread owns it, set `FUTEX_OWNER_DIED` (keeping `FUTEX_WAITERS`, clearing the owner)
/// and ask for one waiter to be woken if there were waiters. `Err` stops the walk.
fn handle_futex_death(
    mem: &mut impl RobustMem,
    uaddr: u64,
    tid: u32,
    pi: bool,
    pending_op: bool,
    wake: &mut Vec<u64>,
) -> Result<(), ()> {
    if uaddr % 4 != 0 {
        return Err(());
    }
    // Linux retries for as long as the word keeps changing; a guest could keep that up
    // forever, so give up after many attempts.
    for _ in 0..10_000 {
        let uval = mem.read_u32(uaddr).ok_or(())?;
        let owner = uval & FUTEX_TID_MASK;
        if pending_op && !pi && owner == 0 {
            // The unlock released the word but died before its FUTEX_WAKE.
            wake.push(uaddr);
            return Ok(());
        }
        if owner != tid {
            return Ok(());
        }
        let mval = (uval & FUTEX_WAITERS) | FUTEX_OWNER_DIED;
        let nval = mem.cmpxchg_u32(uaddr, uval, mval).ok_or(())?;
        if nval != uval {
            continue;
        }
        if !pi && uval & FUTEX_WAITERS != 0 {
            wake.push(uaddr);
        }
        return Ok(());
    }
    Ok(())
}

/// Linux `exit_robust_list`: walks the list at `head` (at most `ROBUST_LIST_LIMIT` entries,
/// stopping at the first unreadable one), handles `list_op_pending` last, and returns the
/// futex words to wake (one waiter each, shared key).
fn walk_robust_list(mem: &mut impl RobustMem, head: u64, tid: u32) -> Vec<u64> {
    // Linux `fetch_robust_entry`: a pointer whose bit 0 marks a PI futex.
    fn fetch(mem: &mut impl RobustMem, a: u64) -> Option<(u64, bool)> {
        mem.read_u64(a).map(|v| (v & !1, v & 1 != 0))
    }
    let mut wake = Vec::new();
    let Some((mut entry, mut pi)) = fetch(mem, head) else {
        return wake;
    };
    let Some(futex_offset) = mem.read_u64(head.wrapping_add(8)) else {
        return wake;
    };
    let Some((pending, pip)) = fetch(mem, head.wrapping_add(16)) else {
        return wake;
    };
    let mut limit = ROBUST_LIST_LIMIT;
    while entry != head {
        let next = fetch(mem, entry);
        if entry != pending
            && handle_futex_death(
                mem,
                entry.wrapping_add(futex_offset),
                tid,
                pi,
                false,
                &mut wake,
            )
            .is_err()
        {
            return wake;
        }
        let Some((n, npi)) = next else {
            return wake;
        };
        entry = n;
        pi = npi;
        limit -= 1;
        if limit == 0 {
            break;
        }
    }
    if pending != 0 {
        let _ = handle_futex_death(
            mem,
            pending.wrapping_add(futex_offset),
            tid,
            pip,
            true,
            &mut wake,
        );
    }
    wake
}

/// Wakes one waiter of the shared futex at `uaddr` (what the exit path does).
fn wake_shared_one(mm: &Arc<Mutex<Mm>>, uaddr: u64) {
    if let Ok(key) = get_key(mm, uaddr, false) {
        wake_in(&mut bucket(&key), key, 1, FUTEX_BITSET_MATCH_ANY);
    }
}

/// Thread exit or exec: processes the task's robust futex list (Linux
/// `futex_exit_release`/`futex_exec_release` → `exit_robust_list`) and forgets it.
pub fn exit_robust_list(task: &Task) {
    let head = std::mem::take(&mut *lock(&task.robust_list)).0;
    if head == 0 {
        return;
    }
    let mm = task.mm();
    // Lock words hold the owner's tid as the owner sees it (`task_pid_vnr`).
    let wake = walk_robust_list(&mut GuestMem(&mm), head, task.pids.own());
    for uaddr in wake {
        wake_shared_one(&mm, uaddr);
    }
}

/// Thread exit or exec: `CLONE_CHILD_CLEARTID` (Linux `mm_release`): if the address space has
/// other users, writes 0 to `clear_child_tid` and wakes one waiter there (a shared
/// FUTEX_WAKE, which is what `pthread_join` waits for). Errors are ignored, as in Linux.
pub fn wake_clear_child_tid(task: &Task) {
    let addr = std::mem::take(&mut *lock(&task.clear_child_tid));
    if addr == 0 {
        return;
    }
    let mm = task.mm();
    let other_threads = lock(&task.process.threads)
        .iter()
        .filter_map(std::sync::Weak::upgrade)
        .any(|t| t.tid != task.tid && !t.exited.load(Ordering::Acquire));
    // The process holds one reference and `mm` is another: more means another process (a
    // CLONE_VM child) shares it (approximates `mm_users > 1`).
    if !other_threads && Arc::strong_count(&mm) <= 2 {
        return;
    }
    if lock_mm(&mm).write_bytes(addr, &0u32.to_le_bytes()).is_ok() {
        wake_shared_one(&mm, addr);
    }
}

/// Everything futex-related a thread leaves behind, in Linux's order (`mm_release`): the
/// robust list, then `clear_child_tid`. Call at thread exit (once the thread is marked
/// exited and while `task.mm()` is still the address space it ran in) and at exec (before
/// the old address space is replaced).
pub fn mm_release(task: &Task) {
    exit_robust_list(task);
    wake_clear_child_tid(task);
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("futex", futex)
        .partial("the priority-inheritance operations (FUTEX_LOCK_PI, FUTEX_LOCK_PI2, FUTEX_TRYLOCK_PI, FUTEX_UNLOCK_PI, FUTEX_WAIT_REQUEUE_PI, FUTEX_CMP_REQUEUE_PI) are ENOSYS");
    t.register("futex_waitv", futex_waitv);
    t.register("set_robust_list", set_robust_list);
    t.register("get_robust_list", get_robust_list);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn wake_op_decoding() {
        // FUTEX_OP(FUTEX_OP_ADD, 1, FUTEX_OP_CMP_GT, 0): glibc's condvar encoding.
        let enc = (FUTEX_OP_ADD << 28) | (FUTEX_OP_CMP_GT << 24) | (1 << 12);
        let op = WakeOp::decode(enc);
        assert_eq!(
            op,
            WakeOp {
                op: FUTEX_OP_ADD,
                cmp: FUTEX_OP_CMP_GT,
                oparg: 1,
                cmparg: 0
            }
        );
        assert_eq!(op.apply(5), Some(6));
        assert_eq!(op.compare(5), Some(true));
        assert_eq!(op.compare(0), Some(false));
        assert_eq!(op.compare(u32::MAX), Some(false)); // -1 > 0 is false: signed

        // Negative 12-bit arguments.
        let op = WakeOp::decode((FUTEX_OP_SET << 28) | (FUTEX_OP_CMP_LT << 24) | 0xfff);
        assert_eq!(op.cmparg, -1);
        assert_eq!(op.compare(u32::MAX - 1), Some(true)); // -2 < -1
        let op = WakeOp::decode((FUTEX_OP_ADD << 28) | (0x800 << 12));
        assert_eq!(op.oparg, -2048);
        assert_eq!(op.apply(2048), Some(0));

        // Shifted operand, including a masked out-of-range shift.
        let op = WakeOp::decode(((FUTEX_OP_OR | FUTEX_OP_OPARG_SHIFT) << 28) | (4 << 12));
        assert_eq!(op.oparg, 16);
        assert_eq!(op.apply(1), Some(17));
        let op = WakeOp::decode(((FUTEX_OP_OR | FUTEX_OP_OPARG_SHIFT) << 28) | (33 << 12));
        assert_eq!(op.oparg, 2);
        let op = WakeOp::decode(((FUTEX_OP_SET | FUTEX_OP_OPARG_SHIFT) << 28) | (31 << 12));
        assert_eq!(op.apply(0), Some(0x8000_0000));

        // Every operation and comparison.
        let mk = |o: u32, c: u32, oparg: u32, cmparg: u32| {
            WakeOp::decode((o << 28) | (c << 24) | (oparg << 12) | cmparg)
        };
        assert_eq!(mk(FUTEX_OP_SET, 0, 7, 0).apply(3), Some(7));
        assert_eq!(mk(FUTEX_OP_ANDN, 0, 1, 0).apply(3), Some(2));
        assert_eq!(mk(FUTEX_OP_XOR, 0, 3, 0).apply(5), Some(6));
        assert_eq!(mk(5, 0, 0, 0).apply(0), None);
        assert_eq!(mk(7, 0, 0, 0).apply(0), None);
        for (c, old, want) in [
            (FUTEX_OP_CMP_EQ, 2, true),
            (FUTEX_OP_CMP_EQ, 3, false),
            (FUTEX_OP_CMP_NE, 3, true),
            (FUTEX_OP_CMP_LT, 1, true),
            (FUTEX_OP_CMP_LE, 2, true),
            (FUTEX_OP_CMP_LE, 3, false),
            (FUTEX_OP_CMP_GT, 3, true),
            (FUTEX_OP_CMP_GE, 2, true),
            (FUTEX_OP_CMP_GE, 1, false),
        ] {
            assert_eq!(mk(0, c, 0, 2).compare(old), Some(want), "cmp {c} old {old}");
        }
        assert_eq!(mk(0, 6, 0, 0).compare(0), None);
        assert_eq!(mk(0, 15, 0, 0).compare(0), None);
    }

    /// Little-endian bytes at arbitrary addresses; missing bytes are unmapped.
    #[derive(Default)]
    struct FakeMem(HashMap<u64, u8>);

    impl FakeMem {
        fn put(&mut self, addr: u64, bytes: &[u8]) {
            for (i, b) in bytes.iter().enumerate() {
                self.0.insert(addr + i as u64, *b);
            }
        }
        fn get(&self, addr: u64, n: usize) -> Option<Vec<u8>> {
            (0..n as u64)
                .map(|i| self.0.get(&(addr + i)).copied())
                .collect()
        }
        fn u32_at(&self, addr: u64) -> u32 {
            u32::from_le_bytes(self.get(addr, 4).unwrap().try_into().unwrap())
        }
    }

    impl RobustMem for FakeMem {
        fn read_u64(&mut self, addr: u64) -> Option<u64> {
            Some(u64::from_le_bytes(self.get(addr, 8)?.try_into().ok()?))
        }
        fn read_u32(&mut self, addr: u64) -> Option<u32> {
            Some(u32::from_le_bytes(self.get(addr, 4)?.try_into().ok()?))
        }
        fn cmpxchg_u32(&mut self, addr: u64, old: u32, new: u32) -> Option<u32> {
            let cur = self.read_u32(addr)?;
            if cur == old {
                self.put(addr, &new.to_le_bytes());
            }
            Some(cur)
        }
    }

    /// A musl-style robust mutex: `next` pointer at +0, futex word at +8 (offset 8... here the
    /// head's futex_offset).
    fn entry(m: &mut FakeMem, at: u64, next: u64, word: u32) {
        m.put(at, &next.to_le_bytes());
        m.put(at + 8, &word.to_le_bytes());
    }

    #[test]
    fn robust_list_walk() {
        const HEAD: u64 = 0x1000;
        const TID: u32 = 42;
        let mut m = FakeMem::default();
        // head -> A -> B -> C -> head; pending = D (not on the list).
        let (a, b, c, d): (u64, u64, u64, u64) = (0x2000, 0x3000, 0x4000, 0x5000);
        m.put(HEAD, &a.to_le_bytes());
        m.put(HEAD + 8, &8i64.to_le_bytes());
        m.put(HEAD + 16, &d.to_le_bytes());
        entry(&mut m, a, b, TID | FUTEX_WAITERS); // ours, contended
        entry(&mut m, b, c, TID); // ours, uncontended
        entry(&mut m, c, HEAD, 7); // someone else's
        entry(&mut m, d, 0, 0); // pending unlock finished: wake without touching
        let wake = walk_robust_list(&mut m, HEAD, TID);
        assert_eq!(m.u32_at(a + 8), FUTEX_OWNER_DIED | FUTEX_WAITERS);
        assert_eq!(m.u32_at(b + 8), FUTEX_OWNER_DIED);
        assert_eq!(m.u32_at(c + 8), 7);
        assert_eq!(m.u32_at(d + 8), 0);
        assert_eq!(wake, vec![a + 8, d + 8]);
    }

    #[test]
    fn robust_list_edge_cases() {
        const HEAD: u64 = 0x1000;
        // Empty list (points at itself), no pending.
        let mut m = FakeMem::default();
        m.put(HEAD, &HEAD.to_le_bytes());
        m.put(HEAD + 8, &8i64.to_le_bytes());
        m.put(HEAD + 16, &0u64.to_le_bytes());
        assert!(walk_robust_list(&mut m, HEAD, 1).is_empty());

        // Unreadable head: nothing happens.
        assert!(walk_robust_list(&mut FakeMem::default(), HEAD, 1).is_empty());

        // A circular list not through the head stops after ROBUST_LIST_LIMIT entries; the
        // pending entry (also on the list) is handled once, at the end; a PI entry is marked but
        // not woken by the walk; a negative futex offset works.
        let mut m = FakeMem::default();
        let (a, b) = (0x2010u64, 0x3010u64);
        m.put(HEAD, &(a | 1).to_le_bytes());
        m.put(HEAD + 8, &(-16i64).to_le_bytes());
        m.put(HEAD + 16, &b.to_le_bytes());
        m.put(a, &b.to_le_bytes());
        m.put(a - 16, &(5 | FUTEX_WAITERS).to_le_bytes());
        m.put(b, &a.to_le_bytes());
        m.put(b - 16, &(5 | FUTEX_WAITERS).to_le_bytes());
        let wake = walk_robust_list(&mut m, HEAD, 5);
        assert_eq!(m.u32_at(a - 16), FUTEX_OWNER_DIED | FUTEX_WAITERS);
        assert_eq!(m.u32_at(b - 16), FUTEX_OWNER_DIED | FUTEX_WAITERS);
        // b is not PI: woken once (as the pending entry); a is PI: not woken here.
        assert_eq!(wake, vec![b - 16]);

        // A misaligned futex word stops the walk.
        let mut m = FakeMem::default();
        m.put(HEAD, &0x2000u64.to_le_bytes());
        m.put(HEAD + 8, &1i64.to_le_bytes());
        m.put(HEAD + 16, &0u64.to_le_bytes());
        m.put(0x2000, &HEAD.to_le_bytes());
        assert!(walk_robust_list(&mut m, HEAD, 5).is_empty());
    }

    fn waiter(key: Key, bitset: u32) -> Arc<Waiter> {
        Arc::new(Waiter {
            key: Mutex::new(key),
            bitset,
            woken: AtomicBool::new(false),
            waker: Arc::new(Waker::default()),
        })
    }

    #[test]
    fn wake_order_bitsets_and_counts() {
        let k = Key::Private { mm: 1, addr: 0x10 };
        let other = Key::Private { mm: 2, addr: 0x10 };
        let ws: Vec<_> = [1u32, 2, 3, u32::MAX]
            .iter()
            .map(|&b| waiter(k, b))
            .collect();
        let mut q: Queue = ws.clone();
        q.insert(1, waiter(other, u32::MAX));
        // nr 0 still wakes one (Linux quirk), the first in FIFO order.
        assert_eq!(wake_in(&mut q, k, 0, FUTEX_BITSET_MATCH_ANY), 1);
        assert!(ws[0].woken.load(Ordering::Acquire));
        // Bitset 2 matches the waiters with bit 1: bitsets 2, 3 and MAX.
        assert_eq!(wake_in(&mut q, k, 10, 2), 3);
        assert_eq!(q.len(), 1);
        assert_eq!(q[0].key(), other);
        // A shared key never matches a private one.
        let shared = Key::MmShared { mm: 2, addr: 0x10 };
        assert_eq!(wake_in(&mut q, shared, 10, FUTEX_BITSET_MATCH_ANY), 0);
    }

    #[test]
    fn sign_extension() {
        assert_eq!(sign_extend12(0x7ff), 2047);
        assert_eq!(sign_extend12(0x800), -2048);
        assert_eq!(sign_extend12(0xfff), -1);
        assert_eq!(sign_extend12(0), 0);
    }
}
