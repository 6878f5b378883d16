//! IPC namespaces (Linux `ipc/namespace.c`, `kernel/nsproxy.c`, ipc_namespaces(7)).
//!
//! An [`IpcNs`] is an identity (its nsfs inode number, shown in `ipc:[N]`) plus the System V
//! IPC tables that `um_ipc` keeps in it, found by type ([`IpcNs::generic`]: the kernel crate
//! cannot see the IPC types). Every process belongs to one namespace (`Process::ipcns`, Linux
//! `nsproxy->ipc_ns`), inherited at fork; `clone(CLONE_NEWIPC)` puts the child in a new, empty
//! one ([`on_fork`]), `unshare(CLONE_NEWIPC)` moves the caller into a new one ([`unshare`]) and
//! `setns(2)` on a `/proc/PID/ns/ipc` descriptor (or a pidfd) into an existing one
//! ([`setns`]); all three need CAP_SYS_ADMIN. When the last reference goes (its last process,
//! and any open nsfs file), the tables drop with it (`free_ipc_ns`); a shared memory segment
//! still mapped keeps its pages until unmapped, as the mappings hold them.
//!
//! Simplifications: namespaces are per process, not per thread; the limits in
//! `/proc/sys/kernel` (`shmmax`, `msgmnb`, `sem`, ...) stay system-wide.

use crate::task::{Process, lock};
use crate::vfs::Dentry;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use um_uapi::{Errno, SysResult};

/// The initial IPC namespace's inode number (include/linux/proc_ns.h `PROC_IPC_INIT_INO`).
pub const INIT_INO: u64 = 0xEFFF_FFFF;

/// An IPC namespace (Linux `struct ipc_namespace`).
pub struct IpcNs {
    inum: u64,
    generic: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
    /// The user namespace that owns it (`ns.user_ns`): its capability checks are made there.
    owner: Arc<crate::userns::UserNs>,
}

/// The initial namespace (`init_ipc_ns`).
pub fn root() -> &'static Arc<IpcNs> {
    static ROOT: OnceLock<Arc<IpcNs>> = OnceLock::new();
    ROOT.get_or_init(|| {
        Arc::new(IpcNs {
            inum: INIT_INO,
            generic: Mutex::default(),
            owner: crate::userns::root().clone(),
        })
    })
}

impl IpcNs {
    /// A new, empty namespace (`create_ipc_ns`). Its inode number comes from
    /// [`crate::nsfs::alloc_inum`].
    pub fn new(owner: Arc<crate::userns::UserNs>) -> Arc<IpcNs> {
        Arc::new(IpcNs {
            inum: crate::nsfs::alloc_inum(),
            generic: Mutex::default(),
            owner,
        })
    }

    /// The namespace's inode number (`ns.inum`), shown in `ipc:[N]`.
    pub fn inum(&self) -> u64 {
        self.inum
    }

    /// The namespace's state of type `T`, made (empty) on first use.
    pub fn generic<T: Any + Send + Sync + Default>(&self) -> Arc<T> {
        let id = TypeId::of::<T>();
        let mut g = lock(&self.generic);
        if let Some(s) = g.get(&id)
            && let Ok(t) = s.clone().downcast::<T>()
        {
            return t;
        }
        let t = Arc::new(T::default());
        g.insert(id, t.clone());
        t
    }
}

/// The namespace `p` belongs to.
pub fn of(p: &Process) -> Arc<IpcNs> {
    lock(&p.ipcns).clone()
}

/// The namespace of the task this host thread serves (the initial one if none): Linux's
/// `current->nsproxy->ipc_ns`.
pub fn current() -> Arc<IpcNs> {
    crate::current::current().map_or_else(|| root().clone(), |t| of(&t.process))
}

/// clone(CLONE_NEWIPC)'s part (`copy_ipcs`): the new process `child` gets a new namespace.
/// The caller has checked CAP_SYS_ADMIN.
pub fn on_fork(child: &Process) {
    *lock(&child.ipcns) = IpcNs::new(crate::userns::of(child));
}

/// unshare(CLONE_NEWIPC): the caller moves into a new namespace at once. The caller has
/// checked CAP_SYS_ADMIN.
pub fn unshare(p: &Process) {
    *lock(&p.ipcns) = IpcNs::new(crate::userns::of(p));
}

/// setns(2) into `ns` (`ipcns_install`): CAP_SYS_ADMIN (`EPERM`); the caller moves.
pub fn setns(p: &Process, ns: &Arc<IpcNs>) -> SysResult<()> {
    if !crate::userns::may_install(p, &ns.owner) {
        return Err(Errno::EPERM);
    }
    *lock(&p.ipcns) = ns.clone();
    Ok(())
}

impl crate::nsfs::Namespace for IpcNs {
    fn owner(&self) -> Option<Arc<crate::userns::UserNs>> {
        Some(self.owner.clone())
    }
    const KIND: &'static str = "ipc";
    const NSTYPE: u64 = um_uapi::abi::sched::CloneFlags::NEWIPC.bits();
    fn inum(&self) -> u64 {
        self.inum
    }
}

/// An open IPC namespace file: setns(2) takes it; it holds the namespace alive.
pub type IpcNsFile = crate::nsfs::NsFile<IpcNs>;

/// The text of a `/proc/PID/ns/ipc` link (`ns_get_name`): "ipc:[N]".
pub fn link_name(ns: &IpcNs) -> Vec<u8> {
    crate::nsfs::link_name(ns)
}

/// A dentry for `ns`'s nsfs inode, where a `/proc/PID/ns/ipc` magic link leads.
pub fn ns_dentry(ns: &Arc<IpcNs>) -> Arc<Dentry> {
    crate::nsfs::dentry(ns)
}
