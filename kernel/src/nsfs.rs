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
use um_uapi::SysResult;

/// The nsfs device number (Linux mounts nsfs internally; its `st_dev` is an anonymous one).
pub const NSFS_DEV: u64 = 4;

/// A namespace that has an nsfs inode.
pub trait Namespace: Send + Sync + 'static {
    /// The kind, as `/proc/PID/ns` links name it ("time", "pid", "net").
    const KIND: &'static str;
    /// Its inode number (`ns_common.inum`).
    fn inum(&self) -> u64;
    /// The user namespace that owns it (NS_GET_USERNS); for a user namespace its parent
    /// (none for the initial one).
    fn owner(&self) -> Option<Arc<crate::userns::UserNs>>;
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

impl<T: Namespace> FileOps for NsFile<T> {
    fn stat(&self) -> SysResult<Kstat> {
        Ok(stat(&*self.ns))
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
    })
}
