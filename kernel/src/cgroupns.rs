//! cgroup namespaces (Linux `kernel/cgroup/namespace.c`, cgroup_namespaces(7)).
//!
//! A [`CgroupNs`] virtualizes the view of the cgroup hierarchy: its root is the group its
//! creator was in when it was made, `/proc/PID/cgroup` shows paths relative to the reader's
//! namespace root (a group outside it as `/..`-prefixed, as `kernfs_path_from_node`), and a
//! `cgroup2` mount made inside shows that group as its root. The hierarchy itself lives in
//! `um-cgroup`, above this crate: a namespace holds its root as an opaque group id, which
//! `um-cgroup` asks for with [`root_group`]; it tells this module which group a process is
//! in through [`set_group_of`] (called once at boot), so a new namespace can take its
//! creator's group.
//!
//! Every process belongs to one namespace (`Process::cgroupns`, Linux
//! `nsproxy->cgroup_ns`), inherited at fork; `clone(CLONE_NEWCGROUP)` gives the child a new
//! one rooted at the child's group once it has joined it (so with `CLONE_INTO_CGROUP` the
//! target group, as `cgroup_post_fork`), `unshare(CLONE_NEWCGROUP)` one rooted at the
//! caller's group, `setns(2)` moves into an existing one (`cgroupns_install`: CAP_SYS_ADMIN
//! over the namespace's owner and in the caller's own user namespace). All need
//! CAP_SYS_ADMIN in the caller's user namespace (checked by the callers).
//!
//! Simplification (as the other namespaces here): per process, not per thread.

use crate::task::{Process, lock};
use crate::vfs::Dentry;
use std::sync::{Arc, OnceLock};
use um_uapi::{Errno, SysResult};

/// The initial cgroup namespace's inode number (include/linux/proc_ns.h
/// `PROC_CGROUP_INIT_INO`).
pub const INIT_INO: u64 = 0xEFFF_FFFB;

/// A cgroup namespace (Linux `struct cgroup_namespace`).
pub struct CgroupNs {
    inum: u64,
    /// The group at its root (`root_cset->dfl_cgrp`), `None` for the initial namespace: the
    /// hierarchy's root.
    root: Option<u64>,
    /// The user namespace that owns it (`ns.user_ns`).
    owner: Arc<crate::userns::UserNs>,
}

/// The initial namespace (`init_cgroup_ns`).
pub fn root() -> &'static Arc<CgroupNs> {
    static ROOT: OnceLock<Arc<CgroupNs>> = OnceLock::new();
    ROOT.get_or_init(|| {
        Arc::new(CgroupNs {
            inum: INIT_INO,
            root: None,
            owner: crate::userns::root().clone(),
        })
    })
}

/// Which group a process (by global pid) is in: `um-cgroup` sets it at boot.
static GROUP_OF: OnceLock<fn(u32) -> u64> = OnceLock::new();

/// Tells this module how to find a process's group (`um_cgroup::init`). Without it (a
/// kernel built without cgroups) every namespace is rooted at the hierarchy's root.
pub fn set_group_of(f: fn(u32) -> u64) {
    let _ = GROUP_OF.set(f);
}

fn group_of(pid: u32) -> Option<u64> {
    GROUP_OF.get().map(|f| f(pid))
}

impl CgroupNs {
    /// A new namespace rooted at group `root` (`copy_cgroup_ns`). Its inode number comes from
    /// [`crate::nsfs::alloc_inum`].
    fn new(root: Option<u64>, owner: Arc<crate::userns::UserNs>) -> Arc<CgroupNs> {
        Arc::new(CgroupNs {
            inum: crate::nsfs::alloc_inum(),
            root,
            owner,
        })
    }

    /// The namespace's inode number (`ns.inum`), shown in `cgroup:[N]`.
    pub fn inum(&self) -> u64 {
        self.inum
    }
}

/// The group at `ns`'s root, `None` for the hierarchy's root (the initial namespace).
pub fn root_group(ns: &CgroupNs) -> Option<u64> {
    ns.root
}

/// The namespace `p` belongs to.
pub fn of(p: &Process) -> Arc<CgroupNs> {
    lock(&p.cgroupns).clone()
}

/// The namespace of the task this host thread serves (the initial one if none): Linux's
/// `current->nsproxy->cgroup_ns`.
pub fn current() -> Arc<CgroupNs> {
    crate::current::current().map_or_else(|| root().clone(), |t| of(&t.process))
}

/// clone(CLONE_NEWCGROUP)'s part, after the child joined its group (`cgroup_post_fork`
/// re-roots the new namespace at the child's own css_set). The caller has checked
/// CAP_SYS_ADMIN.
pub fn on_fork(child: &Process) {
    let ns = CgroupNs::new(group_of(child.pid), crate::userns::of(child));
    *lock(&child.cgroupns) = ns;
}

/// unshare(CLONE_NEWCGROUP): the caller moves into a new namespace rooted at its group. The
/// caller has checked CAP_SYS_ADMIN.
pub fn unshare(p: &Process) {
    let ns = CgroupNs::new(group_of(p.pid), crate::userns::of(p));
    *lock(&p.cgroupns) = ns;
}

/// setns(2) into `ns` (`cgroupns_install`): CAP_SYS_ADMIN over its owner and in the caller's
/// own user namespace (`EPERM`).
pub fn setns(p: &Process, ns: &Arc<CgroupNs>) -> SysResult<()> {
    if !crate::userns::may_install(p, &ns.owner) {
        return Err(Errno::EPERM);
    }
    *lock(&p.cgroupns) = ns.clone();
    Ok(())
}

impl crate::nsfs::Namespace for CgroupNs {
    fn owner(&self) -> Option<Arc<crate::userns::UserNs>> {
        Some(self.owner.clone())
    }
    const KIND: &'static str = "cgroup";
    const NSTYPE: u64 = um_uapi::abi::sched::CloneFlags::NEWCGROUP.bits();
    fn inum(&self) -> u64 {
        self.inum
    }
}

/// An open cgroup namespace file: setns(2) takes it.
pub type CgroupNsFile = crate::nsfs::NsFile<CgroupNs>;

/// The text of a `/proc/PID/ns/cgroup` link (`ns_get_name`): "cgroup:[N]".
pub fn link_name(ns: &CgroupNs) -> Vec<u8> {
    crate::nsfs::link_name(ns)
}

/// A dentry for `ns`'s nsfs inode, where a `/proc/PID/ns/cgroup` magic link leads.
pub fn ns_dentry(ns: &Arc<CgroupNs>) -> Arc<Dentry> {
    crate::nsfs::dentry(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_namespace_is_rooted_at_the_hierarchy_root() {
        assert_eq!(root().inum(), INIT_INO);
        assert_eq!(root_group(root()), None);
        assert_eq!(
            crate::nsfs::link_name(&**root()),
            b"cgroup:[4026531835]".to_vec()
        );
    }
}
