//! inotify (Linux fs/notify/inotify/, with the fsnotify hooks of include/linux/fsnotify.h).
//!
//! An [`Inotify`] instance is the file behind an inotify descriptor: a queue of events and its
//! watches. Watches are registered here by inode identity (file system id, inode id), so
//! every dentry that names the same inode (hostfs makes a new inode object per lookup) finds
//! them. The VFS calls the hooks after each successful change, as Linux's `fsnotify_*`
//! helpers are called from fs/namei.c, fs/open.c, fs/attr.c and fs/read_write.c:
//!
//! - [`create`] (`fsnotify_create`/`fsnotify_mkdir`): `IN_CREATE` in the directory;
//! - [`delete`] (`vfs_unlink`/`vfs_rmdir`): `IN_ATTRIB` for a file's link count, `IN_DELETE`
//!   in the directory, `IN_DELETE_SELF` (then `IN_IGNORED`) when the last link went;
//! - [`rename`] (`fsnotify_move`): `IN_MOVED_FROM`/`IN_MOVED_TO` with one cookie,
//!   `IN_MOVE_SELF` on the inode, and for a replaced target what `delete` gives it;
//! - [`modified`] (`fsnotify_modify`) after writes, [`accessed`] (`fsnotify_access`) after
//!   reads and directory listings, [`opened`] (`fsnotify_open`), and `IN_CLOSE_WRITE` or
//!   `IN_CLOSE_NOWRITE` when an open file description is released (`__fput` ->
//!   `fsnotify_close`, through the VFS's release hook, which [`install`] sets);
//! - [`notify_change`] (`fs/attr.c` `notify_change` with `fsnotify_change`) for attribute
//!   changes: `IN_MODIFY` for a size or lone mtime change, `IN_ACCESS` for a lone atime
//!   change, `IN_ATTRIB` otherwise.
//!
//! Events on a file also go, with its name, to watches on its directory (`fsnotify_parent`),
//! before the file's own. Events about a directory carry `IN_ISDIR`, except `IN_DELETE_SELF`
//! and `IN_MOVE_SELF`, which inotify never flags (`inotify_handle_inode_event`). An event
//! equal to the last one queued is dropped (`inotify_merge`); past `max_queued_events`
//! (16384) one `IN_Q_OVERFLOW` is queued instead. `O_PATH` descriptors make no events (as
//! in newer kernels). Not generated: `IN_UNMOUNT`, events for changes made on the host behind
//! the guest's back, and events for files opened by exec. The limits are shown in
//! `/proc/sys/fs/inotify` ([`proc_sys_dir`]) but not enforced. The hooks cost one atomic load
//! while no watch exists.

use crate::pipe::{anon_kstat, next_ino};
use std::any::Any;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use um_kernel::task::lock;
use um_kernel::vfs::{Dentry, FileOps, GuestMem, Inode, Kstat, OpenFile, SetAttr, mode};
use um_kernel::wait::{IoCtx, PollTable, WaitQueue};
use um_uapi::abi::poll::{POLLIN, POLLRDNORM};
use um_uapi::{Errno, SysResult};

pub const IN_ACCESS: u32 = 0x0000_0001;
pub const IN_MODIFY: u32 = 0x0000_0002;
pub const IN_ATTRIB: u32 = 0x0000_0004;
pub const IN_CLOSE_WRITE: u32 = 0x0000_0008;
pub const IN_CLOSE_NOWRITE: u32 = 0x0000_0010;
pub const IN_OPEN: u32 = 0x0000_0020;
pub const IN_MOVED_FROM: u32 = 0x0000_0040;
pub const IN_MOVED_TO: u32 = 0x0000_0080;
pub const IN_CREATE: u32 = 0x0000_0100;
pub const IN_DELETE: u32 = 0x0000_0200;
pub const IN_DELETE_SELF: u32 = 0x0000_0400;
pub const IN_MOVE_SELF: u32 = 0x0000_0800;
/// `IN_ALL_EVENTS`.
pub const IN_ALL_EVENTS: u32 = 0x0000_0fff;
pub const IN_UNMOUNT: u32 = 0x0000_2000;
pub const IN_Q_OVERFLOW: u32 = 0x0000_4000;
pub const IN_IGNORED: u32 = 0x0000_8000;
pub const IN_ONLYDIR: u32 = 0x0100_0000;
pub const IN_DONT_FOLLOW: u32 = 0x0200_0000;
pub const IN_EXCL_UNLINK: u32 = 0x0400_0000;
pub const IN_MASK_CREATE: u32 = 0x1000_0000;
pub const IN_MASK_ADD: u32 = 0x2000_0000;
pub const IN_ISDIR: u32 = 0x4000_0000;
pub const IN_ONESHOT: u32 = 0x8000_0000;
/// `ALL_INOTIFY_BITS`: what inotify_add_watch knows (a mask with none of them is `EINVAL`).
pub const ALL_INOTIFY_BITS: u32 = IN_ALL_EVENTS
    | IN_UNMOUNT
    | IN_Q_OVERFLOW
    | IN_IGNORED
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
    | IN_EXCL_UNLINK
    | IN_MASK_CREATE
    | IN_MASK_ADD
    | IN_ISDIR
    | IN_ONESHOT;
/// Events reported only to a watch on the inode itself, never to its directory's.
const SELF_ONLY: u32 = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT | IN_Q_OVERFLOW;
/// `/proc/sys/fs/inotify/max_queued_events` (default 16384).
static MAX_QUEUED_EVENTS: AtomicI64 = AtomicI64::new(16384);
/// `/proc/sys/fs/inotify/max_user_instances` (default 128; shown, not enforced).
static MAX_USER_INSTANCES: AtomicI64 = AtomicI64::new(128);
/// `/proc/sys/fs/inotify/max_user_watches` once written (0: the default computed from RAM;
/// shown, not enforced).
static MAX_USER_WATCHES: AtomicI64 = AtomicI64::new(0);
/// `sizeof(struct inotify_event)`.
const EVENT_SIZE: usize = 16;
use um_uapi::abi::tty::FIONREAD;

/// An inode's identity for watches.
type Key = (u64, u64);

fn key(inode: &dyn Inode) -> Key {
    (inode.fs_id(), inode.id())
}

/// One queued event.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Event {
    wd: i32,
    mask: u32,
    cookie: u32,
    name: Vec<u8>,
}

impl Event {
    /// `struct inotify_event` plus the name, NUL-padded to a multiple of 16 bytes
    /// (`round_event_name_len`).
    fn encode(&self, out: &mut Vec<u8>) {
        let len = if self.name.is_empty() {
            0
        } else {
            (self.name.len() + 1).next_multiple_of(EVENT_SIZE)
        };
        out.extend_from_slice(&self.wd.to_le_bytes());
        out.extend_from_slice(&self.mask.to_le_bytes());
        out.extend_from_slice(&self.cookie.to_le_bytes());
        out.extend_from_slice(&(len as u32).to_le_bytes());
        let start = out.len();
        out.extend_from_slice(&self.name);
        out.resize(start + len, 0);
    }

    fn size(&self) -> usize {
        EVENT_SIZE
            + if self.name.is_empty() {
                0
            } else {
                (self.name.len() + 1).next_multiple_of(EVENT_SIZE)
            }
    }
}

#[derive(Default)]
struct State {
    queue: VecDeque<Event>,
    /// Watch descriptor -> (inode, mask with `IN_ONESHOT`/`IN_EXCL_UNLINK`).
    watches: BTreeMap<i32, (Key, u32)>,
    last_wd: i32,
}

/// An inotify instance (`struct fsnotify_group` with inotify's data).
pub struct Inotify {
    st: Mutex<State>,
    wait: WaitQueue,
    ino: u64,
    me: Weak<Inotify>,
    /// `max_queued_events` when the instance was made (`group->max_events`).
    max_events: usize,
}

/// A watch as the registry keeps it.
struct Mark {
    group: Weak<Inotify>,
    wd: i32,
    mask: u32,
}

/// Every watch, by inode.
fn registry() -> &'static Mutex<HashMap<Key, Vec<Mark>>> {
    static R: OnceLock<Mutex<HashMap<Key, Vec<Mark>>>> = OnceLock::new();
    R.get_or_init(Default::default)
}

/// How many watches exist: the hooks return at once while it is 0.
static WATCHES: AtomicUsize = AtomicUsize::new(0);

/// A cookie that ties an `IN_MOVED_FROM` to its `IN_MOVED_TO` (`fsnotify_get_cookie`).
fn next_cookie() -> u32 {
    static C: AtomicU32 = AtomicU32::new(0);
    C.fetch_add(1, Ordering::Relaxed).wrapping_add(1)
}

impl Inotify {
    /// A new instance.
    pub fn new() -> Arc<Inotify> {
        Arc::new_cyclic(|me| Inotify {
            st: Mutex::new(State::default()),
            wait: WaitQueue::new(),
            ino: next_ino(),
            me: me.clone(),
            max_events: MAX_QUEUED_EVENTS.load(Ordering::Relaxed).max(0) as usize,
        })
    }

    /// Queues an event (`fsnotify_add_event` with `inotify_merge`).
    fn queue(&self, ev: Event) {
        let mut st = lock(&self.st);
        if st.queue.back() == Some(&ev) && ev.mask & IN_IGNORED == 0 {
            return;
        }
        if st.queue.len() >= self.max_events {
            // fsnotify_insert_event: one overflow event, unless the last one is already it.
            if st.queue.back().is_none_or(|e| e.mask != IN_Q_OVERFLOW) {
                st.queue.push_back(Event {
                    wd: -1,
                    mask: IN_Q_OVERFLOW,
                    cookie: 0,
                    name: Vec::new(),
                });
            }
        } else {
            st.queue.push_back(ev);
        }
        drop(st);
        self.wait.wake_all();
    }

    /// inotify_add_watch on an inode the caller looked up: returns the watch descriptor.
    pub fn add_watch(&self, inode: &dyn Inode, mask: u32) -> SysResult<i32> {
        let k = key(inode);
        let keep = mask & (IN_ALL_EVENTS | IN_ONESHOT | IN_EXCL_UNLINK);
        let mut reg = lock(registry());
        let marks = reg.entry(k).or_default();
        let me = self.me.clone();
        if let Some(m) = marks.iter_mut().find(|m| m.group.ptr_eq(&me)) {
            if mask & IN_MASK_CREATE != 0 {
                return Err(Errno::EEXIST);
            }
            m.mask = if mask & IN_MASK_ADD != 0 {
                m.mask | keep
            } else {
                keep
            };
            let wd = m.wd;
            lock(&self.st).watches.insert(wd, (k, m.mask));
            return Ok(wd);
        }
        let mut st = lock(&self.st);
        // idr_alloc_cyclic from 1.
        let mut wd = st.last_wd;
        loop {
            wd = if wd == i32::MAX { 1 } else { wd + 1 };
            if !st.watches.contains_key(&wd) {
                break;
            }
        }
        st.last_wd = wd;
        st.watches.insert(wd, (k, keep));
        marks.push(Mark {
            group: me,
            wd,
            mask: keep,
        });
        WATCHES.fetch_add(1, Ordering::Relaxed);
        Ok(wd)
    }

    /// inotify_rm_watch: `EINVAL` for an unknown descriptor; queues `IN_IGNORED`.
    pub fn rm_watch(&self, wd: i32) -> SysResult<()> {
        let mut reg = lock(registry());
        let (k, _) = lock(&self.st).watches.remove(&wd).ok_or(Errno::EINVAL)?;
        forget(&mut reg, k, &self.me);
        drop(reg);
        self.queue(ignored(wd));
        Ok(())
    }

    /// Bytes queued (`FIONREAD`).
    fn pending_bytes(&self) -> usize {
        lock(&self.st).queue.iter().map(Event::size).sum()
    }
}

fn ignored(wd: i32) -> Event {
    Event {
        wd,
        mask: IN_IGNORED,
        cookie: 0,
        name: Vec::new(),
    }
}

/// Removes `group`'s mark on `k` from the registry.
fn forget(reg: &mut HashMap<Key, Vec<Mark>>, k: Key, group: &Weak<Inotify>) {
    if let Some(marks) = reg.get_mut(&k) {
        let before = marks.len();
        marks.retain(|m| !m.group.ptr_eq(group));
        WATCHES.fetch_sub(before - marks.len(), Ordering::Relaxed);
        if marks.is_empty() {
            reg.remove(&k);
        }
    }
}

impl Drop for Inotify {
    /// The last descriptor closed: its watches go (`inotify_release`).
    fn drop(&mut self) {
        let keys: Vec<Key> = lock(&self.st).watches.values().map(|w| w.0).collect();
        let mut reg = lock(registry());
        for k in keys {
            forget(&mut reg, k, &self.me);
        }
    }
}

/// The watchers of `k` interested in `mask`: (instance, wd, one-shot).
fn watchers(k: Key, mask: u32) -> Vec<(Arc<Inotify>, i32, bool)> {
    let reg = lock(registry());
    reg.get(&k)
        .map(|marks| {
            marks
                .iter()
                .filter(|m| {
                    m.mask & mask & IN_ALL_EVENTS != 0 || mask & SELF_ONLY & !IN_ALL_EVENTS != 0
                })
                .filter_map(|m| Some((m.group.upgrade()?, m.wd, m.mask & IN_ONESHOT != 0)))
                .collect()
        })
        .unwrap_or_default()
}

/// Delivers `mask` (with `cookie` and `name`) to the watches on `k`; one-shot watches end.
fn send(k: Key, mask: u32, cookie: u32, name: &[u8]) {
    // dnotify marks ride on the same hooks (fs/notify/dnotify/dnotify.c).
    crate::dnotify::event(k, mask);
    for (g, wd, oneshot) in watchers(k, mask) {
        g.queue(Event {
            wd,
            mask,
            cookie,
            name: name.to_vec(),
        });
        if oneshot {
            let _ = g.rm_watch(wd);
        }
    }
}

/// The last link of `k` is gone (`fsnotify_inoderemove`): `IN_DELETE_SELF`, then every watch
/// on it ends with `IN_IGNORED`.
fn removed(k: Key) {
    send(k, IN_DELETE_SELF, 0, &[]);
    let marks = lock(registry()).get(&k).map(|m| {
        m.iter()
            .filter_map(|m| Some((m.group.upgrade()?, m.wd)))
            .collect::<Vec<_>>()
    });
    for (g, wd) in marks.unwrap_or_default() {
        let _ = g.rm_watch(wd);
    }
}

/// Whether any watch exists (callers skip work that only feeds the hooks).
pub fn active() -> bool {
    WATCHES.load(Ordering::Relaxed) != 0 || crate::dnotify::active()
}

fn isdir_bit(st_mode: u32) -> u32 {
    if st_mode & mode::S_IFMT == mode::S_IFDIR {
        IN_ISDIR
    } else {
        0
    }
}

/// An event about the object `d` names (`fsnotify_parent` + `fsnotify_inode`): first to its
/// directory's watches with its name, then to its own.
pub fn dentry_event(d: &Dentry, mask: u32) {
    if !active() {
        return;
    }
    let isdir = d.inode.stat().map_or(0, |s| isdir_bit(s.mode));
    if mask & SELF_ONLY == 0
        && let Some(p) = &d.parent
    {
        send(key(&*p.inode), mask | isdir, 0, &d.name);
    }
    send(key(&*d.inode), mask | isdir, 0, &[]);
}

/// `name` was created in `dir` (`fsnotify_create`, `fsnotify_mkdir`, `fsnotify_link`).
pub fn create(dir: &dyn Inode, name: &[u8], is_dir: bool) {
    if !active() {
        return;
    }
    let isdir = if is_dir { IN_ISDIR } else { 0 };
    send(key(dir), IN_CREATE | isdir, 0, name);
}

/// `name` (the inode `victim`, whose metadata before the removal was `before`) was removed
/// from `dir` (`vfs_unlink`/`vfs_rmdir`: `fsnotify_link_count`, `d_delete_notify`).
pub fn delete(dir: &dyn Inode, name: &[u8], victim: &dyn Inode, before: &Kstat) {
    if !active() {
        return;
    }
    let isdir = isdir_bit(before.mode);
    let vk = key(victim);
    if isdir == 0 {
        send(vk, IN_ATTRIB, 0, &[]);
    }
    // d_delete (and with it fsnotify_inoderemove) runs before fsnotify_delete.
    if isdir != 0 || before.nlink <= 1 {
        removed(vk);
    }
    send(key(dir), IN_DELETE | isdir, 0, name);
}

/// A hard link `name` to `inode` was made in `dir` (`fsnotify_link`): `IN_ATTRIB` on the
/// inode for its link count, `IN_CREATE` in the directory.
pub fn link(dir: &dyn Inode, name: &[u8], inode: &dyn Inode) {
    if !active() {
        return;
    }
    send(key(inode), IN_ATTRIB, 0, &[]);
    send(key(dir), IN_CREATE, 0, name);
}

/// `old_name` in `old_dir` became `new_name` in `new_dir` (`fsnotify_move`); `moved` is the
/// inode moved (metadata `moved_st`), `target` what was replaced there, with its metadata
/// before.
pub fn rename(
    old_dir: &dyn Inode,
    old_name: &[u8],
    new_dir: &dyn Inode,
    new_name: &[u8],
    moved: (&dyn Inode, &Kstat),
    target: Option<(&dyn Inode, &Kstat)>,
) {
    if !active() {
        return;
    }
    let isdir = isdir_bit(moved.1.mode);
    let cookie = next_cookie();
    send(key(old_dir), IN_MOVED_FROM | isdir, cookie, old_name);
    send(key(new_dir), IN_MOVED_TO | isdir, cookie, new_name);
    // fsnotify_move: a rename within one directory is also dnotify's DN_RENAME there.
    if key(old_dir) == key(new_dir) {
        crate::dnotify::event(key(old_dir), crate::dnotify::FS_DN_RENAME);
    }
    if let Some((t, tst)) = target
        && isdir_bit(tst.mode) == 0
    {
        send(key(t), IN_ATTRIB, 0, &[]);
    }
    send(key(moved.0), IN_MOVE_SELF, 0, &[]);
    // The replaced target's dentry dies after the rename (its last link gone).
    if let Some((t, tst)) = target
        && (isdir_bit(tst.mode) != 0 || tst.nlink <= 1)
    {
        removed(key(t));
    }
}

use um_uapi::abi::fcntl::O_PATH;

/// An event about the file `f` is open on, if it has a name (`fsnotify_file`).
fn file_event(f: &OpenFile, mask: u32) {
    if active()
        && f.flags() & O_PATH == 0
        && let Some(d) = &f.dentry
    {
        dentry_event(d, mask);
    }
}

/// Data was written through `f` (`fsnotify_modify`).
pub fn modified(f: &OpenFile) {
    file_event(f, IN_MODIFY);
}

/// Data (or directory entries) was read through `f` (`fsnotify_access`).
pub fn accessed(f: &OpenFile) {
    file_event(f, IN_ACCESS);
}

/// `f` was just opened (`fsnotify_open`).
pub fn opened(f: &OpenFile) {
    file_event(f, IN_OPEN);
}

/// The open file description `f` is going away (`__fput`): `fsnotify_close`, and the
/// description's fasync owner, leases and dnotify marks go (`locks_remove_file`,
/// `fasync_helper(-1, ...)`).
fn released(f: &OpenFile) {
    crate::fasync::released(f);
    crate::locks::lease_released(f);
    crate::dnotify::released(f);
    let write = matches!(f.flags() & 3, 1 | 2);
    file_event(
        f,
        if write {
            IN_CLOSE_WRITE
        } else {
            IN_CLOSE_NOWRITE
        },
    );
}

/// Connects inotify (and fasync, leases, dnotify) to the VFS's release of open files (once,
/// at boot).
pub fn install() {
    um_kernel::vfs::set_release_hook(released);
}

/// Parses a sysctl write (`proc_dointvec_minmax` with a minimum of 0).
fn parse_knob(data: &[u8]) -> SysResult<i64> {
    let s = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
    match s.trim().parse::<i32>() {
        Ok(v) if v >= 0 => Ok(i64::from(v)),
        _ => Err(Errno::EINVAL),
    }
}

/// A read-write sysctl backed by `v`.
fn knob(fs: &Arc<crate::procfs::ProcFs>, v: &'static AtomicI64) -> Arc<crate::procfs::ProcInode> {
    crate::procfs::ProcInode::file_rw(
        fs,
        move |_, _| Ok(format!("{}\n", v.load(Ordering::Relaxed)).into_bytes()),
        move |_, _, data| {
            v.store(parse_knob(data)?, Ordering::Relaxed);
            Ok(data.len())
        },
    )
}

/// `/proc/sys/fs/inotify`: the limits (fs/notify/inotify/inotify_user.c defaults; the
/// watch limit from memory as `inotify_user_setup` computes it, about 1% of RAM).
/// `max_queued_events` applies to instances made after a change, as in Linux.
pub fn proc_sys_dir(fs: &Arc<crate::procfs::ProcFs>) -> Arc<crate::procfs::ProcInode> {
    use crate::procfs::ProcInode;
    let watches = ProcInode::file_rw(
        fs,
        |k, _| {
            let mut n = MAX_USER_WATCHES.load(Ordering::Relaxed);
            if n == 0 {
                // INOTIFY_WATCH_COST: a mark plus two inodes, about 1.3 KiB.
                let bytes = k.frames.total_frames() as u64 * k.frames.granule().size();
                n = (bytes / 100 / 1320).clamp(8192, 1_048_576) as i64;
            }
            Ok(format!("{n}\n").into_bytes())
        },
        |_, _, data| {
            MAX_USER_WATCHES.store(parse_knob(data)?, Ordering::Relaxed);
            Ok(data.len())
        },
    );
    ProcInode::dir(
        fs,
        vec![
            ("max_queued_events", knob(fs, &MAX_QUEUED_EVENTS)),
            ("max_user_instances", knob(fs, &MAX_USER_INSTANCES)),
            ("max_user_watches", watches),
        ],
    )
}

/// Linux `notify_change` (fs/attr.c): changes the attributes, then tells watchers what
/// changed (`fsnotify_change`).
pub fn notify_change(d: &Dentry, attr: &SetAttr) -> SysResult<()> {
    d.inode.setattr(attr)?;
    if !active() {
        return Ok(());
    }
    let mut mask = 0;
    if attr.uid.is_some() || attr.gid.is_some() || attr.mode.is_some() {
        mask |= IN_ATTRIB;
    }
    if attr.size.is_some() {
        mask |= IN_MODIFY;
    }
    match (attr.atime.is_some(), attr.mtime.is_some()) {
        (true, true) => mask |= IN_ATTRIB,
        (true, false) => mask |= IN_ACCESS,
        (false, true) => mask |= IN_MODIFY,
        (false, false) => {}
    }
    if mask != 0 {
        dentry_event(d, mask);
    }
    Ok(())
}

/// The file of an inotify descriptor.
pub struct InotifyFile(pub Arc<Inotify>);

impl FileOps for InotifyFile {
    /// `inotify_read`: whole events only (`EINVAL` if the first does not fit), waiting while
    /// none is queued.
    fn read(&self, io: &IoCtx<'_>, buf: &mut [u8], _off: u64) -> SysResult<usize> {
        let g = &self.0;
        let out = io.wait(&[&g.wait], || {
            let mut st = lock(&g.st);
            let first = st.queue.front()?;
            if first.size() > buf.len() {
                return Some(Err(Errno::EINVAL));
            }
            let mut out = Vec::new();
            while let Some(ev) = st.queue.front() {
                if out.len() + ev.size() > buf.len() {
                    break;
                }
                ev.encode(&mut out);
                st.queue.pop_front();
            }
            Some(Ok(out))
        })??;
        buf[..out.len()].copy_from_slice(&out);
        Ok(out.len())
    }

    fn is_stream(&self) -> bool {
        true
    }

    fn stat(&self) -> SysResult<Kstat> {
        Ok(anon_kstat(0o600, self.0.ino, 0x0d, 0, 0))
    }

    fn ioctl(&self, _io: &IoCtx<'_>, cmd: u32, arg: u64, mem: &mut dyn GuestMem) -> SysResult<u64> {
        match cmd {
            FIONREAD => {
                let n = self.0.pending_bytes() as i32;
                mem.write(arg, &n.to_le_bytes())?;
                Ok(0)
            }
            _ => Err(Errno::ENOTTY),
        }
    }

    fn poll(&self, events: u16, pt: Option<&PollTable<'_>>) -> u16 {
        if let Some(pt) = pt {
            pt.wait_on(&self.0.wait);
        }
        if lock(&self.0.st).queue.is_empty() {
            0
        } else {
            events & (POLLIN | POLLRDNORM)
        }
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }

    fn anon_name(&self) -> Option<&'static str> {
        Some("inotify")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tmpfs::TmpFs;
    use um_kernel::vfs::Owner;

    fn drain(g: &Inotify) -> Vec<Event> {
        lock(&g.st).queue.drain(..).collect()
    }

    #[test]
    fn encoding_pads_names_to_16() {
        let mut out = Vec::new();
        let ev = Event {
            wd: 1,
            mask: IN_CREATE,
            cookie: 0,
            name: b"abc".to_vec(),
        };
        ev.encode(&mut out);
        assert_eq!(out.len(), 32);
        assert_eq!(ev.size(), 32);
        assert_eq!(&out[12..16], &16u32.to_le_bytes());
        assert_eq!(&out[16..20], b"abc\0");
        let mut out = Vec::new();
        ignored(3).encode(&mut out);
        assert_eq!(out.len(), 16);
    }

    #[test]
    fn create_delete_rename_and_merge() {
        let root = TmpFs::new_root_inode(0o755, 0, 0);
        let g = Inotify::new();
        let wd = g.add_watch(&*root, IN_ALL_EVENTS).unwrap();
        assert_eq!(
            g.add_watch(&*root, IN_CREATE | IN_MASK_CREATE),
            Err(Errno::EEXIST)
        );
        assert_eq!(
            g.add_watch(&*root, IN_ALL_EVENTS).unwrap(),
            wd,
            "same inode, same wd"
        );
        let f = root.create(b"f", 0o644, Owner::default()).unwrap();
        create(&*root, b"f", false);
        create(&*root, b"f", false);
        let evs = drain(&g);
        assert_eq!(evs.len(), 1, "an event equal to the last one is merged");
        assert_eq!(
            (evs[0].wd, evs[0].mask, evs[0].name.as_slice()),
            (wd, IN_CREATE, &b"f"[..])
        );
        let st = f.stat().unwrap();
        root.rename(b"f", &(root.clone() as Arc<dyn Inode>), b"g", 0)
            .unwrap();
        rename(&*root, b"f", &*root, b"g", (&*f, &st), None);
        let evs = drain(&g);
        assert_eq!(evs[0].mask, IN_MOVED_FROM);
        assert_eq!(evs[1].mask, IN_MOVED_TO);
        assert_eq!(evs[0].cookie, evs[1].cookie);
        assert_ne!(evs[0].cookie, 0);
        let fw = g.add_watch(&*f, IN_ALL_EVENTS).unwrap();
        assert_ne!(fw, wd);
        root.unlink(b"g").unwrap();
        delete(&*root, b"g", &*f, &st);
        let evs: Vec<(i32, u32)> = drain(&g).iter().map(|e| (e.wd, e.mask)).collect();
        assert_eq!(
            evs,
            vec![
                (fw, IN_ATTRIB),
                (fw, IN_DELETE_SELF),
                (fw, IN_IGNORED),
                (wd, IN_DELETE)
            ]
        );
        assert_eq!(g.rm_watch(fw), Err(Errno::EINVAL), "gone with the inode");
        g.rm_watch(wd).unwrap();
        assert_eq!(drain(&g), vec![ignored(wd)]);
    }
}
