//! `um-ipc`: System V IPC (svipc(7), Linux `ipc/`): shared memory ([`shm`]), semaphores
//! ([`sem`]) and message queues ([`msg`]); POSIX message queues ([`mqueue`], their syscalls
//! in [`mqsys`], mq_overview(7)); and what the three share (Linux `ipc/util.c`): the id tables ([`Ids`]), keys and
//! `IPC_PRIVATE`, `IPC_CREAT|IPC_EXCL` lookup ([`Ids::get_or_create`], Linux `ipcget`), the
//! permission check against the caller's credentials ([`ipcperms`], with `CAP_IPC_OWNER`), the
//! owner check of `IPC_SET`/`IPC_RMID` ([`may_ctl`], `ipcctl_obtain_check`), and the limits of
//! `/proc/sys/kernel` ([`Limits`]).
//!
//! Every kind's table is per IPC namespace (`um_kernel::ipcns`, ipc_namespaces(7)): `table()`
//! is the caller's namespace's, kept in the namespace's generic slots, so a key or id made in
//! one namespace is not seen in another, and the objects go when the namespace does (a
//! segment still mapped keeps its pages until unmapped). The limits in `/proc/sys/kernel`
//! stay system-wide. The syscalls are in [`sys`], which
//! copies to and from guest memory; the types here are plain data behind one mutex per kind of
//! object, so the rules can be unit-tested. Ids are Linux's: `index + (seq << 15)`, the lowest
//! free index, `seq` counting creations, so a removed object's id is not reused at once.
//!
//! Neighbours: `um_mm::Shmem` (a segment's pages, mapped by `shmat` as a shared mapping, so
//! fork shares it, exit and exec drop it, and `mremap` moves it), `um_kernel::wait` (semop and
//! msgsnd/msgrcv sleep there), and the process-exit hook [`exit_process`] (`SEM_UNDO`, detach
//! times).
//!
//! Crate neighbours: `um-kernel`, `um-mm`, `um-uapi` below, and `um-fs` below for hugetlbfs
//! (`SHM_HUGETLB` reservations) and procfs, where [`proc`] registers `/proc/sysvipc` and the
//! limits in `/proc/sys/kernel` (`um_fs::procfs::registry`); `um-bin` above calls [`init`] and
//! [`register`].
#![forbid(unsafe_code)]

pub mod mqsys;
pub mod mqueue;
pub mod msg;
pub mod proc;
pub mod sem;
pub mod shm;
pub mod sys;

/// Registers every IPC syscall: System V ([`sys`]) and POSIX message queues ([`mqsys`]).
pub fn register(t: &mut um_kernel::syscall::SyscallTable) {
    sys::register(t);
    mqsys::register(t);
}

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use um_uapi::abi::ipc::{IPC_CREAT, IPC_EXCL, IPC_PRIVATE, Ipc64Perm};
use um_uapi::{Errno, SysResult};

/// `IPCMNI_SHIFT`: ids are `index + (seq << 15)`.
pub const IPCMNI_SHIFT: u32 = 15;
/// `IPCMNI`: the most objects of one kind.
pub const IPCMNI: u32 = 1 << IPCMNI_SHIFT;
/// `IPCID_SEQ_MAX`: `INT_MAX >> IPCMNI_SHIFT`.
const IPCID_SEQ_MAX: u32 = (i32::MAX as u32) >> IPCMNI_SHIFT;
/// `S_IRUGO`.
pub const S_IRUGO: u32 = 0o444;
/// `S_IWUGO`.
pub const S_IWUGO: u32 = 0o222;
/// `S_IXUGO`.
pub const S_IXUGO: u32 = 0o111;
/// `S_IRWXUGO`: what `IPC_SET` may change of the mode.
pub const S_IRWXUGO: u32 = 0o777;

pub use um_uapi::abi::capability::CAP_IPC_LOCK;
pub use um_uapi::abi::capability::CAP_IPC_OWNER;
pub use um_uapi::abi::capability::CAP_SYS_ADMIN;
pub use um_uapi::abi::capability::CAP_SYS_RESOURCE;

/// Who makes an IPC call: the credentials and capabilities the checks look at.
#[derive(Clone, Debug, Default)]
pub struct Caller {
    /// The thread group id (what `*_lpid`/`*_cpid`/`sempid` record).
    pub pid: i32,
    pub euid: u32,
    pub egid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
    pub cap_ipc_owner: bool,
    pub cap_ipc_lock: bool,
    pub cap_sys_admin: bool,
    pub cap_sys_resource: bool,
}

impl Caller {
    /// Linux `in_group_p`: the effective group or a supplementary one.
    fn in_group(&self, gid: u32) -> bool {
        self.egid == gid || self.groups.contains(&gid)
    }
}

/// `struct kern_ipc_perm`: an object's key, owner, creator, mode and sequence number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Perm {
    pub key: i32,
    pub uid: u32,
    pub gid: u32,
    pub cuid: u32,
    pub cgid: u32,
    /// Permission bits plus, for segments, `SHM_DEST` and `SHM_LOCKED`.
    pub mode: u32,
    pub seq: u16,
}

impl Perm {
    /// A new object's permissions (`ipc_addid` and the `newseg`/`newary`/`newque` callers):
    /// owner and creator are the caller's effective ids, the mode the low 9 bits of `flg`.
    pub fn new(key: i32, flg: u32, c: &Caller) -> Perm {
        Perm {
            key,
            uid: c.euid,
            gid: c.egid,
            cuid: c.euid,
            cgid: c.egid,
            mode: flg & S_IRWXUGO,
            seq: 0,
        }
    }

    /// `kernel_to_ipc64_perm`.
    pub fn to_abi(&self) -> Ipc64Perm {
        Ipc64Perm {
            key: self.key,
            uid: self.uid,
            gid: self.gid,
            cuid: self.cuid,
            cgid: self.cgid,
            mode: self.mode as u16,
            seq: self.seq,
            ..Default::default()
        }
    }

    /// `ipc_update_perm` (`IPC_SET`): the owner and the permission bits.
    pub fn set(&mut self, p: &Ipc64Perm) {
        self.uid = p.uid;
        self.gid = p.gid;
        self.mode = (self.mode & !S_IRWXUGO) | (u32::from(p.mode) & S_IRWXUGO);
    }
}

/// `ipcperms` (ipc/util.c): whether `c` may access `p` as `flag` asks (`S_IRUGO`, `S_IWUGO`,
/// ...): the owner or creator gets the user bits, a member of the owner's or creator's group
/// the group bits, anyone else the other bits; `CAP_IPC_OWNER` overrides.
pub fn ipcperms(c: &Caller, p: &Perm, flag: u32) -> bool {
    let requested = (flag >> 6) | (flag >> 3) | flag;
    let mut granted = p.mode;
    if c.euid == p.cuid || c.euid == p.uid {
        granted >>= 6;
    } else if c.in_group(p.cgid) || c.in_group(p.gid) {
        granted >>= 3;
    }
    requested & !granted & 0o7 == 0 || c.cap_ipc_owner
}

/// `ipcperms` as an error: `EACCES`.
pub fn check_perms(c: &Caller, p: &Perm, flag: u32) -> SysResult<()> {
    if ipcperms(c, p, flag) {
        Ok(())
    } else {
        Err(Errno::EACCES)
    }
}

/// `ipcctl_obtain_check`: `IPC_SET` and `IPC_RMID` need the owner, the creator or
/// `CAP_SYS_ADMIN` (`EPERM`).
pub fn may_ctl(c: &Caller, p: &Perm) -> SysResult<()> {
    if c.euid == p.cuid || c.euid == p.uid || c.cap_sys_admin {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// Seconds since the epoch (`ktime_get_real_seconds`).
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// One table of objects of a kind (`struct ipc_ids`).
pub struct Ids<T> {
    entries: BTreeMap<u32, (Perm, T)>,
    /// The next sequence number.
    seq: u32,
}

impl<T> Default for Ids<T> {
    fn default() -> Self {
        Ids {
            entries: BTreeMap::new(),
            seq: 0,
        }
    }
}

impl<T> Ids<T> {
    /// The id of the object at `idx` (`ipc_buildid`).
    fn build_id(idx: u32, seq: u16) -> i32 {
        ((u32::from(seq) << IPCMNI_SHIFT) + idx) as i32
    }

    /// How many objects exist (`in_use`).
    pub fn in_use(&self) -> usize {
        self.entries.len()
    }

    /// `ipc_get_maxidx` as the `*_INFO` commands return it: the highest index in use, 0 if none.
    pub fn max_idx(&self) -> i32 {
        self.entries.keys().next_back().map_or(0, |&i| i as i32)
    }

    /// `ipc_addid`: the lowest free index below `max` (`ENOSPC` if none), a new sequence number.
    pub fn add(&mut self, mut perm: Perm, obj: T, max: u32) -> SysResult<i32> {
        let max = max.min(IPCMNI);
        let idx = (0..max)
            .find(|i| !self.entries.contains_key(i))
            .ok_or(Errno::ENOSPC)?;
        perm.seq = self.seq as u16;
        self.seq = if self.seq >= IPCID_SEQ_MAX {
            0
        } else {
            self.seq + 1
        };
        let id = Self::build_id(idx, perm.seq);
        self.entries.insert(idx, (perm, obj));
        Ok(id)
    }

    /// `ipc_obtain_object_check`: the object with this id; `EINVAL` if there is none (a
    /// negative id, a free index, or a stale sequence number).
    pub fn get(&mut self, id: i32) -> SysResult<(&mut Perm, &mut T)> {
        if id < 0 {
            return Err(Errno::EINVAL);
        }
        let idx = id as u32 & (IPCMNI - 1);
        match self.entries.get_mut(&idx) {
            Some((p, o)) if Self::build_id(idx, p.seq) == id => Ok((p, o)),
            _ => Err(Errno::EINVAL),
        }
    }

    /// `ipc_obtain_object_idr`: the object at index `idx` (the `*_STAT` commands) and its id.
    pub fn get_idx(&mut self, idx: i32) -> SysResult<(i32, &mut Perm, &mut T)> {
        let i = u32::try_from(idx).map_err(|_| Errno::EINVAL)?;
        match self.entries.get_mut(&i) {
            Some((p, o)) => Ok((Self::build_id(i, p.seq), p, o)),
            None => Err(Errno::EINVAL),
        }
    }

    /// The object of an `IPC_STAT` (by id) or `*_STAT`/`*_STAT_ANY` command (by index), with
    /// its id; `check` asks the caller for read permission (`*_STAT_ANY` does not).
    pub fn get_for_stat(
        &mut self,
        c: &Caller,
        id: i32,
        by_idx: bool,
        check: bool,
    ) -> SysResult<(i32, &mut Perm, &mut T)> {
        let (id, p, o) = if by_idx {
            self.get_idx(id)?
        } else {
            let (p, o) = self.get(id)?;
            (id, p, o)
        };
        if check {
            check_perms(c, p, S_IRUGO)?;
        }
        Ok((id, p, o))
    }

    /// Removes the object with this id (`ipc_rmid`).
    pub fn remove(&mut self, id: i32) -> Option<T> {
        let idx = id as u32 & (IPCMNI - 1);
        match self.entries.get(&idx) {
            Some((p, _)) if Self::build_id(idx, p.seq) == id => {
                self.entries.remove(&idx).map(|(_, o)| o)
            }
            _ => None,
        }
    }

    /// Every object, with its id.
    pub fn iter(&self) -> impl Iterator<Item = (i32, &Perm, &T)> {
        self.entries
            .iter()
            .map(|(&i, (p, o))| (Self::build_id(i, p.seq), p, o))
    }

    /// Every object, mutably, with its id.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (i32, &mut Perm, &mut T)> {
        self.entries
            .iter_mut()
            .map(|(&i, (p, o))| (Self::build_id(i, p.seq), p, o))
    }

    /// Keeps only the objects `f` says to keep.
    pub fn retain(&mut self, mut f: impl FnMut(&Perm, &mut T) -> bool) {
        self.entries.retain(|_, (p, o)| f(p, o));
    }

    /// `ipcget` (ipc/util.c): `IPC_PRIVATE` always makes a new object; another key finds the
    /// object with that key (`ENOENT` without `IPC_CREAT`, `EEXIST` with `IPC_CREAT|IPC_EXCL`,
    /// then `more_checks`, then [`ipcperms`] with the mode bits of `flg`: `EACCES`) or, with
    /// `IPC_CREAT`, makes one with `create` (limit `max` objects).
    pub fn get_or_create(
        &mut self,
        c: &Caller,
        key: i32,
        flg: u32,
        max: u32,
        create: impl FnOnce() -> SysResult<T>,
        more_checks: impl FnOnce(&T) -> SysResult<()>,
    ) -> SysResult<i32> {
        if key != IPC_PRIVATE {
            let found = self
                .entries
                .iter()
                .find(|(_, (p, _))| p.key == key)
                .map(|(&i, (p, o))| (Self::build_id(i, p.seq), p, o));
            if let Some((id, p, o)) = found {
                if flg & IPC_CREAT != 0 && flg & IPC_EXCL != 0 {
                    return Err(Errno::EEXIST);
                }
                more_checks(o)?;
                check_perms(c, p, flg)?;
                return Ok(id);
            }
            if flg & IPC_CREAT == 0 {
                return Err(Errno::ENOENT);
            }
        }
        if self.entries.len() as u32 >= max.min(IPCMNI) {
            return Err(Errno::ENOSPC);
        }
        let obj = create()?;
        self.add(Perm::new(key, flg, c), obj, max)
    }
}

/// The tunables of `/proc/sys/kernel` (Linux `struct ipc_namespace`'s `shm_ctl*`, `sem_ctls`,
/// `msg_ctl*`), with Linux's defaults (include/uapi/linux/{shm,sem,msg}.h).
pub struct Limits {
    pub shmmax: AtomicU64,
    pub shmall: AtomicU64,
    pub shmmni: AtomicI32,
    /// `SEMMSL`, `SEMMNS`, `SEMOPM`, `SEMMNI` (the order of `/proc/sys/kernel/sem`).
    pub sem: [AtomicI32; 4],
    pub msgmax: AtomicI32,
    pub msgmnb: AtomicI32,
    pub msgmni: AtomicI32,
}

/// `SHMMAX`/`SHMALL`: `ULONG_MAX - (1 << 24)`.
const SHM_DEFAULT_MAX: u64 = u64::MAX - (1 << 24);

/// The limits now.
pub fn limits() -> &'static Limits {
    static L: Limits = Limits {
        shmmax: AtomicU64::new(SHM_DEFAULT_MAX),
        shmall: AtomicU64::new(SHM_DEFAULT_MAX),
        shmmni: AtomicI32::new(4096),
        sem: [
            AtomicI32::new(sem::SEMMSL),
            AtomicI32::new(sem::SEMMNS),
            AtomicI32::new(sem::SEMOPM),
            AtomicI32::new(sem::SEMMNI),
        ],
        msgmax: AtomicI32::new(msg::MSGMAX),
        msgmnb: AtomicI32::new(msg::MSGMNB),
        msgmni: AtomicI32::new(msg::MSGMNI),
    };
    &L
}

impl Limits {
    /// `/proc/sys/kernel/sem` as it reads: four numbers separated by tabs.
    pub fn sem_text(&self) -> String {
        let v: Vec<String> = self
            .sem
            .iter()
            .map(|x| x.load(Ordering::Relaxed).to_string())
            .collect();
        format!("{}\n", v.join("\t"))
    }

    /// A write to `/proc/sys/kernel/sem` (ipc/ipc_sysctl.c `proc_ipc_sem_dointvec`): four
    /// non-negative integers; `SEMMNI` at most `IPCMNI` (`EINVAL`).
    pub fn set_sem(&self, text: &str) -> SysResult<()> {
        let v: Vec<i32> = text
            .split_whitespace()
            .map(|s| s.parse::<i32>().map_err(|_| Errno::EINVAL))
            .collect::<SysResult<_>>()?;
        if v.len() != 4 || v.iter().any(|&x| x < 0) || v[3] as u32 > IPCMNI {
            return Err(Errno::EINVAL);
        }
        for (a, x) in self.sem.iter().zip(v) {
            a.store(x, Ordering::Relaxed);
        }
        Ok(())
    }

    /// `SEMMSL`.
    pub fn semmsl(&self) -> i32 {
        self.sem[0].load(Ordering::Relaxed)
    }
    /// `SEMMNS`.
    pub fn semmns(&self) -> i32 {
        self.sem[1].load(Ordering::Relaxed)
    }
    /// `SEMOPM`.
    pub fn semopm(&self) -> i32 {
        self.sem[2].load(Ordering::Relaxed)
    }
    /// `SEMMNI`.
    pub fn semmni(&self) -> i32 {
        self.sem[3].load(Ordering::Relaxed)
    }
}

/// Boot-time setup: the process-exit hook and the procfs files.
pub fn init(k: &um_kernel::kernel::Kernel) {
    // SysV IPC at exit: SEM_UNDO adjustments (ipc/sem.c exit_sem), shm detach times.
    um_kernel::task::lock(&k.process_exit_hooks).push(Box::new(|p| exit_process(p)));
    proc::register();
    mqueue::register();
}

/// The process-exit hook: applies the process's `SEM_UNDO` adjustments (`exit_sem`) and
/// records the detach of the segments it still maps (`shm_close` from `exit_mmap`).
pub fn exit_process(p: &um_kernel::task::Process) {
    sem::exit_process(&um_kernel::ipcns::of(p), p.pid as i32);
    shm::exit_mm(p);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(uid: u32, gid: u32) -> Caller {
        Caller {
            pid: 1,
            euid: uid,
            egid: gid,
            ..Default::default()
        }
    }

    #[test]
    fn permissions() {
        let owner = user(1000, 1000);
        let p = Perm::new(5, 0o640, &owner);
        assert!(ipcperms(&owner, &p, S_IRUGO | S_IWUGO));
        let group = user(2000, 1000);
        assert!(ipcperms(&group, &p, S_IRUGO));
        assert!(!ipcperms(&group, &p, S_IWUGO));
        let mut other = user(3000, 3000);
        assert!(!ipcperms(&other, &p, S_IRUGO));
        other.groups = vec![1000];
        assert!(ipcperms(&other, &p, S_IRUGO), "supplementary group");
        let mut nobody = user(3000, 3000);
        nobody.cap_ipc_owner = true;
        assert!(ipcperms(&nobody, &p, S_IWUGO));
        assert_eq!(may_ctl(&user(3000, 3000), &p), Err(Errno::EPERM));
        assert_eq!(may_ctl(&owner, &p), Ok(()));
        // Mode 0 with no bits asked (a plain lookup with flg 0) is allowed.
        let p0 = Perm::new(5, 0, &owner);
        assert!(ipcperms(&other, &p0, 0));
    }

    #[test]
    fn ipc_set_keeps_high_mode_bits() {
        let mut p = Perm::new(1, 0o600, &user(0, 0));
        p.mode |= 0o1000;
        p.set(&Ipc64Perm {
            uid: 7,
            gid: 8,
            mode: 0o7444,
            ..Default::default()
        });
        assert_eq!((p.uid, p.gid, p.mode), (7, 8, 0o1444));
    }

    #[test]
    fn keys_ids_and_flags() {
        let c = user(0, 0);
        let mut ids: Ids<u32> = Ids::default();
        let a = ids
            .get_or_create(&c, 42, IPC_CREAT | 0o600, 10, || Ok(1), |_| Ok(()))
            .unwrap();
        assert_eq!(a, 0);
        assert_eq!(
            ids.get_or_create(&c, 42, 0, 10, || Ok(2), |_| Ok(())),
            Ok(a)
        );
        assert_eq!(
            ids.get_or_create(&c, 42, IPC_CREAT | IPC_EXCL, 10, || Ok(2), |_| Ok(())),
            Err(Errno::EEXIST)
        );
        assert_eq!(
            ids.get_or_create(&c, 43, 0, 10, || Ok(2), |_| Ok(())),
            Err(Errno::ENOENT)
        );
        assert_eq!(
            ids.get_or_create(&c, 42, 0, 10, || Ok(2), |_| Err(Errno::EINVAL)),
            Err(Errno::EINVAL)
        );
        // IPC_PRIVATE always makes a new one; the next index, the next sequence number.
        let b = ids
            .get_or_create(&c, IPC_PRIVATE, 0, 10, || Ok(3), |_| Ok(()))
            .unwrap();
        assert_eq!(b, 1 + (1 << IPCMNI_SHIFT));
        assert_eq!(ids.max_idx(), 1);
        // Removing and creating again reuses the index with a new sequence: the old id is gone.
        assert_eq!(ids.remove(a), Some(1));
        assert_eq!(ids.get(a).err(), Some(Errno::EINVAL));
        let c2 = ids.add(Perm::default(), 4, 10).unwrap();
        assert_eq!(c2, 2 << IPCMNI_SHIFT);
        assert_eq!(ids.get(c2).map(|(_, o)| *o), Ok(4));
        assert_eq!(ids.get_idx(0).map(|(id, _, _)| id), Ok(c2));
        assert_eq!(ids.get(-1).err(), Some(Errno::EINVAL));
        // The limit.
        let mut small: Ids<u32> = Ids::default();
        small.add(Perm::default(), 0, 1).unwrap();
        assert_eq!(small.add(Perm::default(), 0, 1), Err(Errno::ENOSPC));
    }

    #[test]
    fn sem_sysctl() {
        let l = Limits {
            shmmax: AtomicU64::new(0),
            shmall: AtomicU64::new(0),
            shmmni: AtomicI32::new(0),
            sem: [
                AtomicI32::new(1),
                AtomicI32::new(2),
                AtomicI32::new(3),
                AtomicI32::new(4),
            ],
            msgmax: AtomicI32::new(0),
            msgmnb: AtomicI32::new(0),
            msgmni: AtomicI32::new(0),
        };
        assert_eq!(l.sem_text(), "1\t2\t3\t4\n");
        assert_eq!(l.set_sem("250 32000 32 128\n"), Ok(()));
        assert_eq!(l.semopm(), 32);
        assert_eq!(l.set_sem("1 2 3"), Err(Errno::EINVAL));
        assert_eq!(l.set_sem("1 2 3 99999"), Err(Errno::EINVAL));
    }
}
