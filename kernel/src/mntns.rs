//! Mount namespaces (Linux `fs/namespace.c` `struct mnt_namespace`, mount_namespaces(7)): the
//! identity and ownership half.
//!
//! A [`MntNs`] is an nsfs identity (`mnt:[N]`) plus an opaque mount table that the fs crate
//! owns (`um_fs::mount`: the mounts, their ids, peer groups): this crate holds processes and
//! cannot name the fs crate's types, so the table is a `dyn Any` that `um_fs::mount` fills on
//! first use and downcasts. Every process belongs to one namespace (`Process::mntns`, Linux
//! `nsproxy->mnt_ns`), inherited at fork; `clone(CLONE_NEWNS)` gives the child a copy
//! ([`copy_of`]), `unshare(CLONE_NEWNS)` moves the caller into a copy ([`unshare`]), and
//! `setns(2)` enters one (`um_fs::mount::setns`, which also moves root and cwd). Copying
//! a table is the fs crate's work ([`set_copy_hook`]). A namespace, and the mounts only it
//! holds, dies with its last process and the last open `/proc/PID/ns/mnt` descriptor.
//!
//! Simplification (as network and UTS namespaces here): namespaces are per process, not per
//! thread.

use crate::task::{Process, lock};
use crate::vfs::Dentry;
use std::any::Any;
use std::sync::{Arc, Mutex, OnceLock};
use um_uapi::{Errno, SysResult};

/// The initial mount namespace's inode number (include/linux/proc_ns.h `PROC_MNT_INIT_INO`
/// = include/uapi/linux/nsfs.h `MNT_NS_INIT_INO`, as the other namespaces here use theirs).
pub const INIT_INO: u64 = 0xEFFF_FFF8;

/// The fs crate's table type, opaque here.
pub type Table = Box<dyn Any + Send + Sync>;

/// A mount namespace (Linux `struct mnt_namespace`).
pub struct MntNs {
    inum: u64,
    /// The mount table (`um_fs::mount`'s), made on first use.
    pub table: OnceLock<Table>,
    /// The root of the namespace (its root mount's root, where setns(2) puts the caller's
    /// root and cwd): the boot root, or the `new_root` of the last pivot_root(2).
    pub root: Mutex<Option<Arc<Dentry>>>,
    /// The user namespace that owns it (`ns.user_ns`): its capability checks are made there.
    owner: Arc<crate::userns::UserNs>,
}

impl MntNs {
    /// A namespace with `table` (a copy the fs crate made), numbered by
    /// [`crate::nsfs::alloc_inum`].
    pub fn with_table(
        table: Table,
        root: Option<Arc<Dentry>>,
        owner: Arc<crate::userns::UserNs>,
    ) -> Arc<MntNs> {
        let t = OnceLock::new();
        let _ = t.set(table);
        Arc::new(MntNs {
            inum: crate::nsfs::alloc_inum(),
            table: t,
            root: Mutex::new(root),
            owner,
        })
    }

    /// The user namespace that owns it: mount(2) and friends check CAP_SYS_ADMIN there.
    pub fn owner(&self) -> &Arc<crate::userns::UserNs> {
        &self.owner
    }

    /// The namespace's inode number (`ns.inum`), shown in `mnt:[N]`.
    pub fn inum(&self) -> u64 {
        self.inum
    }
}

/// The initial namespace (`init_task.nsproxy->mnt_ns`).
pub fn root() -> &'static Arc<MntNs> {
    static ROOT: OnceLock<Arc<MntNs>> = OnceLock::new();
    ROOT.get_or_init(|| {
        Arc::new(MntNs {
            inum: INIT_INO,
            table: OnceLock::new(),
            root: Mutex::new(None),
            owner: crate::userns::root().clone(),
        })
    })
}

/// The namespace `p` belongs to.
pub fn of(p: &Process) -> Arc<MntNs> {
    lock(&p.mntns).clone()
}

/// The namespace of the task this host thread serves (the initial one if none): Linux's
/// `current->nsproxy->mnt_ns`.
pub fn current() -> Arc<MntNs> {
    crate::current::current().map_or_else(|| root().clone(), |t| of(&t.process))
}

/// Copies a namespace's table for a new namespace (`copy_mnt_ns`): set by the fs crate.
pub type CopyHook = fn(&MntNs, Arc<crate::userns::UserNs>) -> SysResult<Arc<MntNs>>;

static COPY: OnceLock<CopyHook> = OnceLock::new();

/// The fs crate registers how a table is copied (at boot).
pub fn set_copy_hook(f: CopyHook) {
    let _ = COPY.set(f);
}

fn copy(from: &MntNs, owner: Arc<crate::userns::UserNs>) -> SysResult<Arc<MntNs>> {
    COPY.get().ok_or(Errno::EINVAL)?(from, owner)
}

/// clone(CLONE_NEWNS)'s part (`copy_namespaces`): a copy of `parent`'s namespace for the
/// new child. The caller has checked CAP_SYS_ADMIN.
pub fn copy_of(parent: &Process, owner: Arc<crate::userns::UserNs>) -> SysResult<Arc<MntNs>> {
    copy(&of(parent), owner)
}

/// unshare(CLONE_NEWNS): the caller moves into a copy of its namespace at once. The caller
/// has checked CAP_SYS_ADMIN.
pub fn unshare(p: &Process) -> SysResult<()> {
    let ns = copy(&of(p), crate::userns::of(p))?;
    *lock(&p.mntns) = ns;
    Ok(())
}

/// setns(2) into `ns` (`mntns_install`): CAP_SYS_ADMIN (`EPERM`); the caller moves, its
/// root and working directory become the namespace's root.
pub fn setns(p: &Process, ns: &Arc<MntNs>) -> SysResult<()> {
    if !crate::userns::may_install(p, &ns.owner)
        || !crate::userns::ns_capable(
            p,
            &crate::userns::of(p),
            um_uapi::abi::capability::CAP_SYS_CHROOT,
        )
    {
        return Err(Errno::EPERM);
    }
    let root = lock(&ns.root).clone().ok_or(Errno::EINVAL)?;
    *lock(&p.mntns) = ns.clone();
    let mut fs = lock(&p.fs);
    fs.root = root.clone();
    fs.cwd = root;
    Ok(())
}

impl crate::nsfs::Namespace for MntNs {
    fn owner(&self) -> Option<Arc<crate::userns::UserNs>> {
        Some(self.owner.clone())
    }
    const KIND: &'static str = "mnt";
    const NSTYPE: u64 = um_uapi::abi::sched::CloneFlags::NEWNS.bits();
    fn inum(&self) -> u64 {
        self.inum
    }
}

/// An open mount namespace file: setns(2) takes it.
pub type MntNsFile = crate::nsfs::NsFile<MntNs>;

/// The text of a `/proc/PID/ns/mnt` link (`ns_get_name`): "mnt:[N]".
pub fn link_name(ns: &MntNs) -> Vec<u8> {
    crate::nsfs::link_name(ns)
}

/// A dentry for `ns`'s nsfs inode, where a `/proc/PID/ns/mnt` magic link leads.
pub fn ns_dentry(ns: &Arc<MntNs>) -> Arc<Dentry> {
    crate::nsfs::dentry(ns)
}
