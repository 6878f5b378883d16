//! hostfs's lookup and attribute cache: what a path walk needs from the host without asking it
//! again (Linux's dcache and inode attributes, which hostfs keeps as plain data here).
//!
//! Key types: [`Cache`] (one per mounted [`crate::hostfs`] instance, behind its lock), its
//! [`Dentry`] entries keyed by the host directory `(dev, ino)` and a name — positive (the
//! child's host identity, type, and for a directory a shared `O_PATH` fd) or negative (the name
//! does not exist) — and the host `stat` of inodes keyed by their `(dev, ino)`.
//!
//! Coherence, the policy (ARCHITECTURE.md, "hostfs caching"):
//! - *Changes made through this kernel* are seen at once: every hostfs operation that changes a
//!   name or an attribute on the host drops the entries it affects ([`Cache::forget_name`],
//!   [`Cache::forget_attrs`], [`Cache::clear`] when a directory goes) before it returns, and
//!   a lookup that raced with such a change does not store its (possibly older) answer: each
//!   drop bumps a generation that fills compare against ([`Cache::generation`]).
//! - *Changes made on the host behind the kernel's back* (another host process writing under
//!   the hostfs root) are seen at most [`TTL`] late: an entry older than that is looked up
//!   again. This is the "cache=auto" mode of virtiofsd/FUSE (`entry_timeout` and
//!   `attr_timeout` of 1 s, Documentation/filesystems/fuse.rst), between 9p's `cache=none`
//!   (nothing cached, Documentation/filesystems/9p.rst) and `cache=loose` ("no attempts are
//!   made at consistency"); UML's own hostfs (fs/hostfs/hostfs_kern.c) keeps a dentry and its
//!   inode's attributes, unrevalidated, for as long as the dentry is in use.
//!
//! Spare descriptors: when a file opened read-only is closed, its host fd is kept (at most
//! [`MAX_SPARES`], each for [`TTL`]) and the next read-only open of the same host inode takes it
//! instead of asking the host for a new one, so an open and a close make no host call. An fd
//! names the inode, not the name: the spare goes as soon as this kernel unlinks, renames over
//! or changes the attributes of that inode ([`Cache::forget_inode`]), so it never keeps a
//! removed file's space for long, and an outside rename is seen when the lookup is (both
//! within [`TTL`]).
//!
//! Entries hold no inode: a hit builds a fresh `HostInode` from the entry, so the cache has no
//! reference cycle with the file system and goes with it. It holds at most [`MAX_ENTRIES`]
//! names and as many attribute records (each directory entry keeps one host `O_PATH` fd); when
//! full it starts over.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::{Duration, Instant};
use um_os_linux::host::HostStat;

/// How long an entry is believed without asking the host (see the module docs).
pub const TTL: Duration = Duration::from_secs(1);

/// Names (and, separately, attribute records) kept at most per file system.
pub const MAX_ENTRIES: usize = 4096;

/// Host fds of closed read-only files kept for reuse at most per file system.
pub const MAX_SPARES: usize = 64;

/// A host inode's identity: `(st_dev, st_ino)`.
pub type HostId = (u64, u64);

/// One cached name.
#[derive(Clone)]
pub enum Dentry {
    /// The name exists: the child's identity, and for a directory its `O_PATH` fd.
    Positive {
        id: HostId,
        dir: Option<Arc<OwnedFd>>,
    },
    /// The host answered `ENOENT`.
    Negative,
}

struct Timed<T> {
    at: Instant,
    v: T,
}

/// The cache of one hostfs instance (see the module docs).
#[derive(Default)]
pub struct Cache {
    /// Names per host directory.
    dirs: HashMap<HostId, HashMap<Box<[u8]>, Timed<Dentry>>>,
    names: usize,
    attrs: HashMap<HostId, Timed<HostStat>>,
    /// Read-only host fds of closed files, by inode.
    spares: HashMap<HostId, Timed<OwnedFd>>,
    /// Bumped by every drop: a fill whose host call began before it does not store.
    generation: u64,
    /// Bumped by every [`Cache::forget_inode`] and [`Cache::clear`]: a file open across one
    /// does not leave its fd as a spare (the inode may have lost its last name meanwhile).
    inode_generation: u64,
}

impl Cache {
    /// The current generation: read it before the host call whose answer a fill stores.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The entry for `name` in directory `dir`, if fresh.
    pub fn lookup(&self, dir: HostId, name: &[u8], now: Instant) -> Option<Dentry> {
        let e = self.dirs.get(&dir)?.get(name)?;
        (now.saturating_duration_since(e.at) < TTL).then(|| e.v.clone())
    }

    /// Stores what a lookup of `name` in `dir` found, begun at generation `generation`.
    pub fn fill(&mut self, dir: HostId, name: &[u8], d: Dentry, generation: u64, now: Instant) {
        if generation != self.generation {
            return;
        }
        if self.names >= MAX_ENTRIES {
            self.dirs.clear();
            self.names = 0;
        }
        let names = self.dirs.entry(dir).or_default();
        if names.insert(name.into(), Timed { at: now, v: d }).is_none() {
            self.names += 1;
        }
    }

    /// The host `stat` of `id`, if fresh.
    pub fn attrs(&self, id: HostId, now: Instant) -> Option<HostStat> {
        let e = self.attrs.get(&id)?;
        (now.saturating_duration_since(e.at) < TTL).then_some(e.v)
    }

    /// Stores a host `stat` taken at generation `generation`.
    pub fn fill_attrs(&mut self, st: &HostStat, generation: u64, now: Instant) {
        if generation != self.generation {
            return;
        }
        if self.attrs.len() >= MAX_ENTRIES {
            self.attrs.clear();
        }
        self.attrs
            .insert((st.dev, st.ino), Timed { at: now, v: *st });
    }

    /// `name` in `dir` changed (created, removed, renamed to or from).
    pub fn forget_name(&mut self, dir: HostId, name: &[u8]) {
        self.generation += 1;
        if let Some(names) = self.dirs.get_mut(&dir)
            && names.remove(name).is_some()
        {
            self.names -= 1;
        }
    }

    /// The attributes of `id` changed (or may have: data written, times, owner, xattrs).
    pub fn forget_attrs(&mut self, id: HostId) {
        self.generation += 1;
        self.attrs.remove(&id);
    }

    /// The inode `id` may have lost its last name or changed its permissions: its attributes
    /// and its spare fd go.
    pub fn forget_inode(&mut self, id: HostId) {
        self.forget_attrs(id);
        self.inode_generation += 1;
        self.spares.remove(&id);
    }

    /// The current inode generation: a file records it when it opens, for
    /// [`Cache::put_spare`].
    pub fn inode_generation(&self) -> u64 {
        self.inode_generation
    }

    /// A read-only host fd of `id` kept by [`Cache::put_spare`] within [`TTL`].
    pub fn take_spare(&mut self, id: HostId, now: Instant) -> Option<OwnedFd> {
        let e = self.spares.remove(&id)?;
        (now.saturating_duration_since(e.at) < TTL).then_some(e.v)
    }

    /// Keeps `fd`, a read-only host fd of `id` opened at inode generation `opened`, for the
    /// next [`Cache::take_spare`]; gives it back (for the caller to close) when an inode was
    /// forgotten since it opened or the pool is full of fresh ones. Expired spares are closed
    /// here, so one of a file removed on the host is not kept much past [`TTL`].
    pub fn put_spare(
        &mut self,
        id: HostId,
        fd: OwnedFd,
        opened: u64,
        now: Instant,
    ) -> Option<OwnedFd> {
        if opened != self.inode_generation {
            return Some(fd);
        }
        self.spares
            .retain(|_, e| now.saturating_duration_since(e.at) < TTL);
        if self.spares.len() >= MAX_SPARES && !self.spares.contains_key(&id) {
            return Some(fd);
        }
        self.spares.insert(id, Timed { at: now, v: fd });
        None
    }

    /// Drops everything (a directory went: its inode number may come back as another one).
    pub fn clear(&mut self) {
        self.generation += 1;
        self.dirs.clear();
        self.names = 0;
        self.attrs.clear();
        self.inode_generation += 1;
        self.spares.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(ino: u64, size: i64) -> HostStat {
        HostStat {
            dev: 1,
            ino,
            size,
            ..Default::default()
        }
    }

    #[test]
    fn entries_expire_and_forget() {
        let mut c = Cache::default();
        let t0 = Instant::now();
        let g = c.generation();
        c.fill((1, 2), b"a", Dentry::Negative, g, t0);
        c.fill_attrs(&st(3, 7), g, t0);
        assert!(matches!(c.lookup((1, 2), b"a", t0), Some(Dentry::Negative)));
        assert_eq!(c.attrs((1, 3), t0).map(|s| s.size), Some(7));
        // Another directory, another name: nothing.
        assert!(c.lookup((1, 3), b"a", t0).is_none());
        assert!(c.lookup((1, 2), b"b", t0).is_none());
        // Older than the TTL: asked again.
        assert!(c.lookup((1, 2), b"a", t0 + TTL).is_none());
        assert!(c.attrs((1, 3), t0 + TTL).is_none());
        c.forget_name((1, 2), b"a");
        assert!(c.lookup((1, 2), b"a", t0).is_none());
        c.forget_attrs((1, 3));
        assert!(c.attrs((1, 3), t0).is_none());
    }

    #[test]
    fn a_fill_that_raced_with_a_change_is_not_stored() {
        let mut c = Cache::default();
        let t0 = Instant::now();
        let g = c.generation();
        // A change between the fill's host call and its store.
        c.forget_name((1, 2), b"a");
        c.fill((1, 2), b"a", Dentry::Negative, g, t0);
        c.fill_attrs(&st(3, 7), g, t0);
        assert!(c.lookup((1, 2), b"a", t0).is_none());
        assert!(c.attrs((1, 3), t0).is_none());
    }

    fn devnull() -> OwnedFd {
        std::fs::File::open("/dev/null").unwrap().into()
    }

    #[test]
    fn spares_are_reused_once_and_go_with_their_inode() {
        let mut c = Cache::default();
        let t0 = Instant::now();
        assert!(
            c.put_spare((1, 3), devnull(), c.inode_generation(), t0)
                .is_none()
        );
        assert!(c.take_spare((1, 4), t0).is_none());
        assert!(c.take_spare((1, 3), t0).is_some());
        assert!(c.take_spare((1, 3), t0).is_none());
        // Expired.
        assert!(
            c.put_spare((1, 3), devnull(), c.inode_generation(), t0)
                .is_none()
        );
        assert!(c.take_spare((1, 3), t0 + TTL).is_none());
        // Unlinked or changed through this kernel.
        assert!(
            c.put_spare((1, 3), devnull(), c.inode_generation(), t0)
                .is_none()
        );
        c.forget_inode((1, 3));
        assert!(c.take_spare((1, 3), t0).is_none());
        // Bounded: a full pool of fresh fds refuses; expired ones make room.
        for i in 0..MAX_SPARES as u64 {
            assert!(
                c.put_spare((2, i), devnull(), c.inode_generation(), t0)
                    .is_none()
            );
        }
        assert!(
            c.put_spare((3, 0), devnull(), c.inode_generation(), t0)
                .is_some()
        );
        assert!(
            c.put_spare((3, 0), devnull(), c.inode_generation(), t0 + TTL)
                .is_none()
        );
        assert_eq!(c.spares.len(), 1);
        c.clear();
        assert!(c.spares.is_empty());
        // A file open while some inode was forgotten (it may have been this one, unlinked
        // while open) does not leave a spare.
        let opened = c.inode_generation();
        c.forget_inode((4, 4));
        assert!(c.put_spare((1, 3), devnull(), opened, t0).is_some());
        assert!(c.take_spare((1, 3), t0).is_none());
    }

    #[test]
    fn the_cache_stays_bounded() {
        let mut c = Cache::default();
        let t0 = Instant::now();
        for i in 0..(MAX_ENTRIES as u64 + 10) {
            let g = c.generation();
            c.fill((1, 2), &i.to_le_bytes(), Dentry::Negative, g, t0);
            c.fill_attrs(&st(i, 0), g, t0);
        }
        assert!(c.names <= MAX_ENTRIES);
        assert!(c.attrs.len() <= MAX_ENTRIES);
        c.clear();
        assert_eq!(c.names, 0);
        assert!(c.dirs.is_empty() && c.attrs.is_empty());
    }
}
