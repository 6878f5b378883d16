//! Changing the tree and file attributes (Linux fs/namei.c, fs/open.c, fs/attr.c, fs/utimes.c,
//! fs/sync.c, fs/statfs.c): mkdir, mknod, unlink, rmdir, rename, symlink, link, chmod, chown,
//! utimes, truncate, fallocate, fsync, sync, statfs. (The xattr calls are in `xattr.rs`.)
//!
//! Each call walks to the parent directory ([`namei::walk_parent_with`]) and checks as Linux
//! does, in Linux's order: `EEXIST` before permission (so `mkdir -p` works in read-only
//! places), `may_create` (write and search on the directory, `EROFS`), `may_delete` (plus the
//! sticky bit), `EBUSY` for mount points, `EXDEV` across mounts; then asks the directory's
//! inode.

use super::open::creds;
use super::{AT_EMPTY_PATH, AT_FDCWD, AT_SYMLINK_NOFOLLOW, Target, lookup, resolve_at, start_dir};
use crate::mount;
use crate::namei::{
    self, Last, MAY_EXEC, MAY_WRITE, check_attr_change, inode_permission, is_append, permission,
};
use std::sync::Arc;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::{Creds, lock};
use um_kernel::vfs::{self, Dentry, Inode, Kstat, OpenFile, Owner, SetAttr, Statfs, TimeSet, mode};
use um_uapi::abi::pod::Pod;
use um_uapi::{Errno, SysResult};

use um_uapi::abi::fcntl::AT_REMOVEDIR;
use um_uapi::abi::fcntl::AT_SYMLINK_FOLLOW;
use um_uapi::abi::fcntl::O_PATH;
const UTIME_NOW: i64 = (1 << 30) - 1;
const UTIME_OMIT: i64 = (1 << 30) - 2;

fn owner(cr: &Creds) -> Owner {
    Owner {
        uid: cr.fsuid,
        gid: cr.fsgid,
    }
}

fn is_dir(st: &Kstat) -> bool {
    st.mode & mode::S_IFMT == mode::S_IFDIR
}

/// The last component is `.` (Some(1)), `..` (Some(2)) or absent, i.e. `/` (Some(0)).
fn special_last(path: &[u8]) -> Option<u8> {
    match path.split(|&b| b == b'/').rfind(|c| !c.is_empty()) {
        None => Some(0),
        Some(b".") => Some(1),
        Some(b"..") => Some(2),
        Some(_) => None,
    }
}

/// Walks to the parent of `path`'s last component, relative to `dirfd`.
fn parent_at(c: &SyscallCtx<'_>, dirfd: u64, path: &[u8]) -> SysResult<(Arc<Dentry>, Vec<u8>)> {
    let fs = lock(&c.task.process.fs).clone();
    let start = if path.first() == Some(&b'/') {
        fs.root.clone()
    } else {
        start_dir(c, dirfd)?
    };
    namei::walk_parent_with(&fs, &creds(c), &start, path)
}

/// Linux `may_create`: write and search permission on the directory, not read-only.
fn may_create(cr: &Creds, dir: &Dentry) -> SysResult<()> {
    mount::check_writable(dir)?;
    inode_permission(&*dir.inode, &dir.inode.stat()?, cr, MAY_WRITE | MAY_EXEC)
}

/// Linux `may_delete`: as `may_create`, plus the sticky bit (`check_sticky`); nothing goes
/// from an append-only directory, and an append-only or immutable inode keeps its names.
fn may_delete(cr: &Creds, dir: &Dentry, victim: &dyn Inode, vst: &Kstat) -> SysResult<()> {
    mount::check_writable(dir)?;
    let dst = dir.inode.stat()?;
    inode_permission(&*dir.inode, &dst, cr, MAY_WRITE | MAY_EXEC)?;
    if dst.mode & 0o1000 != 0 && cr.fsuid != 0 && cr.fsuid != vst.uid && cr.fsuid != dst.uid {
        return Err(Errno::EPERM);
    }
    if is_append(&*dir.inode) {
        return Err(Errno::EPERM);
    }
    check_attr_change(victim)
}

/// A new name `name` in `dir`: `EEXIST` if taken, then `may_create`.
fn new_name(cr: &Creds, dir: &Dentry, name: &[u8]) -> SysResult<()> {
    match dir.inode.lookup(name) {
        Ok(_) => Err(Errno::EEXIST),
        Err(Errno::ENOENT) => may_create(cr, dir),
        Err(e) => Err(e),
    }
}

fn umask(c: &SyscallCtx<'_>) -> u32 {
    lock(&c.task.process.fs).umask
}

fn do_mkdirat(c: &mut SyscallCtx<'_>, dirfd: u64, addr: u64, m: u64) -> SysResult {
    let path = c.read_path(addr)?;
    let cr = creds(c);
    let (dir, name) = parent_at(c, dirfd, &path)?;
    new_name(&cr, &dir, &name)?;
    let perm = m as u32 & 0o1777 & !umask(c);
    dir.inode.mkdir(&name, perm, owner(&cr))?;
    crate::inotify::create(&*dir.inode, &name, true);
    Ok(0)
}

fn mkdirat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_mkdirat(c, a[0], a[1], a[2])
}

fn mkdir(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_mkdirat(c, AT_FDCWD as u64, a[0], a[1])
}

fn do_mknodat(c: &mut SyscallCtx<'_>, dirfd: u64, addr: u64, m: u64, dev: u64) -> SysResult {
    let m = m as u32;
    // may_mknod.
    let fmt = match m & mode::S_IFMT {
        0 => mode::S_IFREG,
        f @ (mode::S_IFREG | mode::S_IFCHR | mode::S_IFBLK | mode::S_IFIFO | mode::S_IFSOCK) => f,
        mode::S_IFDIR => return Err(Errno::EPERM),
        _ => return Err(Errno::EINVAL),
    };
    let path = c.read_path(addr)?;
    let cr = creds(c);
    let (dir, name) = parent_at(c, dirfd, &path)?;
    new_name(&cr, &dir, &name)?;
    if matches!(fmt, mode::S_IFCHR | mode::S_IFBLK) && cr.euid != 0 {
        // CAP_MKNOD.
        return Err(Errno::EPERM);
    }
    let (major, minor) = vfs::decode_dev(dev & 0xffff_ffff);
    // vfs_mknod's devcgroup_inode_mknod: the cgroup's device programs.
    if matches!(fmt, mode::S_IFCHR | mode::S_IFBLK) {
        um_kernel::devcgroup::check_mknod(c.task.process.pid, fmt == mode::S_IFBLK, major, minor)?;
    }
    let rdev = vfs::encode_dev(major, minor);
    let perm = crate::namei::mode_strip_sgid(&dir.inode.stat()?, owner(&cr), fmt | (m & 0o7777));
    let perm = perm & 0o7777 & !umask(c);
    dir.inode.mknod(&name, fmt | perm, rdev, owner(&cr))?;
    crate::inotify::create(&*dir.inode, &name, false);
    Ok(0)
}

fn mknodat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_mknodat(c, a[0], a[1], a[2], a[3])
}

fn mknod(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_mknodat(c, AT_FDCWD as u64, a[0], a[1], a[2])
}

fn do_rmdir(c: &mut SyscallCtx<'_>, dirfd: u64, addr: u64) -> SysResult {
    let path = c.read_path(addr)?;
    match special_last(&path) {
        Some(0) => return Err(Errno::EBUSY),
        Some(1) => return Err(Errno::EINVAL),
        Some(_) => return Err(Errno::ENOTEMPTY),
        None => {}
    }
    let cr = creds(c);
    let (dir, name) = parent_at(c, dirfd, &path)?;
    let victim = dir.inode.lookup(&name)?;
    let vst = victim.stat()?;
    if !is_dir(&vst) {
        return Err(Errno::ENOTDIR);
    }
    may_delete(&cr, &dir, &*victim, &vst)?;
    if mount::is_mountpoint(&*victim) {
        return Err(Errno::EBUSY);
    }
    dir.inode.rmdir(&name)?;
    crate::inotify::delete(&*dir.inode, &name, &*victim, &vst);
    Ok(0)
}

fn do_unlink(c: &mut SyscallCtx<'_>, dirfd: u64, addr: u64) -> SysResult {
    let path = c.read_path(addr)?;
    if special_last(&path).is_some() {
        return Err(Errno::EISDIR);
    }
    let cr = creds(c);
    let (dir, name) = parent_at(c, dirfd, &path)?;
    let victim = dir.inode.lookup(&name)?;
    let vst = victim.stat()?;
    if is_dir(&vst) {
        return Err(Errno::EISDIR);
    }
    if path.ends_with(b"/") {
        return Err(Errno::ENOTDIR);
    }
    may_delete(&cr, &dir, &*victim, &vst)?;
    if mount::is_mountpoint(&*victim) {
        return Err(Errno::EBUSY);
    }
    dir.inode.unlink(&name)?;
    crate::inotify::delete(&*dir.inode, &name, &*victim, &vst);
    Ok(0)
}

fn unlinkat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[2] & !AT_REMOVEDIR != 0 {
        return Err(Errno::EINVAL);
    }
    if a[2] & AT_REMOVEDIR != 0 {
        do_rmdir(c, a[0], a[1])
    } else {
        do_unlink(c, a[0], a[1])
    }
}

fn unlink(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_unlink(c, AT_FDCWD as u64, a[0])
}

fn rmdir(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_rmdir(c, AT_FDCWD as u64, a[0])
}

/// Whether two dentries are on the same mount (else rename and link are `EXDEV`).
fn same_mount(a: &Dentry, b: &Dentry) -> bool {
    match (mount::mount_of(a), mount::mount_of(b)) {
        (Some(x), Some(y)) => x.id == y.id,
        (None, None) => true,
        _ => false,
    }
}

fn do_renameat2(
    c: &mut SyscallCtx<'_>,
    olddirfd: u64,
    oldaddr: u64,
    newdirfd: u64,
    newaddr: u64,
    flags: u64,
) -> SysResult {
    const NOREPLACE: u64 = 1;
    const EXCHANGE: u64 = 2;
    const WHITEOUT: u64 = 4;
    if flags & !(NOREPLACE | EXCHANGE | WHITEOUT) != 0
        || flags & (NOREPLACE | WHITEOUT) != 0 && flags & EXCHANGE != 0
        // Whiteouts are for overlay file systems, which do not exist here.
        || flags & WHITEOUT != 0
    {
        return Err(Errno::EINVAL);
    }
    let oldp = c.read_path(oldaddr)?;
    let newp = c.read_path(newaddr)?;
    let cr = creds(c);
    let (od, on) = parent_at(c, olddirfd, &oldp).map_err(|e| match e {
        Errno::EEXIST => Errno::EBUSY,
        e => e,
    })?;
    if special_last(&oldp).is_some() {
        return Err(Errno::EBUSY);
    }
    let (nd, nn) = parent_at(c, newdirfd, &newp).map_err(|e| match e {
        Errno::EEXIST => Errno::EBUSY,
        e => e,
    })?;
    if special_last(&newp).is_some() {
        return Err(Errno::EBUSY);
    }
    if !same_mount(&od, &nd) {
        return Err(Errno::EXDEV);
    }
    let src = od.inode.lookup(&on)?;
    let sst = src.stat()?;
    let dst = match nd.inode.lookup(&nn) {
        Ok(d) => Some(d),
        Err(Errno::ENOENT) => None,
        Err(e) => return Err(e),
    };
    if flags & EXCHANGE != 0 && dst.is_none() {
        return Err(Errno::ENOENT);
    }
    if !is_dir(&sst) && (oldp.ends_with(b"/") || newp.ends_with(b"/") && flags & EXCHANGE == 0) {
        return Err(Errno::ENOTDIR);
    }
    may_delete(&cr, &od, &*src, &sst)?;
    match &dst {
        Some(d) => {
            if flags & NOREPLACE != 0 {
                return Err(Errno::EEXIST);
            }
            may_delete(&cr, &nd, &**d, &d.stat()?)?;
            if mount::is_mountpoint(&**d) {
                return Err(Errno::EBUSY);
            }
        }
        None => may_create(&cr, &nd)?,
    }
    if mount::is_mountpoint(&*src) {
        return Err(Errno::EBUSY);
    }
    // The replaced target's metadata before it goes, for its inotify events.
    let target_st = match &dst {
        Some(d) if flags & EXCHANGE == 0 && crate::inotify::active() => Some(d.stat()?),
        _ => None,
    };
    od.inode.rename(&on, &nd.inode, &nn, flags as u32)?;
    let target = dst.as_deref().zip(target_st.as_ref());
    crate::inotify::rename(&*od.inode, &on, &*nd.inode, &nn, (&*src, &sst), target);
    if flags & EXCHANGE != 0
        && crate::inotify::active()
        && let Some(d) = &dst
        && let Ok(st) = d.stat()
    {
        crate::inotify::rename(&*nd.inode, &nn, &*od.inode, &on, (&**d, &st), None);
    }
    Ok(0)
}

fn renameat2(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_renameat2(c, a[0], a[1], a[2], a[3], a[4])
}

fn renameat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_renameat2(c, a[0], a[1], a[2], a[3], 0)
}

fn rename(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let cwd = AT_FDCWD as u64;
    do_renameat2(c, cwd, a[0], cwd, a[1], 0)
}

fn do_symlinkat(c: &mut SyscallCtx<'_>, target: u64, dirfd: u64, addr: u64) -> SysResult {
    let target = c.read_cstr(target, 4096)?;
    if target.is_empty() {
        return Err(Errno::ENOENT);
    }
    let path = c.read_path(addr)?;
    let cr = creds(c);
    let (dir, name) = parent_at(c, dirfd, &path)?;
    new_name(&cr, &dir, &name)?;
    dir.inode.symlink(&name, &target, owner(&cr))?;
    crate::inotify::create(&*dir.inode, &name, false);
    Ok(0)
}

fn symlinkat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_symlinkat(c, a[0], a[1], a[2])
}

fn symlink(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_symlinkat(c, a[0], AT_FDCWD as u64, a[1])
}

fn do_linkat(
    c: &mut SyscallCtx<'_>,
    olddirfd: u64,
    oldaddr: u64,
    newdirfd: u64,
    newaddr: u64,
    flags: u64,
) -> SysResult {
    if flags & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let cr = creds(c);
    let mut how = flags & AT_EMPTY_PATH;
    if how != 0 && cr.euid != 0 {
        // AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; without it the empty path is ENOENT.
        how = 0;
    }
    if flags & AT_SYMLINK_FOLLOW == 0 {
        how |= AT_SYMLINK_NOFOLLOW;
    }
    let old = match resolve_at(c, olddirfd, oldaddr, how)? {
        Target::Dentry(d) => d,
        Target::File(_) => return Err(Errno::ENOENT),
    };
    let newp = c.read_path(newaddr)?;
    let (nd, nn) = parent_at(c, newdirfd, &newp)?;
    new_name(&cr, &nd, &nn)?;
    if !same_mount(&old, &nd) {
        return Err(Errno::EXDEV);
    }
    if is_dir(&old.inode.stat()?) {
        return Err(Errno::EPERM);
    }
    // may_linkat: an append-only or immutable file gets no new names.
    check_attr_change(&*old.inode)?;
    nd.inode.link(&nn, &old.inode)?;
    crate::inotify::link(&*nd.inode, &nn, &*old.inode);
    Ok(0)
}

fn linkat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_linkat(c, a[0], a[1], a[2], a[3], a[4])
}

fn link(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let cwd = AT_FDCWD as u64;
    do_linkat(c, cwd, a[0], cwd, a[1], 0)
}

/// The dentry behind a descriptor for the f*() calls; `O_PATH` descriptors are `EBADF`.
fn fd_dentry(c: &SyscallCtx<'_>, fd: u64) -> SysResult<(Arc<OpenFile>, Option<Arc<Dentry>>)> {
    let f = lock(&c.task.process.files()).get(fd)?;
    if f.flags() & O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    let d = f.dentry.clone();
    Ok((f, d))
}

/// Resolves a `*at()` target that must have a name.
fn target_dentry(c: &SyscallCtx<'_>, dirfd: u64, addr: u64, flags: u64) -> SysResult<Arc<Dentry>> {
    match resolve_at(c, dirfd, addr, flags)? {
        Target::Dentry(d) => Ok(d),
        // An anonymous file (pipe, socket): its attributes are not kept.
        Target::File(_) => Err(Errno::EOPNOTSUPP),
    }
}

/// What a chmod to `m` of a file with metadata `st` changes, if the caller may (fs/attr.c
/// `setattr_prepare`).
fn chmod_attr(c: &SyscallCtx<'_>, st: &Kstat, m: u64) -> SysResult<SetAttr> {
    let cr = creds(c);
    if cr.fsuid != 0 && cr.fsuid != st.uid {
        return Err(Errno::EPERM);
    }
    let mut m = m as u32 & 0o7777;
    if cr.fsuid != 0 && cr.fsgid != st.gid {
        // inode_change_ok: only group members may set S_ISGID.
        m &= !0o2000;
    }
    Ok(SetAttr {
        mode: Some(m),
        ..Default::default()
    })
}

fn chmod_dentry(c: &SyscallCtx<'_>, d: &Dentry, m: u64) -> SysResult {
    mount::check_writable(d)?;
    check_attr_change(&*d.inode)?;
    let attr = chmod_attr(c, &d.inode.stat()?, m)?;
    crate::inotify::notify_change(d, &attr)?;
    Ok(0)
}

fn do_fchmodat(c: &mut SyscallCtx<'_>, dirfd: u64, addr: u64, m: u64, flags: u64) -> SysResult {
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let d = target_dentry(c, dirfd, addr, flags)?;
    if d.inode.stat()?.mode & mode::S_IFMT == mode::S_IFLNK {
        // fchmodat2 with AT_SYMLINK_NOFOLLOW: symlink modes cannot be changed.
        return Err(Errno::EOPNOTSUPP);
    }
    chmod_dentry(c, &d, m)
}

fn fchmodat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_fchmodat(c, a[0], a[1], a[2], 0)
}

/// Not registered: fchmodat2 is Linux 6.6 (nr 452 on both arches), newer than the 6.1 headers
/// the number tables are generated from, so no table names it (`register` refuses such names).
#[expect(
    dead_code,
    reason = "registered once the number tables come from Linux >= 6.6 headers"
)]
fn fchmodat2(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_fchmodat(c, a[0], a[1], a[2], a[3])
}

fn chmod(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_fchmodat(c, AT_FDCWD as u64, a[0], a[1], 0)
}

fn fchmod(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    match fd_dentry(c, a[0])? {
        (_, Some(d)) => chmod_dentry(c, &d, a[1]),
        // A pipe or socket: its pipefs/sockfs inode (FileOps::setattr).
        (f, None) => {
            let attr = chmod_attr(c, &f.ops.stat()?, a[1])?;
            f.ops.setattr(&attr).map(|()| 0)
        }
    }
}

/// What a chown to `uid:gid` (-1: unchanged) of a file with metadata `st` changes, if the
/// caller may (fs/attr.c `chown_ok`/`chgrp_ok`, fs/open.c `chown_common`).
fn chown_attr(c: &SyscallCtx<'_>, st: &Kstat, uid: u64, gid: u64) -> SysResult<SetAttr> {
    // The ids are the caller's user namespace's (`make_kuid`); an unmapped one is EINVAL.
    let ns = um_kernel::userns::of(&c.task.process);
    let uid = match uid as u32 {
        u32::MAX => None,
        u => Some(um_kernel::userns::make_kuid(&ns, u).ok_or(Errno::EINVAL)?),
    };
    let gid = match gid as u32 {
        u32::MAX => None,
        g => Some(um_kernel::userns::make_kgid(&ns, g).ok_or(Errno::EINVAL)?),
    };
    let cr = creds(c);
    // capable_wrt_inode_uidgid(CAP_CHOWN): root, or CAP_CHOWN in a user namespace where the
    // file's owner and group are mapped.
    let in_ns_cap = !ns.is_root()
        && c.task
            .process
            .capable_own(um_uapi::abi::capability::CAP_CHOWN)
        && um_kernel::userns::from_kuid(&ns, st.uid).is_some()
        && um_kernel::userns::from_kgid(&ns, st.gid).is_some()
        && uid.is_none_or(|u| um_kernel::userns::from_kuid(&ns, u).is_some())
        && gid.is_none_or(|g| um_kernel::userns::from_kgid(&ns, g).is_some());
    if cr.fsuid != 0 && !in_ns_cap {
        // chown_ok / chgrp_ok (fs/attr.c): only the owner, and only to itself and its group.
        if uid.is_some_and(|u| u != st.uid)
            || (uid.is_some() || gid.is_some()) && cr.fsuid != st.uid
        {
            return Err(Errno::EPERM);
        }
        if gid.is_some_and(|g| g != st.gid && g != cr.fsgid) {
            return Err(Errno::EPERM);
        }
    }
    let mut attr = SetAttr {
        uid,
        gid,
        ..Default::default()
    };
    if (uid.is_some() || gid.is_some()) && !is_dir(st) {
        // chown_common sets ATTR_KILL_SUID | ATTR_KILL_SGID for non-directories: setuid goes,
        // setgid goes if group-executable.
        let old = st.mode & 0o7777;
        let mut m = old & !0o4000;
        if m & 0o2010 == 0o2010 {
            m &= !0o2000;
        }
        if m != old && st.mode & mode::S_IFMT != mode::S_IFLNK {
            attr.mode = Some(m);
        }
    }
    Ok(attr)
}

fn chown_dentry(c: &SyscallCtx<'_>, d: &Dentry, uid: u64, gid: u64) -> SysResult {
    mount::check_writable(d)?;
    check_attr_change(&*d.inode)?;
    let attr = chown_attr(c, &d.inode.stat()?, uid, gid)?;
    crate::inotify::notify_change(d, &attr)?;
    Ok(0)
}

fn fchownat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[4] & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let d = target_dentry(c, a[0], a[1], a[4])?;
    chown_dentry(c, &d, a[2], a[3])
}

fn chown(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let d = target_dentry(c, AT_FDCWD as u64, a[0], 0)?;
    chown_dentry(c, &d, a[1], a[2])
}

fn lchown(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let d = target_dentry(c, AT_FDCWD as u64, a[0], AT_SYMLINK_NOFOLLOW)?;
    chown_dentry(c, &d, a[1], a[2])
}

fn fchown(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    match fd_dentry(c, a[0])? {
        (_, Some(d)) => chown_dentry(c, &d, a[1], a[2]),
        // A pipe or socket: its pipefs/sockfs inode (runc chowns its stdio pipes to the
        // container's root).
        (f, None) => {
            let attr = chown_attr(c, &f.ops.stat()?, a[1], a[2])?;
            f.ops.setattr(&attr).map(|()| 0)
        }
    }
}

/// Sets times as `utimes_common` does: explicit times need ownership (or root); setting both
/// to now needs ownership or write permission.
fn set_times(
    c: &SyscallCtx<'_>,
    d: &Dentry,
    at: Option<TimeSet>,
    mt: Option<TimeSet>,
) -> SysResult {
    if at.is_none() && mt.is_none() {
        return Ok(0);
    }
    mount::check_writable(d)?;
    let st = d.inode.stat()?;
    let cr = creds(c);
    let explicit = matches!(at, Some(TimeSet::At(..))) || matches!(mt, Some(TimeSet::At(..)));
    // may_setattr (fs/attr.c): explicit times are refused on append-only and immutable
    // inodes, "now" on immutable ones.
    if explicit {
        check_attr_change(&*d.inode)?;
    } else if namei::is_immutable(&*d.inode) {
        return Err(Errno::EPERM);
    }
    if cr.fsuid != 0 && cr.fsuid != st.uid {
        if explicit {
            return Err(Errno::EPERM);
        }
        permission(&st, &cr, MAY_WRITE)?;
    }
    crate::inotify::notify_change(
        d,
        &SetAttr {
            atime: at,
            mtime: mt,
            ..Default::default()
        },
    )?;
    Ok(0)
}

/// One `struct timespec` of utimensat.
fn timespec(sec: i64, nsec: i64) -> SysResult<Option<TimeSet>> {
    match nsec {
        UTIME_NOW => Ok(Some(TimeSet::Now)),
        UTIME_OMIT => Ok(None),
        0..=999_999_999 => Ok(Some(TimeSet::At(sec, nsec))),
        _ => Err(Errno::EINVAL),
    }
}

fn read_i64s(c: &SyscallCtx<'_>, addr: u64, n: usize) -> SysResult<Vec<i64>> {
    let b = c.read_bytes(addr, n * 8)?;
    Ok(b.chunks_exact(8)
        .map(|w| i64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]))
        .collect())
}

fn utimensat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (dirfd, path, times, flags) = (a[0], a[1], a[2], a[3]);
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let (at, mt) = if times == 0 {
        (Some(TimeSet::Now), Some(TimeSet::Now))
    } else {
        let t = read_i64s(c, times, 4)?;
        (timespec(t[0], t[1])?, timespec(t[2], t[3])?)
    };
    if at.is_none() && mt.is_none() {
        return Ok(0);
    }
    let d = if path == 0 {
        // futimens: the descriptor itself (fs/utimes.c do_utimes_fd).
        if dirfd as i32 == AT_FDCWD {
            return Err(Errno::EFAULT);
        }
        if flags & AT_SYMLINK_NOFOLLOW != 0 {
            return Err(Errno::EINVAL);
        }
        let (_, d) = fd_dentry(c, dirfd)?;
        d.ok_or(Errno::EOPNOTSUPP)?
    } else {
        target_dentry(c, dirfd, path, flags)?
    };
    set_times(c, &d, at, mt)
}

/// `struct timeval[2]` (utimes, futimesat); NULL is now.
fn timevals(c: &SyscallCtx<'_>, addr: u64) -> SysResult<(Option<TimeSet>, Option<TimeSet>)> {
    if addr == 0 {
        return Ok((Some(TimeSet::Now), Some(TimeSet::Now)));
    }
    let t = read_i64s(c, addr, 4)?;
    let tv = |s: i64, us: i64| {
        if !(0..1_000_000).contains(&us) {
            return Err(Errno::EINVAL);
        }
        Ok(Some(TimeSet::At(s, us * 1000)))
    };
    Ok((tv(t[0], t[1])?, tv(t[2], t[3])?))
}

fn futimesat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (at, mt) = timevals(c, a[2])?;
    let d = target_dentry(c, a[0], a[1], 0)?;
    set_times(c, &d, at, mt)
}

fn utimes(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    futimesat(c, [AT_FDCWD as u64, a[0], a[1], 0, 0, 0])
}

fn utime(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (at, mt) = if a[1] == 0 {
        (Some(TimeSet::Now), Some(TimeSet::Now))
    } else {
        let t = read_i64s(c, a[1], 2)?;
        (Some(TimeSet::At(t[0], 0)), Some(TimeSet::At(t[1], 0)))
    };
    let d = target_dentry(c, AT_FDCWD as u64, a[0], 0)?;
    set_times(c, &d, at, mt)
}

fn truncate(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if (a[1] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    let path = c.read_path(a[0])?;
    let d = lookup(c, AT_FDCWD as u64, &path, Last::Follow)?;
    let st = d.inode.stat()?;
    if is_dir(&st) {
        return Err(Errno::EISDIR);
    }
    if st.mode & mode::S_IFMT != mode::S_IFREG {
        return Err(Errno::EINVAL);
    }
    mount::check_writable(&d)?;
    inode_permission(&*d.inode, &st, &creds(c), MAY_WRITE)?;
    // vfs_truncate: an append-only file cannot be cut.
    if is_append(&*d.inode) {
        return Err(Errno::EPERM);
    }
    check_fsize(c, a[1], st.size)?;
    // do_sys_truncate: get_write_access (ETXTBSY while the file is being executed).
    let _write = um_kernel::vfs::WriteAccess::get(mount::inode_key(&*d.inode))?;
    crate::locks::break_lease(c.task, &d, 1 /* O_WRONLY */)?; // vfs_truncate: break_lease
    crate::inotify::notify_change(
        &d,
        &SetAttr {
            size: Some(a[1]),
            ..Default::default()
        },
    )?;
    Ok(0)
}

/// `inode_newsize_ok`: growing a file beyond the soft `RLIMIT_FSIZE` sends SIGXFSZ and fails
/// with EFBIG.
fn check_fsize(c: &SyscallCtx<'_>, new: u64, old: i64) -> SysResult<()> {
    const RLIMIT_FSIZE: usize = 1;
    use um_uapi::abi::signal::SIGXFSZ;
    let limit = lock(&c.task.process.rlimits)[RLIMIT_FSIZE].0;
    if new > limit && new as i64 > old {
        um_kernel::signal::send_to_task(
            c.task,
            um_uapi::abi::signal::Siginfo::kill(SIGXFSZ, 0x80 /* SI_KERNEL */, 0, 0),
        );
        return Err(Errno::EFBIG);
    }
    Ok(())
}

fn ftruncate(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if (a[1] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    let (f, d) = fd_dentry(c, a[0])?;
    if f.flags() & 3 == 0 {
        return Err(Errno::EINVAL);
    }
    let d = d.ok_or(Errno::EINVAL)?;
    let st = d.inode.stat()?;
    if st.mode & mode::S_IFMT != mode::S_IFREG {
        return Err(Errno::EINVAL);
    }
    // do_sys_ftruncate: an append-only file cannot be cut.
    if is_append(&*d.inode) {
        return Err(Errno::EPERM);
    }
    check_fsize(c, a[1], st.size)?;
    crate::inotify::notify_change(
        &d,
        &SetAttr {
            size: Some(a[1]),
            ..Default::default()
        },
    )?;
    Ok(0)
}

pub(crate) fn do_fsync(c: &mut SyscallCtx<'_>, fd: u64, datasync: bool) -> SysResult {
    let (f, d) = fd_dentry(c, fd)?;
    // An open block device flushes its disk (`blkdev_fsync`).
    if let Some(r) = f.ops.fsync(datasync) {
        r?;
        return Ok(0);
    }
    let d = d.ok_or(Errno::EINVAL)?;
    // fs/sync.c vfs_fsync_range: EINVAL when the file's operations have no fsync, as for FIFOs
    // (pipefifo_fops), sockets and character devices.
    let kind = d.inode.stat()?.mode & mode::S_IFMT;
    if matches!(kind, mode::S_IFIFO | mode::S_IFSOCK | mode::S_IFCHR) {
        return Err(Errno::EINVAL);
    }
    d.inode.fsync(datasync)?;
    Ok(0)
}

fn fsync(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_fsync(c, a[0], false)
}

fn fdatasync(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_fsync(c, a[0], true)
}

fn sync(_c: &mut SyscallCtx<'_>, _a: [u64; 6]) -> SysResult {
    // hostfs writes through to the host at once; tmpfs has nothing to write; the disks flush
    // their host files (`sync_bdevs`).
    um_kernel::vfs::sync_all();
    Ok(0)
}

fn syncfs(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    lock(&c.task.process.files()).get(a[0])?;
    um_kernel::vfs::sync_all();
    Ok(0)
}

fn fallocate(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (fd, m, off, len) = (a[0], a[1] as u32, a[2] as i64, a[3] as i64);
    if off < 0 || len <= 0 {
        return Err(Errno::EINVAL);
    }
    let (f, d) = fd_dentry(c, fd)?;
    if f.flags() & 3 == 0 {
        return Err(Errno::EBADF);
    }
    let Some(d) = d else {
        return Err(Errno::ESPIPE);
    };
    let st = d.inode.stat()?;
    if is_dir(&st) {
        return Err(Errno::EISDIR);
    }
    if st.mode & mode::S_IFMT != mode::S_IFREG {
        return Err(Errno::ENODEV);
    }
    /// FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE.
    const KEEP_SIZE: u32 = 1;
    const PUNCH_HOLE: u32 = 2;
    // vfs_fallocate: nothing on an immutable file; an append-only one may only grow.
    if namei::is_immutable(&*d.inode) || m & !KEEP_SIZE != 0 && is_append(&*d.inode) {
        return Err(Errno::EPERM);
    }
    let end = off.checked_add(len).ok_or(Errno::EFBIG)?;
    if m & PUNCH_HOLE == 0 {
        // inode_newsize_ok, which shmem_fallocate and the block file systems call even with
        // KEEP_SIZE: past RLIMIT_FSIZE is SIGXFSZ and EFBIG.
        check_fsize(c, end as u64, st.size)?;
    }
    // The file system's own fallocate (tmpfs allocates and frees pages, and can reserve
    // with KEEP_SIZE); vfs_fallocate notifies a modification when it succeeds.
    if let Some(r) = d.inode.fallocate(m, off as u64, len as u64) {
        r?;
        crate::inotify::modified(&f);
        return Ok(0);
    }
    if m == PUNCH_HOLE | KEEP_SIZE {
        // Deallocate the range: what reads back is zeros, the size stays. The zeros go
        // through the file's own write path (so mappings and seals see it as a write: a
        // F_SEAL_WRITE memfd refuses it with EPERM, as shmem_fallocate does).
        let stop = end.min(st.size);
        let io = um_kernel::wait::IoCtx {
            task: c.task,
            nonblock: false,
            flags: f.flags(),
        };
        let zeros = vec![0u8; 64 * 1024];
        let mut at = off;
        while at < stop {
            let n = ((stop - at) as usize).min(zeros.len());
            let done = f.ops.write(&io, &zeros[..n], at as u64)?;
            if done == 0 {
                return Err(Errno::EIO);
            }
            at += done as i64;
        }
        return Ok(0);
    }
    if m != 0 {
        // Only plain allocation and hole punching: no KEEP_SIZE alone (a file system without
        // its own fallocate reserves nothing ahead of writes), ZERO_RANGE, COLLAPSE_RANGE, ...
        return Err(Errno::EOPNOTSUPP);
    }
    if end > st.size {
        crate::inotify::notify_change(
            &d,
            &SetAttr {
                size: Some(end as u64),
                ..Default::default()
            },
        )?;
    }
    Ok(0)
}

/// `struct statfs` for an inode on the mount of `d`.
fn statfs_bytes(inode: &dyn Inode, d: Option<&Dentry>, stream: bool) -> Vec<u8> {
    let s = inode.statfs().unwrap_or(Statfs {
        // PIPEFS_MAGIC for anonymous streams; others without statfs report a generic one.
        fs_type: if stream { 0x5049_5045 } else { 0 },
        bsize: um_mm::page_size() as i64,
        namelen: 255,
        frsize: um_mm::page_size() as i64,
        fsid: inode.fs_id(),
        ..Default::default()
    });
    // ST_VALID plus the mount's flags (MS_* and ST_* agree except RELATIME and NOSYMFOLLOW).
    let mf = d.and_then(mount::mount_of).map_or(0, |m| m.flags());
    // fs/statfs.c calculate_f_flags: the mount's flags, and ST_RDONLY of the superblock.
    let mut flags = 0x20 | (mf & 0xcdf) as i64 | (s.flags & um_uapi::abi::fcntl::ST_RDONLY);
    if mf & mount::MS_RELATIME != 0 {
        flags |= 0x1000;
    }
    if mf & mount::MS_NOSYMFOLLOW != 0 {
        flags |= 0x2000;
    }
    um_uapi::abi::fcntl::Statfs {
        f_type: s.fs_type,
        f_bsize: s.bsize,
        f_blocks: s.blocks,
        f_bfree: s.bfree,
        f_bavail: s.bavail,
        f_files: s.files,
        f_ffree: s.ffree,
        f_fsid: [s.fsid as i32, (s.fsid >> 32) as i32],
        f_namelen: s.namelen,
        f_frsize: s.frsize,
        f_flags: flags,
        f_spare: [0; 4],
    }
    .as_bytes()
    .to_vec()
}

fn statfs(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let path = c.read_path(a[0])?;
    let d = lookup(c, AT_FDCWD as u64, &path, Last::Follow)?;
    let b = statfs_bytes(&*d.inode, Some(&d), false);
    c.write_bytes(a[1], &b)?;
    Ok(0)
}

/// The inode-less statfs of an anonymous file.
struct Anon;

impl Inode for Anon {
    fn stat(&self) -> SysResult<Kstat> {
        Err(Errno::EBADF)
    }
    fn open(
        &self,
        _io: &um_kernel::wait::IoCtx<'_>,
        _flags: u32,
    ) -> SysResult<Box<dyn um_kernel::vfs::FileOps>> {
        Err(Errno::EBADF)
    }
    fn id(&self) -> u64 {
        0
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn fstatfs(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let f = lock(&c.task.process.files()).get(a[0])?;
    let b = match &f.dentry {
        Some(d) => statfs_bytes(&*d.inode, Some(d), false),
        None => statfs_bytes(&Anon, None, f.ops.is_stream()),
    };
    c.write_bytes(a[1], &b)?;
    Ok(0)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("mkdir", mkdir);
    t.register("mkdirat", mkdirat);
    t.register("mknod", mknod);
    t.register("mknodat", mknodat);
    t.register("unlink", unlink);
    t.register("unlinkat", unlinkat);
    t.register("rmdir", rmdir);
    t.register("rename", rename);
    t.register("renameat", renameat);
    t.register("renameat2", renameat2);
    t.register("symlink", symlink);
    t.register("symlinkat", symlinkat);
    t.register("link", link);
    t.register("linkat", linkat);
    t.register("chmod", chmod);
    t.register("fchmod", fchmod);
    t.register("fchmodat", fchmodat);
    t.register("chown", chown);
    t.register("fchown", fchown);
    t.register("lchown", lchown);
    t.register("fchownat", fchownat);
    t.register("utimensat", utimensat);
    t.register("futimesat", futimesat);
    t.register("utimes", utimes);
    t.register("utime", utime);
    t.register("truncate", truncate);
    t.register("ftruncate", ftruncate);
    t.register("fsync", fsync);
    t.register("fdatasync", fdatasync);
    t.register("sync", sync);
    t.register("syncfs", syncfs);
    t.register("fallocate", fallocate);
    t.register("statfs", statfs);
    t.register("fstatfs", fstatfs);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_last_components() {
        assert_eq!(special_last(b"/"), Some(0));
        assert_eq!(special_last(b"a/."), Some(1));
        assert_eq!(special_last(b"a/../"), Some(2));
        assert_eq!(special_last(b"a/b"), None);
    }

    #[test]
    fn utime_specials() {
        assert_eq!(timespec(5, UTIME_NOW).unwrap(), Some(TimeSet::Now));
        assert_eq!(timespec(5, UTIME_OMIT).unwrap(), None);
        assert_eq!(timespec(5, 7).unwrap(), Some(TimeSet::At(5, 7)));
        assert_eq!(timespec(5, 1_000_000_000).err(), Some(Errno::EINVAL));
    }
}
