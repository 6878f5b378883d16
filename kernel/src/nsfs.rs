//! nsfs: the inodes that `/proc/PID/ns/*` links lead to (Linux `fs/nsfs.c`), for every
//! namespace kind this kernel has (time, pid, net, uts, ipc, mnt, user).
//!
//! A namespace type implements [`Namespace`] (its kind, as `ns_get_name` prints it, and its
//! inode number); [`dentry`] gives the dentry a magic link resolves to, [`link_name`] the
//! link's text (`"pid:[4026531836]"`), and opening the inode gives an [`NsFile`], which
//! setns(2) (`sys/ns.rs`) downcasts to the kind it expects. An open file holds its
//! namespace alive, as an nsfs file does on Linux.
//!
//! Neighbours: `timens`, `pidns`, `netns` (the namespaces), procfs's `/proc/PID/ns`.

use crate::vfs::{Dentry, FileOps, Inode, Kstat, mode};
use std::any::Any;
use std::sync::{Arc, Mutex};
use um_uapi::{Errno, SysResult};

const CLONE_NEWPID: u64 = um_uapi::abi::sched::CloneFlags::NEWPID.bits();
const CLONE_NEWUSER: u64 = um_uapi::abi::sched::CloneFlags::NEWUSER.bits();

/// A new namespace's inode number (fs/proc/generic.c `proc_alloc_inum`): one allocator for
/// every kind, from `PROC_DYNAMIC_FIRST`, so no two namespaces share a number (the fixed
/// numbers of the initial namespaces lie just below).
pub fn alloc_inum() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0xF000_0000);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The nsfs device number (Linux mounts nsfs internally; its `st_dev` is an anonymous one).
pub const NSFS_DEV: u64 = 4;

/// A namespace that has an nsfs inode.
pub trait Namespace: Send + Sync + 'static {
    /// The kind, as `/proc/PID/ns` links name it ("time", "pid", "net").
    const KIND: &'static str;
    /// Its `CLONE_NEW*` flag (NS_GET_NSTYPE).
    const NSTYPE: u64;
    /// Its inode number (`ns_common.inum`).
    fn inum(&self) -> u64;
    /// The user namespace that owns it (NS_GET_USERNS); for a user namespace its parent
    /// (none for the initial one).
    fn owner(&self) -> Option<Arc<crate::userns::UserNs>>;
    /// The parent namespace, for the hierarchical kinds (pid, user): NS_GET_PARENT.
    fn parent_ns(&self) -> Option<Arc<Self>>
    where
        Self: Sized,
    {
        None
    }
}

/// The nsfs inode of namespace `ns`.
pub struct NsInode<T: Namespace> {
    ns: Arc<T>,
}

/// An open namespace file: setns(2) takes it.
pub struct NsFile<T: Namespace> {
    pub ns: Arc<T>,
}

fn stat<T: Namespace>(ns: &T) -> Kstat {
    Kstat {
        dev: NSFS_DEV,
        ino: ns.inum(),
        mode: mode::S_IFREG | 0o444,
        nlink: 1,
        blksize: 4096,
        ..Default::default()
    }
}

impl<T: Namespace> Inode for NsInode<T> {
    fn stat(&self) -> SysResult<Kstat> {
        Ok(stat(&*self.ns))
    }

    fn open(&self, _io: &crate::wait::IoCtx<'_>, _flags: u32) -> SysResult<Box<dyn FileOps>> {
        Ok(Box::new(NsFile {
            ns: self.ns.clone(),
        }))
    }

    fn id(&self) -> u64 {
        self.ns.inum()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Whether `ns` is the caller's user namespace or below it (`current_in_userns`): only those
/// may NS_GET_USERNS and NS_GET_PARENT hand out.
fn visible(ns: &Arc<crate::userns::UserNs>) -> bool {
    crate::userns::current().is_ancestor_of(ns)
}

/// A new descriptor (read-only, close-on-exec, as `open_related_ns`) of namespace `ns`.
fn install<T: Namespace>(io: &crate::wait::IoCtx<'_>, ns: Arc<T>) -> SysResult<u64> {
    let d = dentry(&ns);
    let f = crate::vfs::OpenFile::new(
        Box::new(NsFile { ns }),
        um_uapi::abi::fcntl::O_CLOEXEC,
        Some(d),
    );
    let fd = crate::task::lock(&io.task.process.files()).install(f, true, 0)?;
    Ok(u64::from(fd))
}

impl<T: Namespace> FileOps for NsFile<T> {
    fn stat(&self) -> SysResult<Kstat> {
        Ok(stat(&*self.ns))
    }

    /// fs/nsfs.c `ns_ioctl`: NS_GET_USERNS and NS_GET_PARENT give a descriptor (`EPERM` for
    /// a namespace outside the caller's view or the initial user namespace's missing owner or
    /// parent), NS_GET_NSTYPE the kind, NS_GET_OWNER_UID (user namespaces only, else
    /// `EINVAL`) the creator's uid as the caller sees it.
    fn ioctl(
        &self,
        io: &crate::wait::IoCtx<'_>,
        cmd: u32,
        arg: u64,
        mem: &mut dyn crate::vfs::GuestMem,
    ) -> SysResult<u64> {
        use um_uapi::abi::nsfs::*;
        match cmd {
            NS_GET_USERNS => {
                let owner = self.ns.owner().ok_or(Errno::EPERM)?;
                if !visible(&owner) {
                    return Err(Errno::EPERM);
                }
                install(io, owner)
            }
            NS_GET_PARENT => {
                if T::NSTYPE & (CLONE_NEWPID | CLONE_NEWUSER) == 0 {
                    return Err(Errno::EINVAL);
                }
                let parent = self.ns.parent_ns().ok_or(Errno::EPERM)?;
                // The parent must be visible: for a user namespace itself, for a pid
                // namespace through its owner (a simplification of pidns_is_ancestor).
                let owner = if T::NSTYPE == CLONE_NEWUSER {
                    self.ns.owner()
                } else {
                    parent.owner()
                };
                if !owner.is_some_and(|o| visible(&o)) {
                    return Err(Errno::EPERM);
                }
                install(io, parent)
            }
            NS_GET_NSTYPE => Ok(T::NSTYPE),
            NS_GET_OWNER_UID => {
                if T::NSTYPE != CLONE_NEWUSER {
                    return Err(Errno::EINVAL);
                }
                let any: &dyn Any = &*self.ns;
                let u = any
                    .downcast_ref::<crate::userns::UserNs>()
                    .ok_or(Errno::EINVAL)?;
                let uid = crate::userns::from_kuid_munged(&crate::userns::current(), u.owner());
                mem.write(arg, &uid.to_le_bytes())?;
                Ok(0)
            }
            _ => Err(Errno::ENOTTY),
        }
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

/// The text of a `/proc/PID/ns/KIND*` link (`ns_get_name`): "KIND:[N]".
pub fn link_name<T: Namespace>(ns: &T) -> Vec<u8> {
    format!("{}:[{}]", T::KIND, ns.inum()).into_bytes()
}

/// A dentry for `ns`'s nsfs inode, where a `/proc/PID/ns/KIND*` magic link leads.
pub fn dentry<T: Namespace>(ns: &Arc<T>) -> Arc<Dentry> {
    Arc::new(Dentry {
        name: link_name(&**ns),
        parent: None,
        inode: Arc::new(NsInode { ns: ns.clone() }),
        mounted: Mutex::new(None),
        mnt: None,
    })
}
