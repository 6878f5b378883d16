//! The cgroup v2 hierarchy itself, without files (Linux `kernel/cgroup/cgroup.c`): groups,
//! their parent/child links, which process is in which group, and the rules of
//! `mkdir`/`rmdir`, `cgroup.max.depth`/`cgroup.max.descendants` and migration.
//!
//! Pure data behind one lock (the caller's, [`super::hierarchy`]), so the rules are unit
//! tested here without a kernel. Groups are named by a [`CgId`]: the root is [`ROOT`]; a
//! removed group's id is never reused, so a stale id (an open descriptor of a removed
//! directory) is simply "dead" (`ENODEV`, as `cgroup_kn_lock_live`).
//!
//! Membership is per process (thread group), keyed by the global pid: Linux keeps it per
//! thread, but threads can only leave their process's group in threaded subtrees, which are
//! not implemented. Neighbours: [`super`] (locking, hooks, procfs lines), [`super::fs`] (the
//! files).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use um_uapi::{Errno, SysResult};

/// A group's identity (also the base of its inode numbers).
pub type CgId = u64;

/// The root group.
pub const ROOT: CgId = 1;

/// `cgroup.max.depth` / `cgroup.max.descendants` default: `INT_MAX`, shown as `max`.
pub const LIMIT_MAX: u32 = i32::MAX as u32;

/// The controllers, as bits of a mask (`ss_mask`), with their names in that order.
pub const CONTROLLERS: [&str; 1] = ["pids"];
/// The pids controller's bit (kernel/cgroup/pids.c).
pub const PIDS: u32 = 1;
/// Every controller.
pub const ALL_CONTROLLERS: u32 = PIDS;

/// One group.
#[derive(Debug)]
pub struct Group {
    pub name: Vec<u8>,
    pub parent: Option<CgId>,
    pub children: BTreeMap<Vec<u8>, CgId>,
    /// Member processes (thread-group ids).
    pub procs: BTreeSet<u32>,
    /// `cgroup.max.depth`.
    pub max_depth: u32,
    /// `cgroup.max.descendants`.
    pub max_descendants: u32,
    /// Live descendants (`cgroup->nr_descendants`).
    pub nr_descendants: u32,
    /// `cgroup.subtree_control`: the controllers enabled for the children.
    pub subtree_control: u32,
    /// `pids.max` (`None`: `max`).
    pub pids_max: Option<u64>,
    /// `pids.events` `max`: forks refused because of this group's `pids.max`.
    pub pids_events_max: u64,
    /// Directory owner and permission bits (kernfs keeps them; chmod/chown change them).
    pub uid: u32,
    pub gid: u32,
    pub perm: u32,
    /// Creation time (realtime), for the inode times.
    pub ctime: (i64, i64),
}

impl Group {
    fn new(name: &[u8], parent: Option<CgId>, uid: u32, gid: u32, perm: u32) -> Group {
        Group {
            name: name.to_vec(),
            parent,
            children: BTreeMap::new(),
            procs: BTreeSet::new(),
            max_depth: LIMIT_MAX,
            max_descendants: LIMIT_MAX,
            nr_descendants: 0,
            subtree_control: 0,
            pids_max: None,
            pids_events_max: 0,
            uid,
            gid,
            perm,
            ctime: (0, 0),
        }
    }
}

/// The one cgroup v2 hierarchy.
#[derive(Debug)]
pub struct Hierarchy {
    groups: HashMap<CgId, Group>,
    /// pid -> group, for the processes not in the root (absent: the root).
    member: HashMap<u32, CgId>,
    next_id: CgId,
}

impl Default for Hierarchy {
    fn default() -> Self {
        let mut groups = HashMap::new();
        groups.insert(ROOT, Group::new(b"", None, 0, 0, 0o755));
        Hierarchy {
            groups,
            member: HashMap::new(),
            next_id: ROOT + 1,
        }
    }
}

impl Hierarchy {
    /// The group `id`, or `ENODEV` once it is removed (`cgroup_kn_lock_live`).
    pub fn get(&self, id: CgId) -> SysResult<&Group> {
        self.groups.get(&id).ok_or(Errno::ENODEV)
    }

    /// Mutable access to the group `id`, or `ENODEV`.
    pub fn get_mut(&mut self, id: CgId) -> SysResult<&mut Group> {
        self.groups.get_mut(&id).ok_or(Errno::ENODEV)
    }

    /// The number of live groups, the root included (`cgroup_root.nr_cgrps`).
    pub fn count(&self) -> usize {
        self.groups.len()
    }

    /// Whether `id` is a live group.
    pub fn alive(&self, id: CgId) -> bool {
        self.groups.contains_key(&id)
    }

    /// The child `name` of `parent`.
    pub fn child(&self, parent: CgId, name: &[u8]) -> Option<CgId> {
        self.groups.get(&parent)?.children.get(name).copied()
    }

    /// The group of process `pid` (the root for one never moved).
    pub fn group_of(&self, pid: u32) -> CgId {
        self.member.get(&pid).copied().unwrap_or(ROOT)
    }

    /// The path of `id` from the root (`/` for the root), as `/proc/PID/cgroup` shows it.
    pub fn path(&self, id: CgId) -> Vec<u8> {
        let mut parts = Vec::new();
        let mut cur = Some(id);
        while let Some(c) = cur {
            let Some(g) = self.groups.get(&c) else { break };
            if g.parent.is_some() {
                parts.push(g.name.clone());
            }
            cur = g.parent;
        }
        let mut out = Vec::new();
        for p in parts.iter().rev() {
            out.push(b'/');
            out.extend_from_slice(p);
        }
        if out.is_empty() {
            out.push(b'/');
        }
        out
    }

    /// `cgroup->level`: 0 for the root.
    pub fn level(&self, id: CgId) -> u32 {
        let mut n = 0;
        let mut cur = self.groups.get(&id).and_then(|g| g.parent);
        while let Some(c) = cur {
            n += 1;
            cur = self.groups.get(&c).and_then(|g| g.parent);
        }
        n
    }

    /// Whether `id` or a descendant has a member (`cgroup_is_populated`).
    pub fn populated(&self, id: CgId) -> bool {
        let Some(g) = self.groups.get(&id) else {
            return false;
        };
        !g.procs.is_empty() || g.children.values().any(|&c| self.populated(c))
    }

    /// `cgroup_check_hierarchy_limits`: whether a new child of `parent` stays within every
    /// ancestor's `cgroup.max.descendants` and `cgroup.max.depth`.
    fn within_limits(&self, parent: CgId) -> bool {
        let mut level = 1;
        let mut cur = Some(parent);
        while let Some(c) = cur {
            let Some(g) = self.groups.get(&c) else {
                return false;
            };
            if g.nr_descendants >= g.max_descendants || level > g.max_depth {
                return false;
            }
            level += 1;
            cur = g.parent;
        }
        true
    }

    /// `cgroup_mkdir`: a new empty child `name` of `parent`. `reserved` says whether the name
    /// is taken by one of the directory's files (`EEXIST`, as kernfs finds the file).
    pub fn mkdir(
        &mut self,
        parent: CgId,
        name: &[u8],
        uid: u32,
        gid: u32,
        perm: u32,
        reserved: impl Fn(&[u8]) -> bool,
    ) -> SysResult<CgId> {
        // A group's name cannot hold a newline: /proc/PID/cgroup is line based.
        if name.contains(&b'\n') {
            return Err(Errno::EINVAL);
        }
        let p = self.get(parent)?;
        if p.children.contains_key(name) || reserved(name) {
            return Err(Errno::EEXIST);
        }
        if !self.within_limits(parent) {
            return Err(Errno::EAGAIN);
        }
        let id = self.next_id;
        self.next_id += 1;
        self.groups
            .insert(id, Group::new(name, Some(parent), uid, gid, perm));
        let mut cur = Some(parent);
        while let Some(c) = cur {
            let g = self.get_mut(c)?;
            g.nr_descendants += 1;
            cur = g.parent;
        }
        self.get_mut(parent)?.children.insert(name.to_vec(), id);
        Ok(id)
    }

    /// `cgroup_rmdir` / `cgroup_destroy_locked`: removes the empty child `name` of `parent`;
    /// `EBUSY` while it has members or children.
    pub fn rmdir(&mut self, parent: CgId, name: &[u8]) -> SysResult<CgId> {
        let id = self.get(parent)?.children.get(name).copied();
        let id = id.ok_or(Errno::ENOENT)?;
        let g = self.get(id)?;
        if !g.procs.is_empty() || !g.children.is_empty() {
            return Err(Errno::EBUSY);
        }
        self.groups.remove(&id);
        self.get_mut(parent)?.children.remove(name);
        let mut cur = Some(parent);
        while let Some(c) = cur {
            let g = self.get_mut(c)?;
            g.nr_descendants -= 1;
            cur = g.parent;
        }
        Ok(id)
    }

    /// Moves process `pid` into `dst` (`cgroup_attach_task` for a whole thread group).
    pub fn attach(&mut self, pid: u32, dst: CgId) -> SysResult<()> {
        self.get(dst)?;
        let src = self.group_of(pid);
        if src == dst {
            return Ok(());
        }
        if let Some(g) = self.groups.get_mut(&src) {
            g.procs.remove(&pid);
        }
        self.insert(pid, dst);
        Ok(())
    }

    fn insert(&mut self, pid: u32, dst: CgId) {
        if dst == ROOT {
            self.member.remove(&pid);
        } else {
            self.member.insert(pid, dst);
        }
        if let Some(g) = self.groups.get_mut(&dst) {
            g.procs.insert(pid);
        }
    }

    /// A new process `child` (`cgroup_post_fork`): into `into` (`CLONE_INTO_CGROUP`, checked
    /// by the caller) or its creator's group.
    pub fn fork(&mut self, creator: u32, child: u32, into: Option<CgId>) {
        let dst = into
            .filter(|&d| self.alive(d))
            .unwrap_or_else(|| self.group_of(creator));
        // A pid handed out again after a failed clone must not stay in two groups.
        self.exit(child);
        self.insert(child, dst);
    }

    /// Process `pid` exited (`cgroup_exit`): it leaves its group.
    pub fn exit(&mut self, pid: u32) {
        let g = self.group_of(pid);
        self.member.remove(&pid);
        if let Some(g) = self.groups.get_mut(&g) {
            g.procs.remove(&pid);
        }
    }

    /// `cgroup.controllers` (`cgroup_control`): every controller at the root, else what the
    /// parent enables for its children.
    pub fn controllers(&self, id: CgId) -> u32 {
        match self.groups.get(&id).and_then(|g| g.parent) {
            None => ALL_CONTROLLERS,
            Some(p) => self.groups.get(&p).map_or(0, |p| p.subtree_control),
        }
    }

    /// A write to `cgroup.subtree_control` (`cgroup_subtree_control_write`) after parsing:
    /// controllers to enable and to disable. Enabling needs the controller in the group's
    /// own `cgroup.controllers` (`ENOENT`); disabling one a child still enables for its own
    /// children is `EBUSY`. Only pids exists, a threaded controller, so the no-internal-process
    /// rule (`cgroup_vet_subtree_control_enable`) never applies. A child whose controller
    /// goes away loses its settings, as its css is destroyed.
    pub fn set_subtree_control(&mut self, id: CgId, enable: u32, disable: u32) -> SysResult<()> {
        let control = self.controllers(id);
        let g = self.get(id)?;
        let enable = enable & !g.subtree_control;
        let disable = disable & g.subtree_control;
        if enable & !control != 0 {
            return Err(Errno::ENOENT);
        }
        let children: Vec<CgId> = g.children.values().copied().collect();
        for &c in &children {
            if self.get(c)?.subtree_control & disable != 0 {
                return Err(Errno::EBUSY);
            }
        }
        let g = self.get_mut(id)?;
        g.subtree_control = (g.subtree_control | enable) & !disable;
        if disable & PIDS != 0 {
            for c in children {
                let g = self.get_mut(c)?;
                g.pids_max = None;
                g.pids_events_max = 0;
            }
        }
        Ok(())
    }

    /// The member processes of `id` and its descendants.
    pub fn subtree_procs(&self, id: CgId) -> Vec<u32> {
        let mut out = Vec::new();
        let mut stack = vec![id];
        while let Some(c) = stack.pop() {
            if let Some(g) = self.groups.get(&c) {
                out.extend(g.procs.iter().copied());
                stack.extend(g.children.values().copied());
            }
        }
        out
    }

    /// `pids_try_charge`: whether one more task fits every `pids.max` from `id` up, with
    /// `current(group)` the tasks a group (with its descendants) has now. The group whose
    /// limit refuses counts the event (`pids.events` `max`) and the answer is `EAGAIN`.
    pub fn pids_try_charge(
        &mut self,
        id: CgId,
        current: impl Fn(&Self, CgId) -> u64,
    ) -> SysResult<()> {
        let mut cur = Some(id);
        while let Some(c) = cur {
            let on = self.controllers(c) & PIDS != 0;
            let g = self.get(c)?;
            let parent = g.parent;
            if let (true, Some(max)) = (on && parent.is_some(), g.pids_max) {
                if current(self, c) + 1 > max {
                    self.get_mut(c)?.pids_events_max += 1;
                    return Err(Errno::EAGAIN);
                }
            }
            cur = parent;
        }
        Ok(())
    }

    /// Whether `c` is `of` or below it (`cgroup_is_descendant`).
    pub fn is_descendant(&self, c: CgId, of: CgId) -> bool {
        let mut cur = Some(c);
        while let Some(x) = cur {
            if x == of {
                return true;
            }
            cur = self.groups.get(&x).and_then(|g| g.parent);
        }
        false
    }

    /// The path of `to` as seen from `from` (a cgroup namespace's root), as
    /// `kernfs_path_from_node` writes it: `/` for `from` itself, one `/..` per level from
    /// `from` up to the common ancestor, then the names down to `to`.
    pub fn path_from(&self, to: CgId, from: CgId) -> Vec<u8> {
        if to == from {
            return b"/".to_vec();
        }
        let common = self.common_ancestor(to, from);
        let mut out = Vec::new();
        for _ in 0..self.level(from).saturating_sub(self.level(common)) {
            out.extend_from_slice(b"/..");
        }
        let mut names = Vec::new();
        let mut cur = to;
        while cur != common {
            let Some(g) = self.groups.get(&cur) else {
                break;
            };
            names.push(g.name.clone());
            match g.parent {
                Some(p) => cur = p,
                None => break,
            }
        }
        for n in names.iter().rev() {
            out.push(b'/');
            out.extend_from_slice(n);
        }
        if out.is_empty() {
            out.push(b'/');
        }
        out
    }

    /// The lowest common ancestor of `a` and `b` (for the migration permission check).
    pub fn common_ancestor(&self, a: CgId, b: CgId) -> CgId {
        let chain = |mut c: CgId| {
            let mut v = vec![c];
            while let Some(p) = self.groups.get(&c).and_then(|g| g.parent) {
                v.push(p);
                c = p;
            }
            v
        };
        let ca = chain(a);
        let cb: BTreeSet<CgId> = chain(b).into_iter().collect();
        ca.into_iter().find(|c| cb.contains(c)).unwrap_or(ROOT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &[u8]) -> bool {
        false
    }

    #[test]
    fn paths_from_a_namespace_root() {
        let mut h = Hierarchy::default();
        let a = h.mkdir(ROOT, b"a", 0, 0, 0o755, none).unwrap();
        let b = h.mkdir(a, b"b", 0, 0, 0o755, none).unwrap();
        let c = h.mkdir(ROOT, b"c", 0, 0, 0o755, none).unwrap();
        let d = h.mkdir(c, b"d", 0, 0, 0o755, none).unwrap();
        assert_eq!(h.path_from(a, a), b"/");
        assert_eq!(h.path_from(b, a), b"/b");
        assert_eq!(h.path_from(ROOT, a), b"/..");
        assert_eq!(h.path_from(c, b), b"/../../c");
        assert_eq!(h.path_from(d, b), b"/../../c/d");
        assert_eq!(h.path_from(d, ROOT), h.path(d));
        assert!(h.is_descendant(b, a) && h.is_descendant(a, a) && !h.is_descendant(a, b));
        assert!(!h.is_descendant(c, a) && h.is_descendant(d, ROOT));
    }

    #[test]
    fn mkdir_rmdir_and_paths() {
        let mut h = Hierarchy::default();
        let a = h.mkdir(ROOT, b"a", 0, 0, 0o755, none).unwrap();
        let b = h.mkdir(a, b"b", 0, 0, 0o755, none).unwrap();
        assert_eq!(h.path(ROOT), b"/");
        assert_eq!(h.path(b), b"/a/b");
        assert_eq!(h.level(b), 2);
        assert_eq!(h.get(ROOT).unwrap().nr_descendants, 2);
        assert_eq!(h.mkdir(ROOT, b"a", 0, 0, 0o755, none), Err(Errno::EEXIST));
        assert_eq!(
            h.mkdir(ROOT, b"cgroup.procs", 0, 0, 0o755, |n| n == b"cgroup.procs"),
            Err(Errno::EEXIST)
        );
        assert_eq!(
            h.mkdir(ROOT, b"x\ny", 0, 0, 0o755, none),
            Err(Errno::EINVAL)
        );
        assert_eq!(h.rmdir(ROOT, b"a"), Err(Errno::EBUSY));
        assert_eq!(h.rmdir(a, b"b"), Ok(b));
        assert_eq!(h.get(b).unwrap_err(), Errno::ENODEV);
        assert_eq!(h.rmdir(a, b"b"), Err(Errno::ENOENT));
        assert_eq!(h.rmdir(ROOT, b"a"), Ok(a));
        assert_eq!(h.get(ROOT).unwrap().nr_descendants, 0);
        // A removed group's id is not handed out again.
        let c = h.mkdir(ROOT, b"a", 0, 0, 0o755, none).unwrap();
        assert!(c > b);
        assert_eq!(h.mkdir(a, b"z", 0, 0, 0o755, none), Err(Errno::ENODEV));
    }

    #[test]
    fn membership_follows_fork_attach_and_exit() {
        let mut h = Hierarchy::default();
        let a = h.mkdir(ROOT, b"a", 0, 0, 0o755, none).unwrap();
        let b = h.mkdir(a, b"b", 0, 0, 0o755, none).unwrap();
        h.fork(1, 10, None);
        assert_eq!(h.group_of(10), ROOT);
        h.attach(10, b).unwrap();
        assert!(h.populated(a) && h.populated(b));
        assert_eq!(h.rmdir(a, b"b"), Err(Errno::EBUSY));
        h.fork(10, 11, None);
        h.fork(10, 12, Some(a));
        assert_eq!(h.group_of(11), b);
        assert_eq!(h.group_of(12), a);
        assert_eq!(
            h.get(b).unwrap().procs.iter().copied().collect::<Vec<_>>(),
            [10, 11]
        );
        h.exit(10);
        h.exit(11);
        assert!(!h.populated(b) && h.populated(a));
        h.attach(12, ROOT).unwrap();
        assert!(!h.populated(a));
        assert_eq!(h.attach(12, 999), Err(Errno::ENODEV));
        assert_eq!(h.rmdir(a, b"b"), Ok(b));
        assert_eq!(h.common_ancestor(a, ROOT), ROOT);
    }

    #[test]
    fn subtree_control_and_pids_limits() {
        let mut h = Hierarchy::default();
        let a = h.mkdir(ROOT, b"a", 0, 0, 0o755, none).unwrap();
        let b = h.mkdir(a, b"b", 0, 0, 0o755, none).unwrap();
        assert_eq!(h.controllers(ROOT), PIDS);
        assert_eq!(h.controllers(a), 0);
        assert_eq!(h.set_subtree_control(a, PIDS, 0), Err(Errno::ENOENT));
        h.set_subtree_control(ROOT, PIDS, 0).unwrap();
        assert_eq!(h.controllers(a), PIDS);
        h.set_subtree_control(a, PIDS, 0).unwrap();
        assert_eq!(h.controllers(b), PIDS);
        assert_eq!(h.set_subtree_control(ROOT, 0, PIDS), Err(Errno::EBUSY));
        // Nothing to change is no error.
        h.set_subtree_control(ROOT, PIDS, 0).unwrap();
        h.get_mut(a).unwrap().pids_max = Some(2);
        h.fork(1, 10, Some(b));
        h.fork(1, 11, Some(b));
        let count = |h: &Hierarchy, c: CgId| h.subtree_procs(c).len() as u64;
        assert_eq!(h.pids_try_charge(b, count), Err(Errno::EAGAIN));
        assert_eq!(h.get(a).unwrap().pids_events_max, 1);
        // The root has no limit of its own.
        assert_eq!(h.pids_try_charge(ROOT, count), Ok(()));
        h.exit(11);
        assert_eq!(h.pids_try_charge(b, count), Ok(()));
        h.set_subtree_control(a, 0, PIDS).unwrap();
        h.set_subtree_control(ROOT, 0, PIDS).unwrap();
        assert_eq!(h.get(a).unwrap().pids_max, None);
        assert_eq!(h.pids_try_charge(b, count), Ok(()));
    }

    #[test]
    fn depth_and_descendant_limits() {
        let mut h = Hierarchy::default();
        let a = h.mkdir(ROOT, b"a", 0, 0, 0o755, none).unwrap();
        h.get_mut(a).unwrap().max_depth = 1;
        let b = h.mkdir(a, b"b", 0, 0, 0o755, none).unwrap();
        assert_eq!(h.mkdir(b, b"c", 0, 0, 0o755, none), Err(Errno::EAGAIN));
        h.get_mut(a).unwrap().max_descendants = 1;
        h.get_mut(a).unwrap().max_depth = LIMIT_MAX;
        assert_eq!(h.mkdir(a, b"d", 0, 0, 0o755, none), Err(Errno::EAGAIN));
        assert_eq!(h.mkdir(b, b"c", 0, 0, 0o755, none), Err(Errno::EAGAIN));
        h.get_mut(a).unwrap().max_descendants = 2;
        let c = h.mkdir(b, b"c", 0, 0, 0o755, none).unwrap();
        assert_eq!(h.common_ancestor(c, a), a);
        assert_eq!(h.common_ancestor(c, b), b);
    }
}
