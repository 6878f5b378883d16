//! Network namespaces (Linux `net/core/net_namespace.c`, `kernel/nsproxy.c`,
//! network_namespaces(7)).
//!
//! A [`NetNs`] is an identity (its nsfs inode number, shown in `net:[N]`) plus per-namespace
//! state that the crates above keep in it, found by type ([`NetNs::generic`], Linux
//! `net_generic` and `register_pernet_subsys`): the kernel crate cannot see socket or sysctl
//! types, so `um_net` stores its sysctl values there and keys its bind tables by
//! [`NetNs::inum`]. Every process belongs to one namespace (`Process::netns`, Linux
//! `nsproxy->net_ns`), inherited at fork; `clone(CLONE_NEWNET)` puts the child in a new one
//! ([`on_fork`]), `unshare(CLONE_NEWNET)` moves the caller into a new one ([`unshare`]) and
//! `setns(2)` on a `/proc/PID/ns/net` descriptor (or a pidfd) into an existing one
//! ([`setns`]); all three need CAP_SYS_ADMIN, which the syscalls check.
//!
//! A new namespace starts from the initial namespace's state (net/ipv4/devinet.c
//! `devinet_init_net` copies `init_net`'s `conf/all` and `conf/default` with the default
//! `net.core.devconf_inherit_init_net` = 0): each state type says how through
//! [`PerNet::for_new_ns`].
//!
//! Simplifications: namespaces are per process, not per thread (as time namespaces here);
//! the only device of every namespace is the loopback `lo` that the socket layer provides
//! (in a new namespace down and without addresses, as Linux registers it, until brought
//! up); devices cannot be moved between namespaces.

use crate::task::{Process, lock};
use crate::vfs::Dentry;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use um_uapi::{Errno, SysResult};

/// The initial network namespace's inode number (include/uapi/linux/nsfs.h
/// `NET_NS_INIT_INO`; older kernels gave `init_net` the first dynamic number instead).
pub const INIT_INO: u64 = 0xEFFF_FFF9;

/// State a subsystem keeps per namespace (Linux `struct pernet_operations`).
pub trait PerNet: Any + Send + Sync + Default {
    /// The state a namespace made now starts with, given the initial namespace's
    /// (`pernet_operations.init`). Most state starts empty: the default.
    fn for_new_ns(_init: &Self) -> Self {
        Self::default()
    }
}

/// One subsystem's state and how a new namespace gets its copy.
struct Slot {
    state: Arc<dyn Any + Send + Sync>,
    copy: fn(&(dyn Any + Send + Sync)) -> Option<Arc<dyn Any + Send + Sync>>,
}

fn copy_slot<T: PerNet>(init: &(dyn Any + Send + Sync)) -> Option<Arc<dyn Any + Send + Sync>> {
    let init = init.downcast_ref::<T>()?;
    Some(Arc::new(T::for_new_ns(init)))
}

/// A network namespace (Linux `struct net`).
pub struct NetNs {
    inum: u64,
    generic: Mutex<HashMap<TypeId, Slot>>,
    /// The user namespace that owns it (`ns.user_ns`): its capability checks are made there.
    owner: Arc<crate::userns::UserNs>,
}

/// The initial namespace (`init_net`).
pub fn root() -> &'static Arc<NetNs> {
    static ROOT: OnceLock<Arc<NetNs>> = OnceLock::new();
    ROOT.get_or_init(|| {
        Arc::new(NetNs {
            inum: INIT_INO,
            generic: Mutex::default(),
            owner: crate::userns::root().clone(),
        })
    })
}

impl NetNs {
    /// A new namespace (`copy_net_ns`, `setup_net`): every subsystem the initial namespace
    /// has state for gets its [`PerNet::for_new_ns`] copy now, the others start at their
    /// default when first used. Its inode number comes from
    /// [`crate::nsfs::alloc_inum`].
    pub fn new() -> Arc<NetNs> {
        Self::new_owned(crate::userns::current())
    }

    /// [`NetNs::new`] owned by user namespace `owner`.
    pub fn new_owned(owner: Arc<crate::userns::UserNs>) -> Arc<NetNs> {
        let generic = {
            let init = lock(&root().generic);
            init.iter()
                .filter_map(|(id, s)| {
                    let state = (s.copy)(&*s.state)?;
                    Some((
                        *id,
                        Slot {
                            state,
                            copy: s.copy,
                        },
                    ))
                })
                .collect()
        };
        Arc::new(NetNs {
            inum: crate::nsfs::alloc_inum(),
            generic: Mutex::new(generic),
            owner,
        })
    }

    /// The namespace's inode number (`ns.inum`), shown in `net:[N]`; never reused, so it
    /// also keys per-namespace tables.
    pub fn inum(&self) -> u64 {
        self.inum
    }

    /// The user namespace that owns it (`net->user_ns`).
    pub fn owner(&self) -> &Arc<crate::userns::UserNs> {
        &self.owner
    }

    /// Whether this is the initial namespace.
    pub fn is_root(&self) -> bool {
        self.inum == INIT_INO
    }

    /// The namespace's state of type `T` (`net_generic`), made on first use: a copy of the
    /// initial namespace's for a new namespace ([`PerNet::for_new_ns`]), else the default.
    pub fn generic<T: PerNet>(&self) -> Arc<T> {
        let id = TypeId::of::<T>();
        let mut g = lock(&self.generic);
        if let Some(s) = g.get(&id)
            && let Ok(t) = s.state.clone().downcast::<T>()
        {
            return t;
        }
        let t = if self.is_root() {
            Arc::new(T::default())
        } else {
            // The initial namespace's state as it is now (its lock is another mutex; the
            // initial namespace never takes a new namespace's lock, so no cycle).
            drop(g);
            let init = root().generic::<T>();
            g = lock(&self.generic);
            if let Some(s) = g.get(&id)
                && let Ok(t) = s.state.clone().downcast::<T>()
            {
                return t;
            }
            Arc::new(T::for_new_ns(&init))
        };
        g.insert(
            id,
            Slot {
                state: t.clone(),
                copy: copy_slot::<T>,
            },
        );
        t
    }
}

/// The namespace `p` belongs to.
pub fn of(p: &Process) -> Arc<NetNs> {
    lock(&p.netns).clone()
}

/// The namespace of the task this host thread serves (the initial one if none): Linux's
/// `current->nsproxy->net_ns`, which socket creation and the net sysctls use.
pub fn current() -> Arc<NetNs> {
    crate::current::current().map_or_else(|| root().clone(), |t| of(&t.process))
}

/// clone(CLONE_NEWNET)'s part (kernel/nsproxy.c `copy_namespaces`): the new process
/// `child`, which inherited its parent's namespace, gets a new one. The caller has checked
/// CAP_SYS_ADMIN.
pub fn on_fork(child: &Process) {
    *lock(&child.netns) = NetNs::new_owned(crate::userns::of(child));
}

/// unshare(CLONE_NEWNET): the caller moves into a new namespace at once (unlike time and pid
/// namespaces, which only its children enter). The caller has checked CAP_SYS_ADMIN.
pub fn unshare(p: &Process) {
    *lock(&p.netns) = NetNs::new_owned(crate::userns::of(p));
}

/// setns(2) into `ns` (`netns_install`): CAP_SYS_ADMIN (`EPERM`); the caller moves.
/// Sockets it already has stay in the namespace they were made in, as on Linux.
pub fn setns(p: &Process, ns: &Arc<NetNs>) -> SysResult<()> {
    if !crate::userns::may_install(p, &ns.owner) {
        return Err(Errno::EPERM);
    }
    *lock(&p.netns) = ns.clone();
    Ok(())
}

impl crate::nsfs::Namespace for NetNs {
    fn owner(&self) -> Option<Arc<crate::userns::UserNs>> {
        Some(self.owner.clone())
    }
    const KIND: &'static str = "net";
    const NSTYPE: u64 = um_uapi::abi::sched::CloneFlags::NEWNET.bits();
    fn inum(&self) -> u64 {
        self.inum
    }
}

/// An open network namespace file: setns(2) takes it. It holds the namespace alive, as an
/// open nsfs file does on Linux (`ip netns` relies on that with bind mounts).
pub type NetNsFile = crate::nsfs::NsFile<NetNs>;

/// The text of a `/proc/PID/ns/net` link (`ns_get_name`): "net:[N]".
pub fn link_name(ns: &NetNs) -> Vec<u8> {
    crate::nsfs::link_name(ns)
}

/// A dentry for `ns`'s nsfs inode, where a `/proc/PID/ns/net` magic link leads.
pub fn ns_dentry(ns: &Arc<NetNs>) -> Arc<Dentry> {
    crate::nsfs::dentry(ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI32, Ordering};

    /// A subsystem whose new namespaces copy the initial one's value.
    #[derive(Default)]
    struct Copied(AtomicI32);
    impl PerNet for Copied {
        fn for_new_ns(init: &Self) -> Self {
            Copied(AtomicI32::new(init.0.load(Ordering::Relaxed)))
        }
    }

    /// A subsystem whose new namespaces start empty.
    #[derive(Default)]
    struct Fresh(AtomicI32);
    impl PerNet for Fresh {}

    #[test]
    fn state_per_namespace() {
        root().generic::<Copied>().0.store(7, Ordering::Relaxed);
        root().generic::<Fresh>().0.store(7, Ordering::Relaxed);
        let a = NetNs::new();
        assert!(!a.is_root() && root().is_root());
        assert_ne!(a.inum(), root().inum());
        // Copied at creation: later changes in the initial namespace do not reach it.
        root().generic::<Copied>().0.store(9, Ordering::Relaxed);
        assert_eq!(a.generic::<Copied>().0.load(Ordering::Relaxed), 7);
        assert_eq!(a.generic::<Fresh>().0.load(Ordering::Relaxed), 0);
        // The same object each time; the namespaces do not share it.
        a.generic::<Fresh>().0.store(3, Ordering::Relaxed);
        assert_eq!(a.generic::<Fresh>().0.load(Ordering::Relaxed), 3);
        assert_eq!(root().generic::<Fresh>().0.load(Ordering::Relaxed), 7);
        let b = NetNs::new();
        assert_ne!(a.inum(), b.inum());
        assert_eq!(b.generic::<Copied>().0.load(Ordering::Relaxed), 9);
        assert_eq!(link_name(root()), b"net:[4026531833]");
    }
}
