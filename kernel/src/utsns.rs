//! UTS namespaces (Linux `kernel/utsname.c`, `kernel/nsproxy.c`, uts_namespaces(7)).
//!
//! A [`UtsNs`] is an identity (its nsfs inode number, shown in `uts:[N]`) plus the two names
//! a namespace may change: the host name (`nodename`) and the NIS domain name. The other
//! `uname` fields are the same everywhere and stay in [`crate::kernel::Uts`]. The initial
//! namespace keeps its names in `Kernel::uts` as before ([`UtsNs::nodename`] leads there),
//! so nothing changes for a system that never makes another one.
//!
//! Every process belongs to one namespace (`Process::utsns`, Linux `nsproxy->uts_ns`),
//! inherited at fork; `clone(CLONE_NEWUTS)` puts the child in a new one ([`on_fork`]),
//! `unshare(CLONE_NEWUTS)` moves the caller into a new one ([`unshare`]) and `setns(2)` on a
//! `/proc/PID/ns/uts` descriptor (or a pidfd) into an existing one ([`setns`]); all three
//! need CAP_SYS_ADMIN. A new namespace starts with a copy of its creator's names
//! (`copy_utsname` → `clone_uts_ns`). sethostname(2), setdomainname(2), uname(2) and
//! `/proc/sys/kernel/{hostname,domainname}` act on the caller's namespace.
//!
//! Simplification (as network namespaces here): namespaces are per process, not per thread.

use crate::kernel::Kernel;
use crate::task::{Process, lock};
use crate::vfs::Dentry;
use std::sync::{Arc, Mutex, OnceLock};
use um_uapi::{Errno, SysResult};

/// The initial UTS namespace's inode number (include/linux/proc_ns.h `PROC_UTS_INIT_INO`).
pub const INIT_INO: u64 = 0xEFFF_FFFE;

/// A UTS namespace (Linux `struct uts_namespace`).
pub struct UtsNs {
    inum: u64,
    /// The names of a namespace other than the initial one: (nodename, domainname). The
    /// initial namespace's are `Kernel::uts`'s.
    names: Option<(Mutex<String>, Mutex<String>)>,
    /// The user namespace that owns it (`ns.user_ns`): its capability checks are made there.
    owner: Arc<crate::userns::UserNs>,
}

/// The initial namespace (`init_uts_ns`).
pub fn root() -> &'static Arc<UtsNs> {
    static ROOT: OnceLock<Arc<UtsNs>> = OnceLock::new();
    ROOT.get_or_init(|| {
        Arc::new(UtsNs {
            inum: INIT_INO,
            names: None,
            owner: crate::userns::root().clone(),
        })
    })
}

impl UtsNs {
    /// A new namespace with a copy of `from`'s names (`clone_uts_ns`). Its inode number
    /// comes from [`crate::nsfs::alloc_inum`].
    pub fn new_from(k: &Kernel, from: &UtsNs, owner: Arc<crate::userns::UserNs>) -> Arc<UtsNs> {
        let node = lock(from.nodename(k)).clone();
        let domain = lock(from.domainname(k)).clone();
        Arc::new(UtsNs {
            inum: crate::nsfs::alloc_inum(),
            names: Some((Mutex::new(node), Mutex::new(domain))),
            owner,
        })
    }

    /// The namespace's inode number (`ns.inum`), shown in `uts:[N]`.
    pub fn inum(&self) -> u64 {
        self.inum
    }

    /// The host name (`utsname()->nodename`).
    pub fn nodename<'a>(&'a self, k: &'a Kernel) -> &'a Mutex<String> {
        self.names.as_ref().map_or(&k.uts.nodename, |n| &n.0)
    }

    /// The NIS domain name (`utsname()->domainname`).
    pub fn domainname<'a>(&'a self, k: &'a Kernel) -> &'a Mutex<String> {
        self.names.as_ref().map_or(&k.uts.domainname, |n| &n.1)
    }
}

/// The namespace `p` belongs to.
pub fn of(p: &Process) -> Arc<UtsNs> {
    lock(&p.utsns).clone()
}

/// The namespace of the task this host thread serves (the initial one if none): Linux's
/// `current->nsproxy->uts_ns`.
pub fn current() -> Arc<UtsNs> {
    crate::current::current().map_or_else(|| root().clone(), |t| of(&t.process))
}

/// clone(CLONE_NEWUTS)'s part (`copy_namespaces`): the new process `child`, which inherited
/// its parent's namespace, gets a copy of it. The caller has checked CAP_SYS_ADMIN.
pub fn on_fork(k: &Kernel, child: &Process) {
    let ns = UtsNs::new_from(k, &of(child), crate::userns::of(child));
    *lock(&child.utsns) = ns;
}

/// unshare(CLONE_NEWUTS): the caller moves into a copy of its namespace at once. The caller
/// has checked CAP_SYS_ADMIN.
pub fn unshare(k: &Kernel, p: &Process) {
    let ns = UtsNs::new_from(k, &of(p), crate::userns::of(p));
    *lock(&p.utsns) = ns;
}

/// setns(2) into `ns` (`utsns_install`): CAP_SYS_ADMIN (`EPERM`); the caller moves.
pub fn setns(p: &Process, ns: &Arc<UtsNs>) -> SysResult<()> {
    if !crate::userns::may_install(p, &ns.owner) {
        return Err(Errno::EPERM);
    }
    *lock(&p.utsns) = ns.clone();
    Ok(())
}

impl crate::nsfs::Namespace for UtsNs {
    fn owner(&self) -> Option<Arc<crate::userns::UserNs>> {
        Some(self.owner.clone())
    }
    const KIND: &'static str = "uts";
    const NSTYPE: u64 = um_uapi::abi::sched::CloneFlags::NEWUTS.bits();
    fn inum(&self) -> u64 {
        self.inum
    }
}

/// An open UTS namespace file: setns(2) takes it.
pub type UtsNsFile = crate::nsfs::NsFile<UtsNs>;

/// The text of a `/proc/PID/ns/uts` link (`ns_get_name`): "uts:[N]".
pub fn link_name(ns: &UtsNs) -> Vec<u8> {
    crate::nsfs::link_name(ns)
}

/// A dentry for `ns`'s nsfs inode, where a `/proc/PID/ns/uts` magic link leads.
pub fn ns_dentry(ns: &Arc<UtsNs>) -> Arc<Dentry> {
    crate::nsfs::dentry(ns)
}
