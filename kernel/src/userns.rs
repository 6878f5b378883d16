//! User namespaces (Linux `kernel/user_namespace.c`, `kernel/capability.c`,
//! user_namespaces(7), capabilities(7)).
//!
//! A [`UserNs`] has a parent (none for the initial namespace, [`root`]), a level (0 at the
//! root, Linux's nesting limit applies), the creator's effective ids (`owner`, `group`) and
//! the id maps written through `/proc/PID/uid_map` and `gid_map` ([`IdMap`]). Credentials
//! ([`crate::task::Creds`]) always hold kernel-wide ids (Linux's `kuid_t`); ids cross the
//! syscall boundary through the caller's namespace: [`from_kuid_munged`] on the way out (an
//! unmapped id shows as the overflow id, 65534), [`make_kuid`] on the way in (`None`: the
//! caller answers `EINVAL`). The initial namespace maps every id to itself. A map's lower
//! ids are stored as kernel ids (map_write translates them through the parent's map), so
//! one lookup in one map translates in any namespace.
//!
//! Capabilities are relative to a namespace ([`ns_capable`], Linux `cap_capable`): a
//! process's capability sets ([`crate::task::Caps`]) are valid in its own namespace
//! (`Process::userns`, Linux `cred->user_ns`); in a descendant namespace whose owner is the
//! process's euid it has every capability; elsewhere none. `Process::capable` is Linux's
//! `capable()`, the check against the initial namespace. Every other namespace kind records
//! the user namespace that owns it ([`crate::nsfs::Namespace::owner`]) and its checks use
//! that owner.
//!
//! Creation ([`create`]): `clone(CLONE_NEWUSER)`, `unshare(CLONE_NEWUSER)` (no privilege
//! needed, as on Linux) and `setns(2)` into one ([`setns`]) give the process every
//! capability in the namespace (`set_cred_user_ns`). The number of live namespaces is
//! limited by `/proc/sys/user/max_user_namespaces` ([`limits`]).
//!
//! Neighbours: `sys/ns.rs` and `sys/fork.rs` (the syscalls), `sys/cred.rs` and
//! `sys/process.rs` (ids in and out), procfs (`uid_map`, `gid_map`, `setgroups`, `ns/user`).

use crate::task::{Caps, Process, lock};
use crate::vfs::Dentry;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use um_uapi::abi::capability::{CAP_SETFCAP, CAP_SETGID, CAP_SETUID, CAP_SYS_ADMIN};
use um_uapi::{Errno, SysResult};

/// The initial user namespace's inode number (include/linux/proc_ns.h `PROC_USER_INIT_INO`).
pub const INIT_INO: u64 = 0xEFFF_FFFD;
/// kernel/user_namespace.c `create_user_ns`: a parent deeper than this may not have a child
/// (`ENOSPC`); the initial namespace is level 0.
pub const MAX_PARENT_LEVEL: u32 = 32;
/// include/linux/user_namespace.h `UID_GID_MAP_MAX_EXTENTS`.
pub const MAX_EXTENTS: usize = 340;
/// include/linux/highuid.h `DEFAULT_OVERFLOWUID` (and `DEFAULT_OVERFLOWGID`).
pub const DEFAULT_OVERFLOW_ID: u32 = 65534;

/// `/proc/sys/kernel/overflowuid` (kernel/sysctl.c, 0..65535).
pub static OVERFLOW_UID: AtomicU32 = AtomicU32::new(DEFAULT_OVERFLOW_ID);
/// `/proc/sys/kernel/overflowgid`.
pub static OVERFLOW_GID: AtomicU32 = AtomicU32::new(DEFAULT_OVERFLOW_ID);

/// One line of a map (`struct uid_gid_extent`): ids `first..first+count` of the namespace
/// are kernel ids `lower..lower+count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub first: u32,
    pub lower: u32,
    pub count: u32,
}

/// A uid or gid map (`struct uid_gid_map`); empty until written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IdMap {
    pub extents: Vec<Extent>,
}

impl IdMap {
    /// The identity map of the initial namespace (`0 0 4294967295`).
    pub fn identity() -> IdMap {
        IdMap {
            extents: vec![Extent {
                first: 0,
                lower: 0,
                count: u32::MAX,
            }],
        }
    }

    /// `map_id_range_down`: the kernel id of namespace id `id` when the whole range
    /// `id..id+count` lies in one extent.
    pub fn down_range(&self, id: u32, count: u32) -> Option<u32> {
        let last = u64::from(id) + u64::from(count.max(1)) - 1;
        self.extents
            .iter()
            .find(|e| id >= e.first && last < u64::from(e.first) + u64::from(e.count))
            .map(|e| id - e.first + e.lower)
    }

    /// `map_id_down`: the kernel id of namespace id `id`.
    pub fn down(&self, id: u32) -> Option<u32> {
        self.down_range(id, 1)
    }

    /// `map_id_up`: the namespace id of kernel id `kid`.
    pub fn up(&self, kid: u32) -> Option<u32> {
        self.extents
            .iter()
            .find(|e| kid >= e.lower && u64::from(kid) < u64::from(e.lower) + u64::from(e.count))
            .map(|e| kid - e.lower + e.first)
    }
}

/// Which map a `/proc/PID/*_map` file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapKind {
    Uid,
    Gid,
}

/// What a namespace's maps and flags are (guarded by one lock, Linux `userns_state_mutex`).
#[derive(Debug)]
struct State {
    uid_map: IdMap,
    gid_map: IdMap,
    /// `USERNS_SETGROUPS_ALLOWED`: inherited from the parent, cleared by writing "deny".
    setgroups_allowed: bool,
}

/// A user namespace (Linux `struct user_namespace`).
pub struct UserNs {
    inum: u64,
    parent: Option<Arc<UserNs>>,
    level: u32,
    /// The creator's euid and egid (kernel ids).
    owner: u32,
    group: u32,
    /// Whether the creator held CAP_SETFCAP in the parent (`parent_could_setfcap`): mapping
    /// the parent's uid 0 needs it.
    parent_could_setfcap: bool,
    st: Mutex<State>,
}

/// Live namespaces besides the initial one, for `max_user_namespaces`.
static LIVE: AtomicU64 = AtomicU64::new(0);

impl Drop for UserNs {
    fn drop(&mut self) {
        if self.parent.is_some() {
            LIVE.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// The initial namespace (`init_user_ns`).
pub fn root() -> &'static Arc<UserNs> {
    static ROOT: OnceLock<Arc<UserNs>> = OnceLock::new();
    ROOT.get_or_init(|| {
        Arc::new(UserNs {
            inum: INIT_INO,
            parent: None,
            level: 0,
            owner: 0,
            group: 0,
            parent_could_setfcap: true,
            st: Mutex::new(State {
                uid_map: IdMap::identity(),
                gid_map: IdMap::identity(),
                setgroups_allowed: true,
            }),
        })
    })
}

impl UserNs {
    /// The namespace's inode number, shown in `user:[N]`.
    pub fn inum(&self) -> u64 {
        self.inum
    }

    /// The parent (none for the initial namespace).
    pub fn parent(&self) -> Option<&Arc<UserNs>> {
        self.parent.as_ref()
    }

    /// The nesting level (0: the initial namespace).
    pub fn level(&self) -> u32 {
        self.level
    }

    /// The creator's euid (a kernel id): NS_GET_OWNER_UID shows it through the caller's
    /// namespace.
    pub fn owner(&self) -> u32 {
        self.owner
    }

    /// The creator's egid (a kernel id).
    pub fn group(&self) -> u32 {
        self.group
    }

    /// Whether this is the initial namespace.
    pub fn is_root(&self) -> bool {
        self.parent.is_none()
    }

    /// A copy of the uid or gid map.
    pub fn map(&self, kind: MapKind) -> IdMap {
        let st = lock(&self.st);
        match kind {
            MapKind::Uid => st.uid_map.clone(),
            MapKind::Gid => st.gid_map.clone(),
        }
    }

    /// `userns_may_setgroups`: setgroups(2) is allowed ("allow" and a gid map written).
    pub fn may_setgroups(&self) -> bool {
        let st = lock(&self.st);
        st.setgroups_allowed && !st.gid_map.extents.is_empty()
    }

    /// Whether `self` is `other` or one of its ancestors.
    pub fn is_ancestor_of(self: &Arc<Self>, other: &Arc<UserNs>) -> bool {
        let mut ns = other.clone();
        loop {
            if Arc::ptr_eq(&ns, self) {
                return true;
            }
            match ns.parent.clone() {
                Some(p) => ns = p,
                None => return false,
            }
        }
    }
}

/// The namespace `p`'s credentials belong to (`cred->user_ns`).
pub fn of(p: &Process) -> Arc<UserNs> {
    lock(&p.userns).clone()
}

/// The namespace of the task this host thread serves (the initial one if none): Linux's
/// `current_user_ns()`.
pub fn current() -> Arc<UserNs> {
    crate::current::current().map_or_else(|| root().clone(), |t| of(&t.process))
}

/// `make_kuid`: the kernel id of uid `uid` of namespace `ns`.
pub fn make_kuid(ns: &UserNs, uid: u32) -> Option<u32> {
    if uid == u32::MAX {
        return None;
    }
    lock(&ns.st).uid_map.down(uid)
}

/// `make_kgid`.
pub fn make_kgid(ns: &UserNs, gid: u32) -> Option<u32> {
    if gid == u32::MAX {
        return None;
    }
    lock(&ns.st).gid_map.down(gid)
}

/// `from_kuid`: kernel uid `kuid` as namespace `ns` sees it.
pub fn from_kuid(ns: &UserNs, kuid: u32) -> Option<u32> {
    lock(&ns.st).uid_map.up(kuid)
}

/// `from_kgid`.
pub fn from_kgid(ns: &UserNs, kgid: u32) -> Option<u32> {
    lock(&ns.st).gid_map.up(kgid)
}

/// `from_kuid_munged`: an unmapped id is the overflow uid.
pub fn from_kuid_munged(ns: &UserNs, kuid: u32) -> u32 {
    from_kuid(ns, kuid).unwrap_or_else(|| OVERFLOW_UID.load(Ordering::Relaxed))
}

/// `from_kgid_munged`.
pub fn from_kgid_munged(ns: &UserNs, kgid: u32) -> u32 {
    from_kgid(ns, kgid).unwrap_or_else(|| OVERFLOW_GID.load(Ordering::Relaxed))
}

/// A kernel uid as the current task sees it (`from_kuid_munged(current_user_ns(), ..)`).
pub fn uid_out(kuid: u32) -> u32 {
    if crate::current::current().is_none() {
        return kuid;
    }
    from_kuid_munged(&current(), kuid)
}

/// A kernel gid as the current task sees it.
pub fn gid_out(kgid: u32) -> u32 {
    if crate::current::current().is_none() {
        return kgid;
    }
    from_kgid_munged(&current(), kgid)
}

/// `cap_capable` (security/commoncap.c): whether credentials of namespace `cred_ns` with
/// sets `caps` and effective uid `euid` hold `cap` in namespace `target`.
pub fn cap_capable(
    cred_ns: &Arc<UserNs>,
    caps: &Caps,
    euid: u32,
    target: &Arc<UserNs>,
    cap: u32,
) -> bool {
    let mut ns = target.clone();
    loop {
        // In its own namespace a task has the capabilities of its sets.
        if Arc::ptr_eq(&ns, cred_ns) {
            return caps.has(cap);
        }
        // Not in a namespace below its own: none.
        if ns.level <= cred_ns.level {
            return false;
        }
        let Some(parent) = ns.parent.clone() else {
            return false;
        };
        // The owner of a child namespace of its own has every capability in it.
        if Arc::ptr_eq(&parent, cred_ns) && ns.owner == euid {
            return true;
        }
        ns = parent;
    }
}

/// `ns_capable`: whether process `p` holds `cap` in namespace `target`.
pub fn ns_capable(p: &Process, target: &Arc<UserNs>, cap: u32) -> bool {
    let mine = of(p);
    let caps = *lock(&p.caps);
    let euid = lock(&p.creds).euid;
    cap_capable(&mine, &caps, euid, target, cap)
}

/// What entering a namespace owned by `owner` needs (the `*ns_install` functions):
/// CAP_SYS_ADMIN there and in the caller's own namespace.
pub fn may_install(p: &Process, owner: &Arc<UserNs>) -> bool {
    ns_capable(p, owner, CAP_SYS_ADMIN) && ns_capable(p, &of(p), CAP_SYS_ADMIN)
}

/// The sysctl limits of `/proc/sys/user` (kernel/ucount.c `user_table`). Only
/// `max_user_namespaces` is enforced; the others are kept and shown.
pub mod limits {
    use std::sync::atomic::AtomicU64;

    /// Linux's default is `max_threads / 2` of the initial namespace (kernel/user_namespace.c
    /// `set_max_user_namespaces`... via `init_user_ns.ucount_max`); a fixed figure of that
    /// order here.
    pub const DEFAULT: u64 = 63_470;

    /// The names under `/proc/sys/user`, in Linux's order, and their values.
    pub static LIMITS: [(&str, AtomicU64); 10] = [
        ("max_user_namespaces", AtomicU64::new(DEFAULT)),
        ("max_pid_namespaces", AtomicU64::new(DEFAULT)),
        ("max_uts_namespaces", AtomicU64::new(DEFAULT)),
        ("max_ipc_namespaces", AtomicU64::new(DEFAULT)),
        ("max_net_namespaces", AtomicU64::new(DEFAULT)),
        ("max_mnt_namespaces", AtomicU64::new(DEFAULT)),
        ("max_cgroup_namespaces", AtomicU64::new(DEFAULT)),
        ("max_time_namespaces", AtomicU64::new(DEFAULT)),
        ("max_inotify_instances", AtomicU64::new(128)),
        ("max_inotify_watches", AtomicU64::new(8192)),
    ];
}

/// `create_user_ns`: a child of `p`'s namespace owned by its effective ids. `ENOSPC` past the
/// nesting limit or `max_user_namespaces`; `EPERM` for a chrooted caller
/// (`current_chrooted`) or one whose ids have no mapping in its namespace.
pub fn create(p: &Process) -> SysResult<Arc<UserNs>> {
    let parent = of(p);
    if parent.level > MAX_PARENT_LEVEL {
        return Err(Errno::ENOSPC);
    }
    let cr = *lock(&p.creds);
    if from_kuid(&parent, cr.euid).is_none() || from_kgid(&parent, cr.egid).is_none() {
        return Err(Errno::EPERM);
    }
    {
        // A root that is not the mount namespace's root: the new namespace's root could
        // see what the chroot hides.
        let fs = lock(&p.fs);
        let ns_root = lock(&crate::mntns::of(p).root).clone();
        if let Some(r) = ns_root
            && !Arc::ptr_eq(&r, &fs.root)
            && r.path() != fs.root.path()
        {
            return Err(Errno::EPERM);
        }
    }
    let max = limits::LIMITS[0].1.load(Ordering::Relaxed);
    if LIVE.fetch_add(1, Ordering::Relaxed) >= max {
        LIVE.fetch_sub(1, Ordering::Relaxed);
        return Err(Errno::ENOSPC);
    }
    let setgroups_allowed = lock(&parent.st).setgroups_allowed;
    let could_setfcap = ns_capable(p, &parent, CAP_SETFCAP);
    Ok(Arc::new(UserNs {
        inum: crate::nsfs::alloc_inum(),
        level: parent.level + 1,
        parent: Some(parent),
        owner: cr.euid,
        group: cr.egid,
        parent_could_setfcap: could_setfcap,
        st: Mutex::new(State {
            uid_map: IdMap::default(),
            gid_map: IdMap::default(),
            setgroups_allowed,
        }),
    }))
}

/// `set_cred_user_ns`: `p` now lives in `ns`, with every capability there (and no
/// inheritable ones, default securebits).
pub fn enter(p: &Process, ns: Arc<UserNs>) {
    *lock(&p.userns) = ns;
    let mut caps = lock(&p.caps);
    let nnp = caps.no_new_privs;
    *caps = Caps::init();
    caps.no_new_privs = nnp;
}

/// setns(2) into `ns` (`userns_install`): not the caller's own namespace (`EINVAL`), not
/// with other threads (`EINVAL`), CAP_SYS_ADMIN in it (`EPERM`).
pub fn setns(p: &Process, ns: &Arc<UserNs>, threads: usize) -> SysResult<()> {
    if Arc::ptr_eq(ns, &of(p)) || threads > 1 {
        return Err(Errno::EINVAL);
    }
    if !ns_capable(p, ns, CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    enter(p, ns.clone());
    Ok(())
}

/// `map_write`'s parser: lines of "first lower count", each field as `simple_strtoul` reads
/// it, blanks around them; `EINVAL` for junk, a zero or wrapping count, overlapping extents
/// or too many lines.
pub fn parse_map(data: &[u8]) -> SysResult<IdMap> {
    let text = data.strip_suffix(b"\0").unwrap_or(data);
    let mut map = IdMap::default();
    let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    // A final newline ends the last line; it does not start another.
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    if text.contains(&0) {
        return Err(Errno::EINVAL);
    }
    for line in lines {
        let mut pos = 0;
        let mut field = |last: bool| -> SysResult<u32> {
            while pos < line.len() && line[pos].is_ascii_whitespace() {
                pos += 1;
            }
            let mut v: u64 = 0;
            while pos < line.len() && line[pos].is_ascii_digit() {
                v = v.wrapping_mul(10).wrapping_add(u64::from(line[pos] - b'0'));
                pos += 1;
            }
            // The first two fields must be followed by a blank, the last by a blank or the
            // end of the line.
            let ok = if pos < line.len() {
                line[pos].is_ascii_whitespace()
            } else {
                last
            };
            if !ok {
                return Err(Errno::EINVAL);
            }
            Ok(v as u32)
        };
        let first = field(false)?;
        let lower = field(false)?;
        let count = field(true)?;
        if line[pos..].iter().any(|b| !b.is_ascii_whitespace()) {
            return Err(Errno::EINVAL);
        }
        if first == u32::MAX || lower == u32::MAX {
            return Err(Errno::EINVAL);
        }
        if first.checked_add(count).is_none_or(|e| e <= first)
            || lower.checked_add(count).is_none_or(|e| e <= lower)
        {
            return Err(Errno::EINVAL);
        }
        let e = Extent {
            first,
            lower,
            count,
        };
        // mappings_overlap: neither the upper nor the lower ranges may meet another's.
        let meets =
            |a: u32, b: u32, n: u32, m: u32| a < b.saturating_add(m) && b < a.saturating_add(n);
        if map.extents.iter().any(|x| {
            meets(e.first, x.first, e.count, x.count) || meets(e.lower, x.lower, e.count, x.count)
        }) {
            return Err(Errno::EINVAL);
        }
        if map.extents.len() == MAX_EXTENTS {
            return Err(Errno::EINVAL);
        }
        map.extents.push(e);
    }
    if map.extents.is_empty() {
        return Err(Errno::EINVAL);
    }
    Ok(map)
}

/// A write to `/proc/PID/uid_map` or `gid_map` of namespace `ns` by process `w`
/// (`map_write`, with the writer standing for the opener, `file->f_cred`). Returns the
/// bytes taken.
pub fn write_map(ns: &Arc<UserNs>, kind: MapKind, w: &Process, data: &[u8]) -> SysResult<usize> {
    let wns = of(w);
    let parent = ns.parent.clone().ok_or(Errno::EPERM)?;
    // Only from the namespace itself or its parent.
    if !Arc::ptr_eq(&wns, ns) && !Arc::ptr_eq(&wns, &parent) {
        return Err(Errno::EPERM);
    }
    if data.len() as u64 >= um_mm::page_size() {
        return Err(Errno::EINVAL);
    }
    let cap_setid = match kind {
        MapKind::Uid => CAP_SETUID,
        MapKind::Gid => CAP_SETGID,
    };
    // One write per map.
    {
        let st = lock(&ns.st);
        let m = match kind {
            MapKind::Uid => &st.uid_map,
            MapKind::Gid => &st.gid_map,
        };
        if !m.extents.is_empty() {
            return Err(Errno::EPERM);
        }
    }
    if !ns_capable(w, ns, CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    let mut map = parse_map(data)?;
    if !idmap_permitted(ns, &parent, &wns, kind, cap_setid, w, &map) {
        return Err(Errno::EPERM);
    }
    // Lower ids are the parent's: translate them to kernel ids, each range whole.
    let pmap = parent.map(kind);
    for e in &mut map.extents {
        e.lower = pmap.down_range(e.lower, e.count).ok_or(Errno::EPERM)?;
    }
    let mut st = lock(&ns.st);
    let slot = match kind {
        MapKind::Uid => &mut st.uid_map,
        MapKind::Gid => &mut st.gid_map,
    };
    if !slot.extents.is_empty() {
        return Err(Errno::EPERM);
    }
    *slot = map;
    Ok(data.len())
}

/// `new_idmap_permitted` (and `verify_root_map` for uid maps).
fn idmap_permitted(
    ns: &Arc<UserNs>,
    parent: &Arc<UserNs>,
    wns: &Arc<UserNs>,
    kind: MapKind,
    cap_setid: u32,
    w: &Process,
    map: &IdMap,
) -> bool {
    let cr = *lock(&w.creds);
    if kind == MapKind::Uid && map.extents.iter().any(|e| e.lower == 0) {
        // Mapping the parent's uid 0 needs CAP_SETFCAP there: the creator's when it writes
        // its own namespace's map, the writer's otherwise.
        let ok = if Arc::ptr_eq(ns, wns) {
            ns.parent_could_setfcap
        } else {
            ns_capable(w, parent, CAP_SETFCAP)
        };
        if !ok {
            return false;
        }
    }
    // The one line mapping the owner's own id needs no privilege (a gid only once setgroups
    // is denied).
    if let [e] = map.extents[..]
        && e.count == 1
        && ns.owner == cr.euid
    {
        match kind {
            MapKind::Uid => {
                if make_kuid(parent, e.lower) == Some(cr.euid) {
                    return true;
                }
            }
            MapKind::Gid => {
                if !lock(&ns.st).setgroups_allowed && make_kgid(parent, e.lower) == Some(cr.egid) {
                    return true;
                }
            }
        }
    }
    // Anything else: CAP_SETUID/CAP_SETGID over the parent namespace.
    ns_capable(w, parent, cap_setid)
}

/// What `/proc/PID/uid_map` or `gid_map` of `ns` reads for a reader in `reader`
/// (`uid_m_show`): lower ids in the reader's namespace, or its parent's when the reader is
/// in `ns` itself; an id the reader cannot see is 4294967295.
pub fn format_map(ns: &UserNs, kind: MapKind, reader: &Arc<UserNs>) -> String {
    let mut lower_ns = reader.clone();
    if std::ptr::eq(&*lower_ns, ns)
        && let Some(p) = lower_ns.parent.clone()
    {
        lower_ns = p;
    }
    let lower_map = lower_ns.map(kind);
    let mut s = String::new();
    for e in ns.map(kind).extents {
        let lower = lower_map.up(e.lower).unwrap_or(u32::MAX);
        s.push_str(&format!("{:>10} {:>10} {:>10}\n", e.first, lower, e.count));
    }
    s
}

/// What `/proc/PID/setgroups` reads (`proc_setgroups_show`).
pub fn setgroups_text(ns: &UserNs) -> &'static str {
    if lock(&ns.st).setgroups_allowed {
        "allow\n"
    } else {
        "deny\n"
    }
}

/// A write to `/proc/PID/setgroups` of `ns` by `w` (`proc_setgroups_open` and
/// `proc_setgroups_write`): CAP_SYS_ADMIN in `ns` (`EPERM`); "allow" or "deny" and blanks
/// only, fewer than 8 bytes (`EINVAL`); "allow" after "deny", or "deny" once a gid map is
/// written, `EPERM`.
pub fn write_setgroups(ns: &Arc<UserNs>, w: &Process, data: &[u8]) -> SysResult<usize> {
    if !ns_capable(w, ns, CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    if data.len() >= 8 {
        return Err(Errno::EINVAL);
    }
    let s = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
    let (allow, rest) = if let Some(r) = s.strip_prefix("allow") {
        (true, r)
    } else if let Some(r) = s.strip_prefix("deny") {
        (false, r)
    } else {
        return Err(Errno::EINVAL);
    };
    if rest.chars().any(|c| !c.is_ascii_whitespace()) {
        return Err(Errno::EINVAL);
    }
    let mut st = lock(&ns.st);
    if allow {
        if !st.setgroups_allowed {
            return Err(Errno::EPERM);
        }
    } else {
        if !st.gid_map.extents.is_empty() {
            return Err(Errno::EPERM);
        }
        st.setgroups_allowed = false;
    }
    Ok(data.len())
}

impl crate::nsfs::Namespace for UserNs {
    const KIND: &'static str = "user";
    const NSTYPE: u64 = um_uapi::abi::sched::CloneFlags::NEWUSER.bits();
    fn parent_ns(&self) -> Option<Arc<Self>> {
        self.parent.clone()
    }
    fn inum(&self) -> u64 {
        self.inum
    }
    fn owner(&self) -> Option<Arc<UserNs>> {
        self.parent.clone()
    }
}

/// An open user namespace file: setns(2) takes it.
pub type UserNsFile = crate::nsfs::NsFile<UserNs>;

/// The text of a `/proc/PID/ns/user` link: "user:[N]".
pub fn link_name(ns: &UserNs) -> Vec<u8> {
    crate::nsfs::link_name(ns)
}

/// A dentry for `ns`'s nsfs inode, where a `/proc/PID/ns/user` magic link leads.
pub fn ns_dentry(ns: &Arc<UserNs>) -> Arc<Dentry> {
    crate::nsfs::dentry(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_rules() {
        let m = parse_map(b"0 1000 1\n").unwrap();
        assert_eq!(
            m.extents,
            vec![Extent {
                first: 0,
                lower: 1000,
                count: 1
            }]
        );
        assert_eq!(parse_map(b"  0   1000   1").unwrap().extents.len(), 1);
        assert_eq!(parse_map(b"0 1000 1\n1 2000 5\n").unwrap().extents.len(), 2);
        assert_eq!(parse_map(b"0 1000 0\n"), Err(Errno::EINVAL), "zero count");
        assert_eq!(parse_map(b"0 1000\n"), Err(Errno::EINVAL), "two fields");
        assert_eq!(parse_map(b"0 1000 1 x\n"), Err(Errno::EINVAL), "junk");
        assert_eq!(parse_map(b"a 1000 1\n"), Err(Errno::EINVAL));
        assert_eq!(parse_map(b""), Err(Errno::EINVAL), "empty");
        assert_eq!(parse_map(b"0 0 4294967295\n").unwrap().extents.len(), 1);
        assert_eq!(parse_map(b"1 0 4294967295\n"), Err(Errno::EINVAL), "wraps");
        assert_eq!(
            parse_map(b"0 1000 10\n5 3000 10\n"),
            Err(Errno::EINVAL),
            "upper overlap"
        );
        assert_eq!(
            parse_map(b"0 1000 10\n50 1005 10\n"),
            Err(Errno::EINVAL),
            "lower overlap"
        );
        let many: String = (0..341).map(|i| format!("{i} {} 1\n", i + 1000)).collect();
        assert_eq!(parse_map(many.as_bytes()), Err(Errno::EINVAL));
    }

    #[test]
    fn map_lookups() {
        let m = parse_map(b"0 1000 1\n10 2000 5\n").unwrap();
        assert_eq!(m.down(0), Some(1000));
        assert_eq!(m.down(1), None);
        assert_eq!(m.down(14), Some(2004));
        assert_eq!(m.down_range(10, 5), Some(2000));
        assert_eq!(m.down_range(12, 5), None);
        assert_eq!(m.up(2003), Some(13));
        assert_eq!(m.up(999), None);
        assert_eq!(IdMap::identity().up(u32::MAX - 1), Some(u32::MAX - 1));
    }

    #[test]
    fn capability_walk() {
        let child = Arc::new(UserNs {
            inum: 1,
            parent: Some(root().clone()),
            level: 1,
            owner: 1000,
            group: 1000,
            parent_could_setfcap: false,
            st: Mutex::new(State {
                uid_map: IdMap::default(),
                gid_map: IdMap::default(),
                setgroups_allowed: true,
            }),
        });
        LIVE.fetch_add(1, Ordering::Relaxed);
        let none = Caps {
            effective: 0,
            permitted: 0,
            ..Caps::init()
        };
        // The owner in the parent has every capability in the child, others none.
        assert!(cap_capable(root(), &none, 1000, &child, CAP_SYS_ADMIN));
        assert!(!cap_capable(root(), &none, 1001, &child, CAP_SYS_ADMIN));
        // Root of the initial namespace has them through its sets.
        assert!(cap_capable(root(), &Caps::init(), 0, &child, CAP_SYS_ADMIN));
        // Full sets in the child are nothing in the parent.
        assert!(!cap_capable(
            &child,
            &Caps::init(),
            1000,
            root(),
            CAP_SYS_ADMIN
        ));
        assert!(cap_capable(
            &child,
            &Caps::init(),
            1000,
            &child,
            CAP_SYS_ADMIN
        ));
        assert_eq!(child.group, 1000);
    }
}
