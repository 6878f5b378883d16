//! System V semaphore sets (Linux ipc/sem.c; semget(2), semop(2), semctl(2)).
//!
//! A set is a vector of [`Sem`] values behind the one table mutex. `semop` applies its whole
//! operation list atomically or not at all ([`try_semop`], Linux `perform_atomic_semop`): a
//! list that would block either fails (`IPC_NOWAIT`: `EAGAIN`) or sleeps on the set's wait queue
//! and tries again whenever the set changes; the sleeper records the operation it blocked on,
//! which is what `GETNCNT`/`GETZCNT` count (`count_semcnt`). Removing the set wakes the sleepers
//! with `EIDRM`, a signal ends the sleep with `EINTR` (semop is never restarted), a timeout
//! with `EAGAIN`.
//!
//! `SEM_UNDO` adjustments (`struct sem_undo`) are kept per process (thread group) and set, and
//! applied by [`exit_process`] at exit (`exit_sem`: each value moved by its adjustment and
//! clamped to `0..=SEMVMX`); `SETVAL`/`SETALL` clear them, `IPC_RMID` drops them. A fork child
//! starts with none (no `CLONE_SYSVSEM` sharing between processes here), exec keeps them.

use super::{Caller, Ids, check_perms, limits, may_ctl, now};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use um_kernel::wait::WaitQueue;
use um_uapi::abi::ipc::{IPC_NOWAIT, Ipc64Perm, SEM_UNDO, Sembuf, Seminfo};
use um_uapi::{Errno, SysResult};

/// `SEMMSL`: most semaphores in a set.
pub const SEMMSL: i32 = 32000;
/// `SEMMNI`: most sets.
pub const SEMMNI: i32 = 32000;
/// `SEMMNS`: most semaphores in all sets.
pub const SEMMNS: i32 = SEMMNI * SEMMSL;
/// `SEMOPM`: most operations in one semop.
pub const SEMOPM: i32 = 500;
/// `SEMVMX`: the largest semaphore value.
pub const SEMVMX: i32 = 32767;
/// `SEMAEM`: the largest adjustment.
pub const SEMAEM: i32 = SEMVMX;
/// `SEMUSZ`: `sizeof(struct sem_undo)` as IPC_INFO reports it.
const SEMUSZ: i32 = 20;

/// One semaphore (`struct sem`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sem {
    /// `semval`.
    pub val: i32,
    /// `sempid`: the last process to operate on it.
    pub pid: i32,
}

/// One set (`struct sem_array`).
pub struct SemSet {
    pub sems: Vec<Sem>,
    pub otime: i64,
    pub ctime: i64,
    /// Sleepers wait here; woken on every change and at removal.
    pub queue: Arc<WaitQueue>,
    /// Each sleeper's blocking operation (`q->blocking`), by sleeper token.
    pending: HashMap<u64, (u16, i16)>,
}

/// Sets, the semaphore count, and the undo lists.
#[derive(Default)]
pub struct SemNs {
    pub ids: Ids<SemSet>,
    /// `used_sems`.
    used: i64,
    /// Per process (tgid), per set id: the adjustments.
    undo: HashMap<i32, BTreeMap<i32, Vec<i32>>>,
}

/// The semaphore table of the caller's IPC namespace ([`um_kernel::ipcns`]).
pub fn table() -> Arc<Mutex<SemNs>> {
    table_of(&um_kernel::ipcns::current())
}

/// The semaphore table of IPC namespace `ns` (its objects go when the namespace does).
pub fn table_of(ns: &um_kernel::ipcns::IpcNs) -> Arc<Mutex<SemNs>> {
    ns.generic::<Mutex<SemNs>>()
}

/// Locks a semaphore table.
pub fn lock_ns(t: &Mutex<SemNs>) -> MutexGuard<'_, SemNs> {
    t.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a [`try_semop`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every operation was applied.
    Done,
    /// Nothing was applied: this operation (`sem_num`, `sem_op`) would block.
    Blocked(u16, i16),
}

/// `perform_atomic_semop`: applies `sops` in order to `sems` (and the `SEM_UNDO` ones to
/// `adj`), all or nothing. A result below zero, or a wait-for-zero on a non-zero value, blocks
/// (`EAGAIN` if that operation has `IPC_NOWAIT`); a value above `SEMVMX` or an adjustment
/// outside `-SEMAEM-1..=SEMAEM` is `ERANGE`. Every semaphore operated on gets `pid`. The caller
/// checked every `sem_num` against the set's size.
pub fn try_semop(
    sems: &mut [Sem],
    adj: &mut [i32],
    sops: &[Sembuf],
    pid: i32,
) -> SysResult<Outcome> {
    let mut vals: Vec<i32> = sems.iter().map(|s| s.val).collect();
    let mut new_adj = adj.to_vec();
    for sop in sops {
        let n = usize::from(sop.sem_num);
        let op = i32::from(sop.sem_op);
        let v = vals[n];
        if (op == 0 && v != 0) || v + op < 0 {
            if sop.sem_flg as u16 as u32 & IPC_NOWAIT != 0 {
                return Err(Errno::EAGAIN);
            }
            return Ok(Outcome::Blocked(sop.sem_num, sop.sem_op));
        }
        let r = v + op;
        if r > SEMVMX {
            return Err(Errno::ERANGE);
        }
        if sop.sem_flg & SEM_UNDO != 0 {
            let Some(a) = new_adj.get_mut(n) else {
                return Err(Errno::EINVAL);
            };
            let u = *a - op;
            if !(-SEMAEM - 1..=SEMAEM).contains(&u) {
                return Err(Errno::ERANGE);
            }
            *a = u;
        }
        vals[n] = r;
    }
    for sop in sops {
        let n = usize::from(sop.sem_num);
        sems[n].val = vals[n];
        sems[n].pid = pid;
    }
    adj.copy_from_slice(&new_adj);
    Ok(Outcome::Done)
}

/// `exit_sem` for one set: each value moved by its adjustment, clamped to `0..=SEMVMX`.
pub fn apply_undo(sems: &mut [Sem], adj: &[i32], pid: i32) {
    for (s, &a) in sems.iter_mut().zip(adj) {
        if a != 0 {
            s.val = (s.val + a).clamp(0, SEMVMX);
            s.pid = pid;
        }
    }
}

/// A fresh sleeper token.
pub fn token() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The checks of semop that need the set (`do_semtimedop`): the set (`EINVAL`), the largest
/// `sem_num` (`EFBIG`), the permission (`EACCES`).
pub struct SemopArgs<'a> {
    pub id: i32,
    pub sops: &'a [Sembuf],
    /// Any operation that changes a value (asks for write permission).
    pub alter: bool,
    pub undo: bool,
    pub max: u16,
}

impl SemNs {
    /// semget (`newary`, `sem_more_checks`).
    pub fn get(&mut self, c: &Caller, key: i32, nsems: i32, flg: u32) -> SysResult<i32> {
        let l = limits();
        if nsems < 0 || nsems > l.semmsl() {
            return Err(Errno::EINVAL);
        }
        let used = self.used;
        let mut created = false;
        let id = self.ids.get_or_create(
            c,
            key,
            flg,
            l.semmni().max(0) as u32,
            || {
                if nsems == 0 {
                    return Err(Errno::EINVAL);
                }
                if used + i64::from(nsems) > i64::from(l.semmns()) {
                    return Err(Errno::ENOSPC);
                }
                created = true;
                Ok(SemSet {
                    sems: vec![Sem::default(); nsems as usize],
                    otime: 0,
                    ctime: now(),
                    queue: Arc::new(WaitQueue::new()),
                    pending: HashMap::new(),
                })
            },
            |s| {
                if (s.sems.len() as i32) < nsems {
                    Err(Errno::EINVAL)
                } else {
                    Ok(())
                }
            },
        )?;
        if created {
            self.used += i64::from(nsems);
        }
        Ok(id)
    }

    /// The set's queue after the checks semop makes before trying.
    pub fn semop_prepare(&mut self, c: &Caller, a: &SemopArgs<'_>) -> SysResult<Arc<WaitQueue>> {
        let (p, s) = self.ids.get(a.id)?;
        if usize::from(a.max) >= s.sems.len() {
            return Err(Errno::EFBIG);
        }
        check_perms(
            c,
            p,
            if a.alter {
                super::S_IWUGO
            } else {
                super::S_IRUGO
            },
        )?;
        Ok(s.queue.clone())
    }

    /// One attempt of a semop by sleeper `tok`: `Ok(Some(()))` done, `Ok(None)` blocked
    /// (recorded for GETNCNT/GETZCNT), `EIDRM` if the set is gone.
    pub fn semop_try(&mut self, c: &Caller, a: &SemopArgs<'_>, tok: u64) -> SysResult<Option<()>> {
        let Ok((_, set)) = self.ids.get(a.id) else {
            return Err(Errno::EIDRM);
        };
        let n = set.sems.len();
        let mut adj = if a.undo {
            self.undo
                .get(&c.pid)
                .and_then(|m| m.get(&a.id))
                .cloned()
                .unwrap_or_else(|| vec![0; n])
        } else {
            Vec::new()
        };
        let (_, set) = self.ids.get(a.id)?;
        let r = if a.undo {
            try_semop(&mut set.sems, &mut adj, a.sops, c.pid)
        } else {
            // No SEM_UNDO operation touches `adj`.
            try_semop(&mut set.sems, &mut [], a.sops, c.pid)
        };
        match r {
            Ok(Outcome::Done) => {
                set.pending.remove(&tok);
                set.otime = now();
                let q = set.queue.clone();
                if a.undo {
                    self.undo.entry(c.pid).or_default().insert(a.id, adj);
                }
                if a.alter {
                    q.wake_all();
                }
                Ok(Some(()))
            }
            Ok(Outcome::Blocked(num, op)) => {
                set.pending.insert(tok, (num, op));
                Ok(None)
            }
            Err(e) => {
                set.pending.remove(&tok);
                Err(e)
            }
        }
    }

    /// A sleeper gives up.
    pub fn semop_cancel(&mut self, id: i32, tok: u64) {
        if let Ok((_, s)) = self.ids.get(id) {
            s.pending.remove(&tok);
        }
    }

    /// IPC_STAT, SEM_STAT, SEM_STAT_ANY (`semctl_stat`): perm, otime, ctime, nsems; and the id.
    pub fn stat(
        &mut self,
        c: &Caller,
        id: i32,
        by_idx: bool,
        check: bool,
    ) -> SysResult<(i32, Ipc64Perm, i64, i64, u64)> {
        let (id, p, s) = self.ids.get_for_stat(c, id, by_idx, check)?;
        Ok((id, p.to_abi(), s.otime, s.ctime, s.sems.len() as u64))
    }

    /// IPC_SET.
    pub fn set(&mut self, c: &Caller, id: i32, perm: &Ipc64Perm) -> SysResult<()> {
        let (p, s) = self.ids.get(id)?;
        may_ctl(c, p)?;
        p.set(perm);
        s.ctime = now();
        Ok(())
    }

    /// IPC_RMID (`freeary`): sleepers get `EIDRM`, undo entries go.
    pub fn rmid(&mut self, c: &Caller, id: i32) -> SysResult<()> {
        let (p, _) = self.ids.get(id)?;
        may_ctl(c, p)?;
        let s = self.ids.remove(id).ok_or(Errno::EINVAL)?;
        self.used -= s.sems.len() as i64;
        for m in self.undo.values_mut() {
            m.remove(&id);
        }
        s.queue.wake_all();
        Ok(())
    }

    /// IPC_INFO / SEM_INFO (`semctl_info`).
    pub fn info(&self, sem_info: bool) -> (i32, Seminfo) {
        let l = limits();
        let mut i = Seminfo {
            semmni: l.semmni(),
            semmns: l.semmns(),
            semmsl: l.semmsl(),
            semopm: l.semopm(),
            semvmx: SEMVMX,
            semmnu: SEMMNS,
            semmap: SEMMNS,
            semume: SEMOPM,
            semusz: SEMUSZ,
            semaem: SEMAEM,
        };
        if sem_info {
            i.semusz = self.ids.in_use() as i32;
            i.semaem = self.used as i32;
        }
        (self.ids.max_idx(), i)
    }

    /// The set with id `id` after a permission check for `acc`.
    pub fn checked(&mut self, c: &Caller, id: i32, acc: u32) -> SysResult<&mut SemSet> {
        let (p, s) = self.ids.get(id)?;
        check_perms(c, p, acc)?;
        Ok(s)
    }

    /// GETNCNT (`zero` false) / GETZCNT: sleepers blocked on semaphore `num`.
    pub fn count_waiters(set: &SemSet, num: u16, zero: bool) -> i32 {
        set.pending
            .values()
            .filter(|&&(n, op)| n == num && if zero { op == 0 } else { op < 0 })
            .count() as i32
    }

    /// SETVAL (`semctl_setval`): `ERANGE` outside `0..=SEMVMX`, `EINVAL` for a bad index,
    /// `EACCES`; clears every process's adjustment of that semaphore, wakes sleepers.
    pub fn setval(&mut self, c: &Caller, id: i32, num: i32, val: i32) -> SysResult<()> {
        if !(0..=SEMVMX).contains(&val) {
            return Err(Errno::ERANGE);
        }
        let (p, s) = self.ids.get(id)?;
        if num < 0 || num as usize >= s.sems.len() {
            return Err(Errno::EINVAL);
        }
        check_perms(c, p, super::S_IWUGO)?;
        s.sems[num as usize] = Sem { val, pid: c.pid };
        s.ctime = now();
        s.queue.wake_all();
        for m in self.undo.values_mut() {
            if let Some(a) = m.get_mut(&id) {
                a[num as usize] = 0;
            }
        }
        Ok(())
    }

    /// SETALL after the permission check and copy-in: `ERANGE` for any value above `SEMVMX`;
    /// clears the adjustments of the set.
    pub fn setall(&mut self, c: &Caller, id: i32, vals: &[u16]) -> SysResult<()> {
        let s = self.checked(c, id, super::S_IWUGO)?;
        if vals.len() != s.sems.len() {
            return Err(Errno::EINVAL);
        }
        if vals.iter().any(|&v| i32::from(v) > SEMVMX) {
            return Err(Errno::ERANGE);
        }
        for (s, &v) in s.sems.iter_mut().zip(vals) {
            *s = Sem {
                val: i32::from(v),
                pid: c.pid,
            };
        }
        s.ctime = now();
        s.queue.wake_all();
        for m in self.undo.values_mut() {
            if let Some(a) = m.get_mut(&id) {
                a.fill(0);
            }
        }
        Ok(())
    }

    /// `/proc/sysvipc/sem` (`sysvipc_sem_proc_show`).
    pub fn proc_text(&self) -> String {
        let mut s = String::from(
            "       key      semid perms      nsems   uid   gid  cuid  cgid      otime      ctime\n",
        );
        for (id, p, set) in self.ids.iter() {
            s.push_str(&format!(
                "{:10} {:10}  {:4o} {:10} {:5} {:5} {:5} {:5} {:10} {:10}\n",
                p.key,
                id,
                p.mode,
                set.sems.len(),
                p.uid,
                p.gid,
                p.cuid,
                p.cgid,
                set.otime,
                set.ctime
            ));
        }
        s
    }
}

/// `exit_sem`: applies and forgets process `pid`'s adjustments.
pub fn exit_process(ns: &um_kernel::ipcns::IpcNs, pid: i32) {
    let table = table_of(ns);
    let mut ns = lock_ns(&table);
    let Some(list) = ns.undo.remove(&pid) else {
        return;
    };
    for (id, adj) in list {
        if let Ok((_, set)) = ns.ids.get(id) {
            apply_undo(&mut set.sems, &adj, pid);
            set.queue.wake_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sop(num: u16, op: i16, flg: i16) -> Sembuf {
        Sembuf {
            sem_num: num,
            sem_op: op,
            sem_flg: flg,
        }
    }

    #[test]
    fn atomic_all_or_nothing() {
        let mut s = vec![Sem { val: 1, pid: 0 }, Sem { val: 0, pid: 0 }];
        let mut adj = vec![0, 0];
        // The second op blocks: the first is not applied.
        assert_eq!(
            try_semop(&mut s, &mut adj, &[sop(0, -1, 0), sop(1, -1, 0)], 5),
            Ok(Outcome::Blocked(1, -1))
        );
        assert_eq!(s[0].val, 1);
        assert_eq!(
            try_semop(
                &mut s,
                &mut adj,
                &[sop(0, -1, 0), sop(1, -1, IPC_NOWAIT as i16)],
                5
            ),
            Err(Errno::EAGAIN)
        );
        // Wait-for-zero on a non-zero value blocks; on zero passes.
        assert_eq!(
            try_semop(&mut s, &mut adj, &[sop(0, 0, 0)], 5),
            Ok(Outcome::Blocked(0, 0))
        );
        assert_eq!(
            try_semop(&mut s, &mut adj, &[sop(1, 0, 0)], 5),
            Ok(Outcome::Done)
        );
        // Operations on one semaphore compound.
        assert_eq!(
            try_semop(&mut s, &mut adj, &[sop(0, 2, 0), sop(0, -3, 0)], 6),
            Ok(Outcome::Done)
        );
        assert_eq!(s[0], Sem { val: 0, pid: 6 });
        assert_eq!(
            try_semop(&mut s, &mut adj, &[sop(1, i16::MAX, 0), sop(1, 1, 0)], 6),
            Err(Errno::ERANGE)
        );
        assert_eq!(s[1].val, 0);
    }

    #[test]
    fn undo_arithmetic() {
        let mut s = vec![Sem::default()];
        let mut adj = vec![0];
        let u = SEM_UNDO;
        assert_eq!(
            try_semop(&mut s, &mut adj, &[sop(0, 5, u)], 1),
            Ok(Outcome::Done)
        );
        assert_eq!(adj, vec![-5]);
        assert_eq!(
            try_semop(&mut s, &mut adj, &[sop(0, -2, u)], 1),
            Ok(Outcome::Done)
        );
        assert_eq!((s[0].val, adj[0]), (3, -3));
        // Another process took the value down to 1: undo clamps at 0.
        s[0].val = 1;
        apply_undo(&mut s, &adj, 9);
        assert_eq!(s[0], Sem { val: 0, pid: 9 });
        // An adjustment may not leave -SEMAEM-1..=SEMAEM.
        let mut s = vec![Sem::default()];
        let mut adj = vec![-SEMAEM];
        assert_eq!(
            try_semop(&mut s, &mut adj, &[sop(0, 2, u)], 1),
            Err(Errno::ERANGE)
        );
        assert_eq!((s[0].val, adj[0]), (0, -SEMAEM));
        // Clamp at SEMVMX.
        let mut s = vec![Sem {
            val: SEMVMX - 1,
            pid: 0,
        }];
        apply_undo(&mut s, &[5], 2);
        assert_eq!(s[0].val, SEMVMX);
    }

    #[test]
    fn table_rules() {
        let mut ns = SemNs::default();
        let c = Caller {
            pid: 3,
            ..Default::default()
        };
        assert_eq!(ns.get(&c, 0, 0, 0o1600), Err(Errno::EINVAL));
        assert_eq!(ns.get(&c, 0, -1, 0o1600), Err(Errno::EINVAL));
        let id = ns.get(&c, 9, 2, 0o1600).unwrap();
        assert_eq!(
            ns.get(&c, 9, 3, 0),
            Err(Errno::EINVAL),
            "more than the set has"
        );
        assert_eq!(ns.get(&c, 9, 0, 0), Ok(id));
        assert_eq!(ns.setval(&c, id, 0, -1), Err(Errno::ERANGE));
        assert_eq!(ns.setval(&c, id, 2, 1), Err(Errno::EINVAL));
        // An undo entry, then SETVAL clears it.
        let sops = [sop(0, 1, SEM_UNDO)];
        let a = SemopArgs {
            id,
            sops: &sops,
            alter: true,
            undo: true,
            max: 0,
        };
        ns.semop_prepare(&c, &a).unwrap();
        assert_eq!(ns.semop_try(&c, &a, 1), Ok(Some(())));
        assert_eq!(ns.undo[&3][&id], vec![-1, 0]);
        ns.setval(&c, id, 0, 4).unwrap();
        assert_eq!(ns.undo[&3][&id], vec![0, 0]);
        // A blocked sleeper counts for GETNCNT until it gives up.
        let sops = [sop(1, -1, 0)];
        let b = SemopArgs {
            id,
            sops: &sops,
            alter: true,
            undo: false,
            max: 1,
        };
        assert_eq!(ns.semop_try(&c, &b, 7), Ok(None));
        let set = ns.checked(&c, id, 0).unwrap();
        assert_eq!(SemNs::count_waiters(set, 1, false), 1);
        assert_eq!(SemNs::count_waiters(set, 1, true), 0);
        ns.semop_cancel(id, 7);
        let set = ns.checked(&c, id, 0).unwrap();
        assert_eq!(SemNs::count_waiters(set, 1, false), 0);
        let too_far = SemopArgs { max: 2, ..b };
        assert_eq!(ns.semop_prepare(&c, &too_far).err(), Some(Errno::EFBIG));
        ns.rmid(&c, id).unwrap();
        assert_eq!(ns.semop_try(&c, &b, 7), Err(Errno::EIDRM));
        assert_eq!(ns.used, 0);
        assert!(ns.undo[&3].is_empty());
    }
}
