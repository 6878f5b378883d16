//! PID namespaces (Linux `kernel/pid.c`, `kernel/pid_namespace.c`, pid_namespaces(7)).
//!
//! A [`PidNs`] has a parent (none for the initial namespace, [`root`]), a level (0 at the
//! root), its own number allocator (`last_pid`, `/proc/sys/kernel/ns_last_pid`) and a table
//! from its numbers to the kernel-wide ids. A task's [`Pid`] (Linux `struct pid`) holds one
//! number per level, from the root (level 0) down to the namespace it lives in; the level-0
//! number is the kernel-wide id that `Task::tid`, `Process::pid`, the task table and every
//! internal table use. A number crosses the syscall boundary only through the helpers here
//! ([`Pid::nr_in`], [`crate::task::TaskTable::find_task`], [`crate::task::TaskTable::vnr`],
//! ...): what goes out is the number in the caller's namespace (0 when the caller cannot
//! see the task: `getppid` of a namespace's init), what comes in is looked up in the
//! caller's namespace (`ESRCH` for a number it does not have).
//!
//! Creation: `clone(CLONE_NEWPID)` puts the child in a new namespace, as its pid 1, the
//! namespace's init (its child reaper); `unshare(CLONE_NEWPID)` and `setns` change only the
//! caller's namespace for children (`pid_for_children`), which its next children enter.
//! When a namespace's init exits, every other process of the namespace is killed
//! ([`zap`]) and the namespace takes no new process (`ENOMEM`, `disable_pid_allocation`).
//!
//! The namespace files (`/proc/PID/ns/pid`, `pid_for_children`) lead to an nsfs inode
//! ([`ns_dentry`]); opening one gives a [`PidNsFile`], which `setns` takes.

use crate::task::{Process, lock};
use crate::vfs::Dentry;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use um_uapi::{Errno, SysResult};

/// The initial pid namespace's inode number (include/linux/proc_ns.h `PROC_PID_INIT_INO`).
pub const INIT_INO: u64 = 0xEFFF_FFFC;
/// The deepest nesting (kernel/pid_namespace.c `MAX_PID_NS_LEVEL`).
pub const MAX_PID_NS_LEVEL: usize = 32;
/// `/proc/sys/kernel/pid_max` as this kernel shows it: numbers stay below it.
pub const PID_MAX: u32 = 4_194_304;
/// include/linux/pid.h `RESERVED_PIDS`: once the allocator has passed it, it wraps to here.
const RESERVED_PIDS: u32 = 300;

/// A namespace's numbers.
#[derive(Default)]
struct NsState {
    /// The last number handed out (`idr_get_cursor - 1`).
    last: u32,
    /// Number in this namespace -> kernel-wide id.
    map: BTreeMap<u32, u32>,
    /// The init has exited: no new process (`PIDNS_ADDING` cleared).
    dead: bool,
}

/// A pid namespace (Linux `struct pid_namespace`).
pub struct PidNs {
    parent: Option<Arc<PidNs>>,
    level: usize,
    inum: u64,
    st: Mutex<NsState>,
    /// The namespace's init (`child_reaper`), once it exists.
    reaper: Mutex<Weak<Process>>,
    /// The user namespace that owns it (`ns.user_ns`): its capability checks are made there.
    owner: Arc<crate::userns::UserNs>,
}

/// The initial namespace (`init_pid_ns`).
pub fn root() -> &'static Arc<PidNs> {
    static ROOT: OnceLock<Arc<PidNs>> = OnceLock::new();
    ROOT.get_or_init(|| {
        Arc::new(PidNs {
            parent: None,
            level: 0,
            inum: INIT_INO,
            st: Mutex::default(),
            reaper: Mutex::new(Weak::new()),
            owner: crate::userns::root().clone(),
        })
    })
}

impl PidNs {
    /// A new namespace below `parent` (`create_pid_namespace`): `ENOSPC` past 32 levels.
    /// Inode numbers come from a range of their own above Linux's `proc_inum_ida` base.
    pub fn new_child(parent: &Arc<PidNs>) -> SysResult<Arc<PidNs>> {
        Self::new_child_owned(parent, crate::userns::current())
    }

    /// [`PidNs::new_child`] owned by user namespace `owner` (clone with CLONE_NEWUSER
    /// makes the child's before the child exists).
    pub fn new_child_owned(
        parent: &Arc<PidNs>,
        owner: Arc<crate::userns::UserNs>,
    ) -> SysResult<Arc<PidNs>> {
        let level = parent.level + 1;
        if level > MAX_PID_NS_LEVEL {
            return Err(Errno::ENOSPC);
        }
        Ok(Arc::new(PidNs {
            parent: Some(parent.clone()),
            level,
            inum: crate::nsfs::alloc_inum(),
            st: Mutex::default(),
            reaper: Mutex::new(Weak::new()),
            owner,
        }))
    }

    /// The nesting level (0 for the initial namespace).
    pub fn level(&self) -> usize {
        self.level
    }

    /// The parent namespace.
    pub fn parent(&self) -> Option<&Arc<PidNs>> {
        self.parent.as_ref()
    }

    /// The inode number shown in `pid:[N]`.
    pub fn inum(&self) -> u64 {
        self.inum
    }

    /// Whether this is the initial namespace.
    pub fn is_root(&self) -> bool {
        self.parent.is_none()
    }

    /// Whether `self` is `other` or one of its ancestors (so sees all of `other`'s tasks).
    pub fn is_ancestor_of(&self, other: &PidNs) -> bool {
        let mut n = Some(other);
        while let Some(x) = n {
            if std::ptr::eq(x, self) {
                return true;
            }
            n = x.parent.as_deref();
        }
        false
    }

    /// The kernel-wide id of number `nr` here (`find_pid_ns`).
    pub fn lookup(&self, nr: u32) -> Option<u32> {
        lock(&self.st).map.get(&nr).copied()
    }

    /// The last number handed out (`ns_last_pid`).
    pub fn last_pid(&self) -> u32 {
        lock(&self.st).last
    }

    /// Writing `ns_last_pid` (kernel/pid_namespace.c `pid_ns_ctl_handler`): the next number
    /// tried is `v + 1`. `EINVAL` outside `0..pid_max`.
    pub fn set_last_pid(&self, v: i64) -> SysResult<()> {
        if !(0..i64::from(PID_MAX)).contains(&v) {
            return Err(Errno::EINVAL);
        }
        lock(&self.st).last = v as u32;
        Ok(())
    }

    /// The namespace's init, if it is alive.
    pub fn reaper(&self) -> Option<Arc<Process>> {
        lock(&self.reaper).upgrade()
    }

    /// Numbers in use (for tests and the /proc listing).
    pub fn numbers(&self) -> Vec<(u32, u32)> {
        lock(&self.st).map.iter().map(|(&a, &b)| (a, b)).collect()
    }

    /// `idr_alloc_cyclic(pid_min, pid_max)` as `alloc_pid` calls it: the first free number
    /// after the last one, wrapping to 1 (or to `RESERVED_PIDS` once that was passed).
    fn alloc_nr(st: &mut NsState) -> SysResult<u32> {
        let pid_min = if st.last + 1 > RESERVED_PIDS {
            RESERVED_PIDS
        } else {
            1
        };
        let start = (st.last + 1).clamp(pid_min, PID_MAX);
        let free = |r: std::ops::Range<u32>, map: &BTreeMap<u32, u32>| {
            let mut want = r.start;
            for (&n, _) in map.range(r.clone()) {
                if n != want {
                    break;
                }
                want += 1;
            }
            (want < r.end).then_some(want)
        };
        let nr = free(start..PID_MAX, &st.map)
            .or_else(|| free(pid_min..start, &st.map))
            .ok_or(Errno::EAGAIN)?;
        st.last = nr;
        Ok(nr)
    }
}

/// A task's numbers, one per level (Linux `struct pid`'s `numbers[]`).
pub struct Pid {
    nrs: Vec<(Arc<PidNs>, u32)>,
}

impl Pid {
    /// A pid of the initial namespace only (number `nr`, allocated by the caller).
    pub fn root_only(nr: u32) -> Arc<Pid> {
        Arc::new(Pid {
            nrs: vec![(root().clone(), nr)],
        })
    }

    /// The kernel-wide id (the level-0 number).
    pub fn global(&self) -> u32 {
        self.nrs[0].1
    }

    /// The namespace the task lives in (`ns_of_pid`, the deepest level).
    pub fn ns(&self) -> &Arc<PidNs> {
        &self.nrs[self.nrs.len() - 1].0
    }

    /// The number in the task's own namespace (`pid_vnr` as the task itself sees it).
    pub fn own(&self) -> u32 {
        self.nrs[self.nrs.len() - 1].1
    }

    /// The number in `ns` (`pid_nr_ns`), 0 if the task is not visible there.
    pub fn nr_in(&self, ns: &PidNs) -> u32 {
        match self.nrs.get(ns.level) {
            Some((n, nr)) if std::ptr::eq(&**n, ns) => *nr,
            _ => 0,
        }
    }

    /// Each level's namespace and number, from the root down.
    pub fn levels(&self) -> &[(Arc<PidNs>, u32)] {
        &self.nrs
    }

    /// The numbers from `ns`'s level down to the task's own (what `/proc/PID/status`'s
    /// `NSpid` lists, fs/proc/array.c); empty if the task is not visible in `ns`.
    pub fn numbers_from(&self, ns: &PidNs) -> Vec<u32> {
        if self.nr_in(ns) == 0 {
            return Vec::new();
        }
        self.nrs[ns.level..].iter().map(|&(_, nr)| nr).collect()
    }
}

/// Allocates a pid in `ns` and each of its ancestors (`alloc_pid`): the first process of a
/// fresh namespace gets 1 there. `ENOMEM` once the namespace's init has died, `EAGAIN`
/// when a level has no free number.
pub fn alloc(ns: &Arc<PidNs>) -> SysResult<Arc<Pid>> {
    let mut chain: Vec<Arc<PidNs>> = Vec::new();
    let mut n = Some(ns.clone());
    while let Some(x) = n {
        n = x.parent.clone();
        chain.push(x);
    }
    chain.reverse();
    // Lock every level, deepest last, so the entries go in together.
    let mut guards: Vec<_> = chain.iter().map(|x| lock(&x.st)).collect();
    if guards.last().is_some_and(|g| g.dead) {
        return Err(Errno::ENOMEM);
    }
    let mut nrs = Vec::with_capacity(chain.len());
    for (i, g) in guards.iter_mut().enumerate() {
        let nr = match PidNs::alloc_nr(g) {
            Ok(nr) => nr,
            Err(e) => {
                // Undo the levels already taken.
                for (j, &nr) in nrs.iter().enumerate().take(i) {
                    guards[j].map.remove(&nr);
                }
                return Err(e);
            }
        };
        // Reserve it now (the global id is only known once level 0 is done; fixed below).
        g.map.insert(nr, 0);
        nrs.push(nr);
    }
    let global = nrs[0];
    for (g, nr) in guards.iter_mut().zip(&nrs) {
        g.map.insert(*nr, global);
    }
    drop(guards);
    Ok(Arc::new(Pid {
        nrs: chain.into_iter().zip(nrs).collect(),
    }))
}

/// Allocates a number of the initial namespace (init and the task table's `alloc_pid`).
pub fn alloc_root() -> u32 {
    alloc(root()).map_or(0, |p| p.global())
}

/// Frees `pid`'s numbers (`free_pid`), at each level only if it still names this task.
pub fn free(pid: &Pid) {
    let g = pid.global();
    for (ns, nr) in &pid.nrs {
        let mut st = lock(&ns.st);
        if st.map.get(nr) == Some(&g) {
            st.map.remove(nr);
        }
    }
}

/// Frees the level-0 number `global` of a task made with [`Pid::root_only`].
pub fn free_global(global: u32) {
    let mut st = lock(&root().st);
    if st.map.get(&global) == Some(&global) {
        st.map.remove(&global);
    }
}

/// Whether `p` is the init of its namespace (not the initial one): `SIGNAL_UNKILLABLE`.
pub fn is_ns_init(p: &Process) -> bool {
    !p.pids.ns().is_root() && p.pids.own() == 1
}

/// Whether `a` and `b` live in the same pid namespace.
pub fn same_ns(a: &Process, b: &Process) -> bool {
    Arc::ptr_eq(a.pids.ns(), b.pids.ns())
}

/// Registers `p` as the init of its namespace if it is number 1 there (copy_process:
/// `is_child_reaper`).
pub fn on_fork(p: &Arc<Process>) {
    if is_ns_init(p) {
        *lock(&p.pids.ns().reaper) = Arc::downgrade(p);
    }
}

/// The process that adopts `p`'s orphans when no subreaper does (`find_child_reaper`): the
/// init of `p`'s namespace, or of the nearest ancestor namespace whose init lives (the
/// children of a dying namespace init go up a level).
pub fn child_reaper(k: &crate::kernel::Kernel, p: &Arc<Process>) -> Option<Arc<Process>> {
    let mut ns = Some(p.pids.ns().clone());
    while let Some(n) = ns {
        if n.is_root() {
            return k.tasks.process(1);
        }
        if let Some(r) = n.reaper()
            && !Arc::ptr_eq(&r, p)
            && lock(&r.exit).is_none()
        {
            return Some(r);
        }
        ns = n.parent.clone();
    }
    None
}

/// A namespace's init has exited (`zap_pid_ns_processes`): no more processes may enter, and
/// every other process of the namespace gets SIGKILL.
pub fn zap(k: &crate::kernel::Kernel, init: &Arc<Process>) {
    if !is_ns_init(init) {
        return;
    }
    let ns = init.pids.ns().clone();
    lock(&ns.st).dead = true;
    for p in k.tasks.processes() {
        if !Arc::ptr_eq(&p, init) && p.pids.nr_in(&ns) != 0 && lock(&p.exit).is_none() {
            crate::signal::send_to_process(
                k,
                &p,
                um_uapi::abi::signal::Siginfo::kill(crate::signal::SIGKILL, 0x80, 0, 0),
            );
        }
    }
}

/// The number of `p` (a process, its thread-group id) that `to` sees: what a signal's
/// `si_pid` says when `p` sends to `to`, and SIGCHLD's `si_pid` (`task_tgid_nr_ns`).
pub fn tgid_seen_by(p: &Process, to: &Process) -> u32 {
    p.pids.nr_in(to.pids.ns())
}

impl crate::nsfs::Namespace for PidNs {
    fn owner(&self) -> Option<Arc<crate::userns::UserNs>> {
        Some(self.owner.clone())
    }
    const KIND: &'static str = "pid";
    const NSTYPE: u64 = um_uapi::abi::sched::CloneFlags::NEWPID.bits();
    fn parent_ns(&self) -> Option<Arc<Self>> {
        self.parent.clone()
    }
    fn inum(&self) -> u64 {
        self.inum
    }
}

/// An open pid namespace file: setns(2) takes it.
pub type PidNsFile = crate::nsfs::NsFile<PidNs>;

/// The text of a `/proc/PID/ns/pid*` link (`ns_get_name`): "pid:[N]".
pub fn link_name(ns: &PidNs) -> Vec<u8> {
    crate::nsfs::link_name(ns)
}

/// A dentry for `ns`'s nsfs inode, where a `/proc/PID/ns/pid*` magic link leads.
pub fn ns_dentry(ns: &Arc<PidNs>) -> Arc<Dentry> {
    crate::nsfs::dentry(ns)
}

/// setns(2) into pid namespace `ns` (`pidns_install`): only the caller's namespace for
/// children changes, to `ns`, which must be the caller's own namespace or below it
/// (`EINVAL`); CAP_SYS_ADMIN (`EPERM`).
pub fn setns(p: &Process, ns: &Arc<PidNs>) -> SysResult<()> {
    if !crate::userns::may_install(p, &ns.owner) {
        return Err(Errno::EPERM);
    }
    if !p.pids.ns().is_ancestor_of(ns) {
        return Err(Errno::EINVAL);
    }
    *lock(&p.pid_ns_children) = ns.clone();
    Ok(())
}

/// unshare(CLONE_NEWPID) (`copy_pid_ns`): a new namespace below the caller's becomes its
/// namespace for children; `EINVAL` if that was already changed (unshare or setns).
pub fn unshare(p: &Process) -> SysResult<()> {
    let mut fc = lock(&p.pid_ns_children);
    if !Arc::ptr_eq(&fc, p.pids.ns()) {
        return Err(Errno::EINVAL);
    }
    *fc = PidNs::new_child(p.pids.ns())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_per_level_and_translation() {
        let a = PidNs::new_child(root()).unwrap();
        let b = PidNs::new_child(&a).unwrap();
        let p1 = alloc(&b).unwrap();
        let p2 = alloc(&b).unwrap();
        // The first process of a namespace is its 1.
        assert_eq!(p1.own(), 1);
        assert_eq!(p2.own(), 2);
        assert_eq!(p1.nr_in(&a), 1);
        assert_eq!(p1.nr_in(&b), 1);
        assert!(p1.global() > 0 && p1.nr_in(root()) == p1.global());
        assert_eq!(b.lookup(2), Some(p2.global()));
        assert_eq!(a.lookup(1), Some(p1.global()));
        assert_eq!(root().lookup(p2.global()), Some(p2.global()));
        assert_eq!(p1.numbers_from(root()), vec![p1.global(), 1, 1]);
        assert_eq!(p1.numbers_from(&a), vec![1, 1]);
        // A task of `a` is invisible in `b`.
        let q = alloc(&a).unwrap();
        assert_eq!(q.own(), 3);
        assert_eq!(q.nr_in(&b), 0);
        assert!(q.numbers_from(&b).is_empty());
        assert!(a.is_ancestor_of(&b) && !b.is_ancestor_of(&a) && root().is_ancestor_of(&b));
        free(&p2);
        assert_eq!(b.lookup(2), None);
        assert_eq!(root().lookup(p2.global()), None);
        free(&p1);
        free(&q);
    }

    #[test]
    fn last_pid_recycles_and_skips_used() {
        let a = PidNs::new_child(root()).unwrap();
        let v: Vec<_> = (0..5).map(|_| alloc(&a).unwrap()).collect();
        assert_eq!(a.last_pid(), 5);
        free(&v[2]);
        // ns_last_pid = 2: the next is 3 again.
        a.set_last_pid(2).unwrap();
        let r = alloc(&a).unwrap();
        assert_eq!(r.own(), 3);
        // Used numbers are skipped.
        a.set_last_pid(0).unwrap();
        assert_eq!(alloc(&a).unwrap().own(), 6);
        assert_eq!(a.set_last_pid(-1), Err(Errno::EINVAL));
        assert_eq!(a.set_last_pid(i64::from(PID_MAX)), Err(Errno::EINVAL));
        // Past RESERVED_PIDS the allocator wraps to 300, not 1.
        a.set_last_pid(i64::from(PID_MAX) - 1).unwrap();
        assert_eq!(alloc(&a).unwrap().own(), RESERVED_PIDS);
        // A dead namespace takes nobody.
        lock(&a.st).dead = true;
        assert_eq!(alloc(&a).err(), Some(Errno::ENOMEM));
    }

    #[test]
    fn depth_is_limited() {
        let mut ns = root().clone();
        for _ in 0..MAX_PID_NS_LEVEL {
            ns = PidNs::new_child(&ns).unwrap();
        }
        assert_eq!(PidNs::new_child(&ns).err(), Some(Errno::ENOSPC));
    }
}
