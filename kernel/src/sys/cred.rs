//! Credential changes: setuid, setgid, setreuid, setregid, setresuid, setresgid, setfsuid,
//! setfsgid (Linux kernel/sys.c, credentials(7)).
//!
//! capget, capset (kernel/capability.c, security/commoncap.c).
//!
//! The rules are pure functions of the old credentials ([`IdSet`], [`Caps`]) so they can be
//! unit-tested; the syscalls apply them to the process's [`Creds`] and [`Caps`]. Privilege is
//! the capability in the effective set (CAP_SETUID, CAP_SETGID), and the sets follow uid
//! changes as `cap_task_fix_setuid` makes them.

use crate::syscall::{SyscallCtx, SyscallTable};
use crate::task::{CAP_FULL, Caps, Creds, Process, lock};
use um_uapi::{Errno, SysResult};

/// Real, effective, saved and filesystem ids of one kind (user or group).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdSet {
    pub r: u32,
    pub e: u32,
    pub s: u32,
    pub fs: u32,
}

/// `-1` as an id argument: leave that id unchanged.
const UNCHANGED: u32 = u32::MAX;

fn arg(v: u64) -> u32 {
    v as u32
}

/// setuid(2)/setgid(2) (`__sys_setuid`): privileged sets real, effective, saved and fs ids;
/// otherwise only the effective (and fs) id, and only to the real or saved id.
pub fn set_id(old: IdSet, id: u32, cap: bool) -> Result<IdSet, Errno> {
    if id == UNCHANGED {
        return Err(Errno::EINVAL);
    }
    let mut new = old;
    if cap {
        new.r = id;
        new.s = id;
    } else if id != old.r && id != old.s {
        return Err(Errno::EPERM);
    }
    new.e = id;
    new.fs = id;
    Ok(new)
}

/// setreuid(2)/setregid(2) (`__sys_setreuid`): unprivileged, the real id may become the real
/// or effective id, the effective id any of real, effective and saved. The saved id follows
/// the new effective id when the real id is set, or the effective id is set to something
/// other than the old real id.
pub fn set_re_id(old: IdSet, r: u32, e: u32, cap: bool) -> Result<IdSet, Errno> {
    let mut new = old;
    if r != UNCHANGED {
        if !cap && r != old.r && r != old.e {
            return Err(Errno::EPERM);
        }
        new.r = r;
    }
    if e != UNCHANGED {
        if !cap && e != old.r && e != old.e && e != old.s {
            return Err(Errno::EPERM);
        }
        new.e = e;
    }
    if r != UNCHANGED || (e != UNCHANGED && e != old.r) {
        new.s = new.e;
    }
    new.fs = new.e;
    Ok(new)
}

/// setresuid(2)/setresgid(2) (`__sys_setresuid`): unprivileged, each id given may only become
/// one of the old real, effective and saved ids; the fs id follows the effective id.
pub fn set_res_id(old: IdSet, r: u32, e: u32, s: u32, cap: bool) -> Result<IdSet, Errno> {
    let ok = |v: u32| v == UNCHANGED || cap || v == old.r || v == old.e || v == old.s;
    if !(ok(r) && ok(e) && ok(s)) {
        return Err(Errno::EPERM);
    }
    let pick = |v: u32, cur: u32| if v == UNCHANGED { cur } else { v };
    let mut new = old;
    new.r = pick(r, old.r);
    new.e = pick(e, old.e);
    new.s = pick(s, old.s);
    new.fs = new.e;
    Ok(new)
}

/// setfsuid(2)/setfsgid(2) (`__sys_setfsuid`): never fails; the fs id changes only to one of
/// the real, effective, saved or current fs ids unless privileged. Returns the new set and the
/// old fs id (the syscall's result either way).
pub fn set_fs_id(old: IdSet, id: u32, cap: bool) -> (IdSet, u32) {
    let mut new = old;
    if id != UNCHANGED && (cap || id == old.r || id == old.e || id == old.s || id == old.fs) {
        new.fs = id;
    }
    (new, old.fs)
}

fn uids(c: &Creds) -> IdSet {
    IdSet {
        r: c.uid,
        e: c.euid,
        s: c.suid,
        fs: c.fsuid,
    }
}

fn gids(c: &Creds) -> IdSet {
    IdSet {
        r: c.gid,
        e: c.egid,
        s: c.sgid,
        fs: c.fsgid,
    }
}

fn put_uids(c: &mut Creds, n: IdSet) {
    (c.uid, c.euid, c.suid, c.fsuid) = (n.r, n.e, n.s, n.fs);
}

fn put_gids(c: &mut Creds, n: IdSet) {
    (c.gid, c.egid, c.sgid, c.fsgid) = (n.r, n.e, n.s, n.fs);
}

use um_uapi::abi::capability::CAP_SETGID;
use um_uapi::abi::capability::CAP_SETUID;
/// securebits (include/uapi/linux/securebits.h).
pub const SECBIT_NO_SETUID_FIXUP: u32 = 1 << 2;
pub const SECBIT_KEEP_CAPS: u32 = 1 << 4;
/// The capabilities of file access (include/linux/capability.h `CAP_FS_MASK`): CHOWN,
/// DAC_OVERRIDE, DAC_READ_SEARCH, FOWNER, FSETID, LINUX_IMMUTABLE, MKNOD, MAC_OVERRIDE.
const CAP_FS_MASK: u64 = 0x1f | 1 << 9 | 1 << 27 | 1 << 32;

/// How the capability sets follow a change of user ids (security/commoncap.c
/// `cap_task_fix_setuid`, `cap_emulate_setxuid`): leaving uid 0 in all of real, effective
/// and saved drops everything (unless SECBIT_KEEP_CAPS keeps the permitted set); an effective
/// uid leaving 0 clears the effective set, one returning to 0 refills it from the permitted.
pub fn fix_setuid(old: IdSet, new: IdSet, caps: &mut Caps) {
    fix_setuid_root(old, new, caps, 0);
}

/// [`fix_setuid`] in a user namespace whose uid 0 is kernel uid `root` (`u32::MAX` when
/// unmapped: no id is root then).
pub fn fix_setuid_root(old: IdSet, new: IdSet, caps: &mut Caps, root: u32) {
    if caps.securebits & SECBIT_NO_SETUID_FIXUP != 0 {
        return;
    }
    // Shift so that `root` is 0 for the tests below.
    let sh = |s: IdSet| IdSet {
        r: s.r.wrapping_sub(root),
        e: s.e.wrapping_sub(root),
        s: s.s.wrapping_sub(root),
        fs: s.fs.wrapping_sub(root),
    };
    if root == u32::MAX {
        // Nobody is root: no transition to or from it (every `uid_eq(.., root_uid)` fails).
        return;
    }
    let (old, new) = (sh(old), sh(new));
    if (old.r == 0 || old.e == 0 || old.s == 0) && new.r != 0 && new.e != 0 && new.s != 0 {
        if caps.securebits & SECBIT_KEEP_CAPS == 0 {
            caps.permitted = 0;
        }
        caps.effective = 0;
        // Programs older than ambient capabilities expect a setresuid away from root and an
        // exec to drop every capability (cap_emulate_setxuid).
        caps.ambient = 0;
    }
    if old.e == 0 && new.e != 0 {
        caps.effective = 0;
    }
    if old.e != 0 && new.e == 0 {
        caps.effective = caps.permitted;
    }
}

/// setfsuid's part of `cap_task_fix_setuid` (LSM_SETID_FS): the file capabilities leave the
/// effective set with fsuid 0, and come back (as far as permitted) with it.
pub fn fix_setfsuid(old_fs: u32, new_fs: u32, caps: &mut Caps) {
    if caps.securebits & SECBIT_NO_SETUID_FIXUP != 0 {
        return;
    }
    if old_fs == 0 && new_fs != 0 {
        caps.effective &= !CAP_FS_MASK;
    }
    if old_fs != 0 && new_fs == 0 {
        caps.effective |= caps.permitted & CAP_FS_MASK;
    }
}

/// What exec does to credentials (fs/exec.c, security/commoncap.c `cap_bprm_creds_from_file`,
/// for files without set-id bits or file capabilities): the saved and fs ids become the
/// effective ones; root (real or effective uid `root`, the kernel id of uid 0 of the user
/// namespace, `None` when unmapped; without SECBIT_NOROOT) gets the bounding and inheritable
/// sets as permitted, effective if its euid is root, and loses its ambient set (root is
/// treated as a privileged file); anyone else keeps only the ambient set, as permitted and
/// effective; SECBIT_KEEP_CAPS is cleared.
pub fn exec_creds(cr: &mut Creds, caps: &mut Caps, root_uid: Option<u32>) {
    const SECBIT_NOROOT: u32 = 1;
    cr.suid = cr.euid;
    cr.fsuid = cr.euid;
    cr.sgid = cr.egid;
    cr.fsgid = cr.egid;
    let is_root = |id: u32| root_uid == Some(id);
    let root = caps.securebits & SECBIT_NOROOT == 0 && (is_root(cr.uid) || is_root(cr.euid));
    if root {
        caps.ambient = 0;
    }
    caps.permitted = if root {
        (caps.bset | caps.inheritable) & CAP_FULL
    } else {
        caps.ambient
    };
    caps.effective = if root && is_root(cr.euid) {
        caps.permitted
    } else {
        caps.ambient
    };
    caps.securebits &= !SECBIT_KEEP_CAPS;
}

/// Applies [`exec_creds`] to a process that has just exec'd (called by fs/src/exec.rs).
pub fn exec_process(p: &Process) {
    let root_uid = crate::userns::make_kuid(&crate::userns::of(p), 0);
    let mut cr = lock(&p.creds);
    let mut caps = lock(&p.caps);
    exec_creds(&mut cr, &mut caps, root_uid);
}

/// Applies `f` to the user (`group` false) or group ids of the caller's credentials; `f`
/// gets whether the caller holds CAP_SETUID (CAP_SETGID for group ids).
fn change(
    c: &mut SyscallCtx<'_>,
    group: bool,
    f: impl FnOnce(IdSet, bool) -> Result<IdSet, Errno>,
) -> SysResult {
    let p = &c.task.process;
    let mut cr = lock(&p.creds);
    let mut caps = lock(&p.caps);
    if group {
        let n = f(gids(&cr), caps.has(CAP_SETGID))?;
        put_gids(&mut cr, n);
    } else {
        let old = uids(&cr);
        let n = f(old, caps.has(CAP_SETUID))?;
        put_uids(&mut cr, n);
        let root = crate::userns::make_kuid(&crate::userns::of(p), 0).unwrap_or(UNCHANGED);
        fix_setuid_root(old, n, &mut caps, root);
    }
    Ok(0)
}

/// An id argument as a kernel id (`make_kuid`/`make_kgid` in the caller's user namespace):
/// `-1` stays "unchanged"; an id without a mapping is `EINVAL` (kernel/sys.c `uid_valid`).
fn kid(c: &SyscallCtx<'_>, group: bool, v: u64) -> SysResult<u32> {
    let id = arg(v);
    if id == UNCHANGED {
        return Ok(UNCHANGED);
    }
    let ns = crate::userns::of(&c.task.process);
    let k = if group {
        crate::userns::make_kgid(&ns, id)
    } else {
        crate::userns::make_kuid(&ns, id)
    };
    k.ok_or(Errno::EINVAL)
}

fn setuid(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if arg(a[0]) == UNCHANGED {
        return Err(Errno::EINVAL);
    }
    let id = kid(c, false, a[0])?;
    change(c, false, |o, cap| set_id(o, id, cap))
}

fn setgid(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if arg(a[0]) == UNCHANGED {
        return Err(Errno::EINVAL);
    }
    let id = kid(c, true, a[0])?;
    change(c, true, |o, cap| set_id(o, id, cap))
}

fn setreuid(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (r, e) = (kid(c, false, a[0])?, kid(c, false, a[1])?);
    change(c, false, |o, cap| set_re_id(o, r, e, cap))
}

fn setregid(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (r, e) = (kid(c, true, a[0])?, kid(c, true, a[1])?);
    change(c, true, |o, cap| set_re_id(o, r, e, cap))
}

fn setresuid(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (r, e, s) = (
        kid(c, false, a[0])?,
        kid(c, false, a[1])?,
        kid(c, false, a[2])?,
    );
    change(c, false, |o, cap| set_res_id(o, r, e, s, cap))
}

fn setresgid(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (r, e, s) = (
        kid(c, true, a[0])?,
        kid(c, true, a[1])?,
        kid(c, true, a[2])?,
    );
    change(c, true, |o, cap| set_res_id(o, r, e, s, cap))
}

/// setfsuid(2): an id without a mapping changes nothing (`uid_valid`); the old fsuid goes
/// out as the caller's namespace sees it.
fn setfsuid(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let p = &c.task.process;
    let ns = crate::userns::of(p);
    let id = crate::userns::make_kuid(&ns, arg(a[0])).unwrap_or(UNCHANGED);
    let root = crate::userns::make_kuid(&ns, 0).unwrap_or(UNCHANGED);
    let mut cr = lock(&p.creds);
    let mut caps = lock(&p.caps);
    let (n, old) = set_fs_id(uids(&cr), id, caps.has(CAP_SETUID));
    put_uids(&mut cr, n);
    if root != UNCHANGED {
        fix_setfsuid(old.wrapping_sub(root), n.fs.wrapping_sub(root), &mut caps);
    }
    Ok(u64::from(crate::userns::from_kuid_munged(&ns, old)))
}

fn setfsgid(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let p = &c.task.process;
    let ns = crate::userns::of(p);
    let id = crate::userns::make_kgid(&ns, arg(a[0])).unwrap_or(UNCHANGED);
    let mut cr = lock(&p.creds);
    let cap = lock(&p.caps).has(CAP_SETGID);
    let (n, old) = set_fs_id(gids(&cr), id, cap);
    put_gids(&mut cr, n);
    Ok(u64::from(crate::userns::from_kgid_munged(&ns, old)))
}

/// `_LINUX_CAPABILITY_VERSION_1` (one 32-bit word per set), `_2` and `_3` (two words).
const CAP_V1: u32 = 0x1998_0330;
const CAP_V2: u32 = 0x2007_1026;
const CAP_V3: u32 = 0x2008_0522;

/// kernel/capability.c `cap_validate_magic`: the number of 32-bit words per set, or EINVAL
/// after writing the preferred version back to the header.
fn cap_words(c: &SyscallCtx<'_>, hdr: u64) -> SysResult<usize> {
    let b = c.read_bytes(hdr, 8)?;
    match u32::from_le_bytes([b[0], b[1], b[2], b[3]]) {
        CAP_V1 => Ok(1),
        CAP_V2 | CAP_V3 => Ok(2),
        _ => {
            c.write_u32(hdr, CAP_V3)?;
            Err(Errno::EINVAL)
        }
    }
}

fn cap_pid(c: &SyscallCtx<'_>, hdr: u64) -> SysResult<i32> {
    let b = c.read_bytes(hdr + 4, 4)?;
    Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// capget(2) (kernel/capability.c): an unknown version is EINVAL, or success when there is
/// no data pointer (the probe libcap makes); pid 0 is the caller.
fn capget(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let words = match cap_words(c, a[0]) {
        Err(Errno::EINVAL) if a[1] == 0 => return Ok(0),
        r => r?,
    };
    if a[1] == 0 {
        return Ok(0);
    }
    let pid = cap_pid(c, a[0])?;
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    // A pid of the caller's pid namespace (find_task_by_vpid).
    let caps = if pid == 0 || pid as u32 == c.task.process.pids.own() {
        *lock(&c.task.process.caps)
    } else {
        let t = c
            .kernel
            .tasks
            .find_task_vpid(c.task, pid as u32)
            .ok_or(Errno::ESRCH)?;
        *lock(&t.process.caps)
    };
    let mut b = Vec::new();
    for w in 0..words {
        for set in [caps.effective, caps.permitted, caps.inheritable] {
            b.extend_from_slice(&((set >> (32 * w)) as u32).to_le_bytes());
        }
    }
    c.write_bytes(a[1], &b)?;
    Ok(0)
}

/// The checks of security/commoncap.c `cap_capset` for new sets (e, p, i): the inheritable
/// set may only gain what is inheritable or bounded (and, without CAP_SETPCAP, permitted);
/// the permitted set may only shrink; the effective set must be permitted.
pub fn capset_check(old: &Caps, e: u64, p: u64, i: u64) -> Result<(), Errno> {
    use um_uapi::abi::capability::CAP_SETPCAP;
    let subset = |a: u64, b: u64| a & !b == 0;
    if !old.has(CAP_SETPCAP) && !subset(i, old.inheritable | old.permitted) {
        return Err(Errno::EPERM);
    }
    if !subset(i, old.inheritable | old.bset) || !subset(p, old.permitted) || !subset(e, p) {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// capset(2) (kernel/capability.c): only the caller's own sets (another pid is EPERM).
fn capset(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let words = cap_words(c, a[0])?;
    let pid = cap_pid(c, a[0])?;
    if pid != 0 && pid as u32 != c.task.process.pids.own() {
        return Err(Errno::EPERM);
    }
    let b = c.read_bytes(a[1], 12 * words)?;
    let word = |i: usize| u64::from(u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]));
    let (mut e, mut p, mut i) = (0u64, 0u64, 0u64);
    for w in 0..words {
        e |= word(12 * w) << (32 * w);
        p |= word(12 * w + 4) << (32 * w);
        i |= word(12 * w + 8) << (32 * w);
    }
    let (e, p, i) = (e & CAP_FULL, p & CAP_FULL, i & CAP_FULL);
    let mut caps = lock(&c.task.process.caps);
    capset_check(&caps, e, p, i)?;
    caps.effective = e;
    caps.permitted = p;
    caps.inheritable = i;
    // The ambient set stays within permitted and inheritable (cap_capset).
    caps.ambient &= p & i;
    Ok(0)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("setuid", setuid);
    t.register("setgid", setgid);
    t.register("setreuid", setreuid);
    t.register("setregid", setregid);
    t.register("setresuid", setresuid);
    t.register("setresgid", setresgid);
    t.register("setfsuid", setfsuid);
    t.register("setfsgid", setfsgid);
    t.register("capget", capget);
    t.register("capset", capset);
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: u32 = UNCHANGED;

    fn ids(r: u32, e: u32, s: u32) -> IdSet {
        IdSet { r, e, s, fs: e }
    }

    #[test]
    fn setreuid_follows_setreuid05() {
        // The sequence of LTP setreuid05 (root 0, nobody 65534, main 1, other 2).
        let (root, nobody, main, other) = (0, 65534, 1, 2);
        let cap = |s: IdSet| s.e == 0;
        let mut s = ids(root, root, root);
        let mut step = |r: u32, e: u32, want: Option<(u32, u32, u32)>| {
            let got = set_re_id(s, r, e, cap(s));
            match want {
                Some((wr, we, ws)) => {
                    s = got.expect("allowed");
                    assert_eq!((s.r, s.e, s.s, s.fs), (wr, we, ws, we));
                }
                None => assert_eq!(got, Err(Errno::EPERM)),
            }
        };
        step(nobody, root, Some((nobody, root, root)));
        step(N, nobody, Some((nobody, nobody, root)));
        step(N, root, Some((nobody, root, root)));
        step(main, N, Some((main, root, root)));
        step(N, other, Some((main, other, other)));
        step(N, root, None);
        step(N, nobody, None);
        step(N, main, Some((main, main, other)));
        step(N, other, Some((main, other, other)));
        step(other, main, Some((other, main, main)));
        step(N, other, Some((other, other, main)));
        step(N, main, Some((other, main, main)));
        step(main, N, Some((main, main, main)));
        step(N, other, None);
    }

    #[test]
    fn setregid_unprivileged_may_use_saved() {
        // LTP setregid03: root sets (primary, secondary), which saves secondary.
        let s = set_re_id(ids(0, 0, 0), 10, 20, true).unwrap();
        assert_eq!((s.r, s.e, s.s), (10, 20, 20));
        let s = set_re_id(s, N, 10, false).unwrap();
        assert_eq!((s.r, s.e, s.s), (10, 10, 20));
        let s = set_re_id(s, N, 20, false).unwrap();
        assert_eq!((s.r, s.e, s.s), (10, 20, 20));
        // The real id may not become the saved id.
        let s2 = set_re_id(ids(10, 10, 20), 20, N, false);
        assert_eq!(s2, Err(Errno::EPERM));
    }

    #[test]
    fn setuid_rules() {
        let s = set_id(ids(0, 0, 0), 5, true).unwrap();
        assert_eq!((s.r, s.e, s.s, s.fs), (5, 5, 5, 5));
        let s = set_id(ids(1, 2, 3), 3, false).unwrap();
        assert_eq!((s.r, s.e, s.s, s.fs), (1, 3, 3, 3));
        assert_eq!(set_id(ids(1, 2, 3), 2, false), Err(Errno::EPERM));
        assert_eq!(set_id(ids(0, 0, 0), N, true), Err(Errno::EINVAL));
    }

    #[test]
    fn setresuid_rules() {
        let s = set_res_id(ids(1, 2, 3), 3, 1, N, false).unwrap();
        assert_eq!((s.r, s.e, s.s, s.fs), (3, 1, 3, 1));
        assert_eq!(set_res_id(ids(1, 2, 3), 4, N, N, false), Err(Errno::EPERM));
        let s = set_res_id(ids(0, 0, 0), 4, 5, 6, true).unwrap();
        assert_eq!((s.r, s.e, s.s, s.fs), (4, 5, 6, 5));
    }

    #[test]
    fn setfsuid_rules() {
        let (s, old) = set_fs_id(ids(1, 2, 3), 3, false);
        assert_eq!((s.fs, old), (3, 2));
        let (s, old) = set_fs_id(s, 9, false);
        assert_eq!((s.fs, old), (3, 3));
        let (s, _) = set_fs_id(s, 9, true);
        assert_eq!(s.fs, 9);
        let (s, old) = set_fs_id(s, N, true);
        assert_eq!((s.fs, old), (9, 9));
    }

    #[test]
    fn caps_follow_uid_changes() {
        let mut caps = Caps::init();
        // Effective uid leaves 0: effective cleared, permitted kept (saved uid still 0).
        fix_setuid(ids(0, 0, 0), ids(0, 5, 0), &mut caps);
        assert_eq!((caps.effective, caps.permitted), (0, CAP_FULL));
        // Back to 0: refilled from permitted.
        fix_setuid(ids(0, 5, 0), ids(0, 0, 0), &mut caps);
        assert_eq!(caps.effective, CAP_FULL);
        // All ids non-zero: everything goes, unless SECBIT_KEEP_CAPS keeps permitted.
        let mut kept = caps;
        kept.securebits = SECBIT_KEEP_CAPS;
        fix_setuid(ids(0, 0, 0), ids(5, 5, 5), &mut caps);
        assert_eq!((caps.effective, caps.permitted), (0, 0));
        fix_setuid(ids(0, 0, 0), ids(5, 5, 5), &mut kept);
        assert_eq!((kept.effective, kept.permitted), (0, CAP_FULL));
    }

    #[test]
    fn capset_rules() {
        let mut old = Caps::init();
        old.effective &= !(1 << 8); // no CAP_SETPCAP
        assert_eq!(capset_check(&old, 1, 3, 0), Ok(()));
        assert_eq!(capset_check(&old, 4, 3, 0), Err(Errno::EPERM), "e not in p");
        old.permitted = 3;
        assert_eq!(capset_check(&old, 0, 7, 0), Err(Errno::EPERM), "p grows");
        assert_eq!(
            capset_check(&old, 0, 3, 4),
            Err(Errno::EPERM),
            "i beyond i|p"
        );
        assert_eq!(capset_check(&old, 0, 3, 2), Ok(()));
    }

    #[test]
    fn exec_recomputes_caps() {
        let mut cr = Creds {
            uid: 0,
            euid: 0,
            ..Creds::default()
        };
        let mut caps = Caps::init();
        caps.effective = 0;
        caps.securebits = SECBIT_KEEP_CAPS;
        exec_creds(&mut cr, &mut caps, Some(0));
        assert_eq!(
            (caps.effective, caps.permitted, caps.securebits),
            (CAP_FULL, CAP_FULL, 0)
        );
        let mut cr = Creds {
            uid: 5,
            euid: 5,
            suid: 0,
            ..Creds::default()
        };
        exec_creds(&mut cr, &mut caps, Some(0));
        assert_eq!((cr.suid, caps.effective, caps.permitted), (5, 0, 0));
    }

    #[test]
    fn ambient_caps_survive_an_unprivileged_exec_only() {
        const NET_BIND: u64 = 1 << 10;
        let mut caps = Caps {
            inheritable: NET_BIND,
            permitted: NET_BIND | 1,
            effective: NET_BIND,
            ambient: NET_BIND,
            ..Caps::init()
        };
        let mut cr = Creds {
            uid: 1000,
            euid: 1000,
            ..Creds::default()
        };
        exec_creds(&mut cr, &mut caps, Some(0));
        assert_eq!(
            (caps.permitted, caps.effective, caps.ambient),
            (NET_BIND, NET_BIND, NET_BIND)
        );
        // Root is a privileged exec: the ambient set goes.
        let mut root = Creds::default();
        exec_creds(&mut root, &mut caps, Some(0));
        assert_eq!(caps.ambient, 0);
        // Leaving root drops it too (cap_emulate_setxuid).
        caps.ambient = NET_BIND;
        let ids = |u| IdSet {
            r: u,
            e: u,
            s: u,
            fs: u,
        };
        fix_setuid(ids(0), ids(1000), &mut caps);
        assert_eq!(caps.ambient, 0);
    }
}
