//! open, openat, creat, close, getcwd, chdir, fchdir, chroot, readlink, access (Linux fs/open.c, fs/namei.c,
//! fs/d_path.c).
//!
//! `open` follows Linux `path_openat`/`do_open`: with `O_CREAT` the parent is walked and the
//! last component created through [`um_kernel::vfs::Inode::create`] (mode masked by the umask) unless it
//! exists (`EEXIST` with `O_EXCL`; a symlink in the last component is followed, and a dangling
//! one creates its target); then `may_open` (DAC permission, `EISDIR`, `ELOOP`, `EROFS`,
//! `nodev`, append-only and immutable inodes) and `O_TRUNC`. `O_PATH` opens only a name.
//! `O_TMPFILE` (`do_tmpfile`) asks the directory's file system for an unnamed file
//! ([`um_kernel::vfs::Inode::tmpfile`]; `EOPNOTSUPP` where it has none) whose dentry,
//! `#INO (deleted)` under the directory, is what `/proc/PID/fd` shows and `linkat` names.

use super::{AT_FDCWD, Target, lookup, resolve_at, start_dir};
use crate::mount;
use crate::namei::{
    self, Last, MAY_EXEC, MAY_READ, MAY_WRITE, Resolve, inode_permission, is_append, permission,
};
use std::sync::Arc;
use um_kernel::arch::native::abi::OPEN_FLAGS_ARCH as ARCH;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::{Creds, FsContext, lock};
use um_kernel::vfs::{Dentry, FileOps, Kstat, OpenFile, Owner, SetAttr, WriteAccess, mode};
use um_kernel::wait::IoCtx;
use um_uapi::abi::fcntl::OpenFlags;
use um_uapi::{Errno, SysResult};

/// An `O_PATH` descriptor: names a file, cannot read or write it.
struct PathOnly {
    dentry: Arc<Dentry>,
}

impl FileOps for PathOnly {
    fn read(&self, _: &IoCtx<'_>, _: &mut [u8], _: u64) -> SysResult<usize> {
        Err(Errno::EBADF)
    }
    fn write(&self, _: &IoCtx<'_>, _: &[u8], _: u64) -> SysResult<usize> {
        Err(Errno::EBADF)
    }
    fn stat(&self) -> SysResult<Kstat> {
        self.dentry.inode.stat()
    }
    fn readdir(&self) -> SysResult<Vec<um_kernel::vfs::DirEntry>> {
        Err(Errno::EBADF)
    }
}

use um_uapi::abi::fcntl::O_PATH;

/// The last component of `path` is `.`, `..` or absent (`/`): Linux's `LAST_DOT`,
/// `LAST_DOTDOT`, `LAST_ROOT`.
fn last_is_special(path: &[u8]) -> bool {
    let last = path.split(|&b| b == b'/').rfind(|c| !c.is_empty());
    matches!(last, None | Some(b".") | Some(b".."))
}

/// `MAY_*` bits an open with `flags` needs (`ACC_MODE` plus `MAY_WRITE` for `O_TRUNC`).
fn acc_mask(flags: u32) -> u32 {
    let mut m = match flags & 3 {
        0 => MAY_READ,
        1 => MAY_WRITE,
        _ => MAY_READ | MAY_WRITE,
    };
    if flags & OpenFlags::TRUNC.bits() != 0 {
        m |= MAY_WRITE;
    }
    m
}

/// `inode_owner_or_capable`: the caller's fsuid owns the inode, or it has CAP_FOWNER.
pub fn owner_or_capable(c: &SyscallCtx<'_>, st: &Kstat) -> bool {
    use um_uapi::abi::capability::CAP_FOWNER;
    lock(&c.task.process.creds).fsuid == st.uid || c.task.process.capable(CAP_FOWNER)
}

/// The caller's credentials.
pub fn creds(c: &SyscallCtx<'_>) -> Creds {
    *lock(&c.task.process.creds)
}

/// The context and starting directory of an open's walk: for openat2's scoped lookups
/// (`RESOLVE_BENEATH`, `RESOLVE_IN_ROOT`) the directory of `dirfd` is both, and an absolute
/// path beneath it is `EXDEV` (`path_init`/`nd_jump_root`).
fn walk_start(
    c: &SyscallCtx<'_>,
    dirfd: u64,
    path: &[u8],
    res: &Resolve,
) -> SysResult<(FsContext, Arc<Dentry>)> {
    let fs = lock(&c.task.process.fs).clone();
    let absolute = path.first() == Some(&b'/');
    if res.beneath && absolute {
        return Err(Errno::EXDEV);
    }
    let start = if absolute && !res.in_root {
        fs.root.clone()
    } else {
        start_dir(c, dirfd)?
    };
    Ok((res.scope(&fs, &start), start))
}

/// Finds or creates the last component for `O_CREAT`. Returns the dentry and whether it was
/// created.
fn open_create(
    c: &SyscallCtx<'_>,
    dirfd: u64,
    path: &[u8],
    flags: u32,
    perm: u32,
    res: &Resolve,
) -> SysResult<(Arc<Dentry>, bool)> {
    let cr = creds(c);
    let (fs, start) = walk_start(c, dirfd, path, res)?;
    let (mut parent, mut name) = namei::walk_parent_resolve(&fs, &cr, &start, path, res)?;
    let mut links = 0;
    loop {
        match parent.inode.lookup(&name) {
            Ok(inode) => {
                if flags & OpenFlags::EXCL.bits() != 0 {
                    return Err(Errno::EEXIST);
                }
                if res.no_xdev && mount::is_mountpoint(&*inode) {
                    return Err(Errno::EXDEV);
                }
                let inode = mount::cross(&parent, inode);
                if inode.stat()?.mode & mode::S_IFMT == mode::S_IFLNK {
                    if flags & ARCH.nofollow != 0 {
                        return Err(Errno::ELOOP);
                    }
                    links += 1;
                    if links > namei::MAXSYMLINKS {
                        return Err(Errno::ELOOP);
                    }
                    if let Some(target) = inode.magic_link() {
                        res.follow_link(Some((&parent, &target)))?;
                        return Ok((target, false));
                    }
                    res.follow_link(None)?;
                    let target = inode.readlink()?;
                    if last_is_special(&target) || target.ends_with(b"/") {
                        // A symlink to a directory: the walk finds it, creation is EISDIR.
                        let d = namei::walk_resolve(&fs, &cr, &parent, &target, Last::Follow, res)?;
                        return Ok((d, false));
                    }
                    (parent, name) = namei::walk_parent_resolve(&fs, &cr, &parent, &target, res)?;
                    continue;
                }
                return Ok((Dentry::child(&parent, &name, inode), false));
            }
            Err(Errno::ENOENT) => {
                let pst = parent.inode.stat()?;
                inode_permission(&*parent.inode, &pst, &cr, MAY_WRITE | MAY_EXEC)?;
                mount::check_writable(&parent)?;
                let umask = lock(&c.task.process.fs).umask;
                let owner = Owner {
                    uid: cr.fsuid,
                    gid: cr.fsgid,
                };
                let perm = namei::mode_strip_sgid(&pst, owner, mode::S_IFREG | (perm & 0o7777));
                let inode = parent.inode.create(&name, perm & 0o7777 & !umask, owner)?;
                crate::inotify::create(&*parent.inode, &name, false);
                return Ok((Dentry::child(&parent, &name, inode), true));
            }
            Err(e) => return Err(e),
        }
    }
}

fn do_openat(
    c: &mut SyscallCtx<'_>,
    dirfd: u64,
    path_addr: u64,
    flags: u64,
    perm: u64,
) -> SysResult {
    do_open(c, dirfd, path_addr, flags as u32, perm, &Resolve::NONE)
}

/// The open itself (`do_filp_open`), with the walk restricted by `res` (openat2; every other
/// open passes [`Resolve::NONE`]). Flags are taken as given: openat2 checked them first.
pub(crate) fn do_open(
    c: &mut SyscallCtx<'_>,
    dirfd: u64,
    path_addr: u64,
    flags: u32,
    perm: u64,
    res: &Resolve,
) -> SysResult {
    // Linux ignores unknown open flags (for compatibility), except through openat2.
    let mut flags = flags;
    let path = c.read_path(path_addr)?;
    let tmpfile = ARCH.tmpfile();
    if flags & tmpfile == OpenFlags::TMPFILE_BIT.bits() {
        // build_open_flags: __O_TMPFILE without O_DIRECTORY.
        return Err(Errno::EINVAL);
    }
    if flags & tmpfile == tmpfile {
        // build_open_flags: O_TMPFILE needs write access and no O_CREAT.
        if flags & 3 == 0 || flags & OpenFlags::CREAT.bits() != 0 {
            return Err(Errno::EINVAL);
        }
        return do_tmpfile(c, dirfd, &path, flags, perm as u32, res);
    }
    let is_path = flags & O_PATH != 0;
    if is_path {
        // build_open_flags: O_PATH keeps only these.
        flags &= O_PATH | ARCH.directory | ARCH.nofollow | OpenFlags::CLOEXEC.bits();
    }
    let cloexec = flags & OpenFlags::CLOEXEC.bits() != 0;
    let creat = flags & OpenFlags::CREAT.bits() != 0;
    let (d, created) = if creat {
        if last_is_special(&path) || path.ends_with(b"/") {
            return Err(Errno::EISDIR);
        }
        open_create(c, dirfd, &path, flags, perm as u32, res)?
    } else {
        let last = if flags & ARCH.nofollow != 0 {
            Last::NoFollow
        } else {
            Last::Follow
        };
        let (fs, start) = walk_start(c, dirfd, &path, res)?;
        let d = namei::walk_resolve(&fs, &creds(c), &start, &path, last, res)?;
        (d, false)
    };
    let st = d.inode.stat()?;
    let fmt = st.mode & mode::S_IFMT;
    if fmt == mode::S_IFLNK && !is_path {
        return Err(Errno::ELOOP);
    }
    if flags & ARCH.directory != 0 && fmt != mode::S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    let file = if is_path {
        OpenFile::new(Box::new(PathOnly { dentry: d.clone() }), flags, Some(d))
    } else {
        // may_open (fs/namei.c).
        let mask = acc_mask(flags);
        if fmt == mode::S_IFDIR && (creat || mask & MAY_WRITE != 0) {
            return Err(Errno::EISDIR);
        }
        if !created {
            inode_permission(&*d.inode, &st, &creds(c), mask)?;
        }
        // may_open: an append-only file opens for writing only to append, never to truncate.
        if is_append(&*d.inode)
            && (mask & MAY_WRITE != 0 && flags & OpenFlags::APPEND.bits() == 0
                || flags & OpenFlags::TRUNC.bits() != 0)
        {
            return Err(Errno::EPERM);
        }
        // may_open: O_NOATIME only for the file's owner or CAP_FOWNER (inode_owner_or_capable).
        if flags & OpenFlags::NOATIME.bits() != 0 && !owner_or_capable(c, &st) {
            return Err(Errno::EPERM);
        }
        if mask & MAY_WRITE != 0 && matches!(fmt, mode::S_IFREG | mode::S_IFDIR | mode::S_IFLNK) {
            mount::check_writable(&d)?;
        }
        if matches!(fmt, mode::S_IFCHR | mode::S_IFBLK) && mount::is_nodev(&d) {
            return Err(Errno::EACCES);
        }
        // inode_permission's devcgroup_inode_permission: the cgroup's device programs.
        if matches!(fmt, mode::S_IFCHR | mode::S_IFBLK) {
            let (major, minor) = um_kernel::vfs::decode_dev(st.rdev);
            um_kernel::devcgroup::check_open(
                c.task.process.pid,
                fmt == mode::S_IFBLK,
                major,
                minor,
                mask & MAY_READ != 0,
                mask & MAY_WRITE != 0,
            )?;
        }
        crate::locks::break_lease(c.task, &d, flags)?; // do_dentry_open: break_lease
        // do_dentry_open: a regular file opened for writing takes write access, refused
        // (ETXTBSY) while the file is being executed; before O_TRUNC may cut it.
        let write_access = if mask & MAY_WRITE != 0 && fmt == mode::S_IFREG {
            Some(WriteAccess::get(mount::inode_key(&*d.inode))?)
        } else {
            None
        };
        if flags & OpenFlags::TRUNC.bits() != 0 && fmt == mode::S_IFREG && !created {
            crate::inotify::notify_change(
                &d,
                &SetAttr {
                    size: Some(0),
                    ..Default::default()
                },
            )?;
        }
        let ops = d.inode.open(
            &IoCtx {
                task: c.task,
                nonblock: flags & OpenFlags::NONBLOCK.bits() != 0,
                flags,
            },
            flags,
        )?;
        let file = OpenFile::new(ops, flags, Some(d));
        if let Some(w) = write_access {
            let _ = file.write_access.set(w);
        }
        file
    };
    crate::inotify::opened(&file);
    let fd = lock(&c.task.process.files()).install(file, cloexec, 0)?;
    Ok(fd as u64)
}

/// `O_TMPFILE` (fs/namei.c `do_tmpfile`, `vfs_tmpfile`): `path` names a directory, in which
/// the caller needs write and search permission; the new file takes `perm` less the umask
/// and the directory's setgid rules, has no name, and can be linked in later unless `O_EXCL`.
fn do_tmpfile(
    c: &mut SyscallCtx<'_>,
    dirfd: u64,
    path: &[u8],
    flags: u32,
    perm: u32,
    res: &Resolve,
) -> SysResult {
    let cr = creds(c);
    let (fs, start) = walk_start(c, dirfd, path, res)?;
    let dir = namei::walk_resolve(&fs, &cr, &start, path, Last::Follow, res)?;
    let dst = dir.inode.stat()?;
    if dst.mode & mode::S_IFMT != mode::S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    inode_permission(&*dir.inode, &dst, &cr, MAY_WRITE | MAY_EXEC)?;
    mount::check_writable(&dir)?;
    let owner = Owner {
        uid: cr.fsuid,
        gid: cr.fsgid,
    };
    let umask = lock(&c.task.process.fs).umask;
    let perm = namei::mode_strip_sgid(&dst, owner, mode::S_IFREG | (perm & 0o7777));
    let linkable = flags & OpenFlags::EXCL.bits() == 0;
    let inode = dir.inode.tmpfile(perm & 0o7777 & !umask, owner, linkable)?;
    let mut name = format!("#{}", inode.stat()?.ino).into_bytes();
    name.extend_from_slice(b" (deleted)");
    let d = Dentry::child(&dir, &name, inode);
    let write_access = WriteAccess::get(mount::inode_key(&*d.inode))?;
    let ops = d.inode.open(
        &IoCtx {
            task: c.task,
            nonblock: flags & OpenFlags::NONBLOCK.bits() != 0,
            flags: flags & !ARCH.directory,
        },
        flags & !ARCH.directory,
    )?;
    let file = OpenFile::new(ops, flags & !ARCH.directory, Some(d));
    let _ = file.write_access.set(write_access);
    crate::inotify::opened(&file);
    let cloexec = flags & OpenFlags::CLOEXEC.bits() != 0;
    let fd = lock(&c.task.process.files()).install(file, cloexec, 0)?;
    Ok(fd as u64)
}

fn openat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_openat(c, a[0], a[1], a[2], a[3])
}

fn open(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_openat(c, AT_FDCWD as u64, a[0], a[1], a[2])
}

/// creat(2) (fs/open.c): `open(path, O_CREAT | O_WRONLY | O_TRUNC, mode)`; x86_64 only (the
/// asm-generic table has no `creat`, so it does not register on arm64).
fn creat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let flags = OpenFlags::CREAT.bits() | OpenFlags::TRUNC.bits() | 1;
    do_openat(c, AT_FDCWD as u64, a[0], u64::from(flags), a[1])
}

fn close(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let entry = lock(&c.task.process.files()).remove(a[0])?;
    // POSIX locks of this process on the file go with any close; the description's own
    // (OFD, flock) locks with its last descriptor.
    let last = std::sync::Arc::strong_count(&entry.file) == 1;
    crate::locks::on_close(&entry.file, c.task.process.pid, last);
    Ok(0)
}

/// close_range(2) (fs/file.c): closes, or marks close-on-exec, every descriptor in
/// `[first, last]`.
fn close_range(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    const CLOSE_RANGE_UNSHARE: u64 = 2;
    const CLOSE_RANGE_CLOEXEC: u64 = 4;
    let (first, last, flags) = (a[0] as u32, a[1] as u32, a[2]);
    if flags & !(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC) != 0 || first > last {
        return Err(Errno::EINVAL);
    }
    if flags & CLOSE_RANGE_UNSHARE != 0 {
        // A table shared through CLONE_FILES is copied first: the closes affect only ours.
        let copy = lock(&c.task.process.files()).clone();
        *lock(&c.task.process.files) = std::sync::Arc::new(std::sync::Mutex::new(copy));
    }
    let table = c.task.process.files();
    let fds: Vec<u32> = lock(&table)
        .iter()
        .map(|(fd, _)| fd)
        .filter(|fd| (first..=last).contains(fd))
        .collect();
    for fd in fds {
        if flags & CLOSE_RANGE_CLOEXEC != 0 {
            if let Ok(e) = lock(&table).entry_mut(fd as u64) {
                e.cloexec = true;
            }
            continue;
        }
        let removed = lock(&table).remove(fd as u64);
        if let Ok(entry) = removed {
            let last_ref = std::sync::Arc::strong_count(&entry.file) == 1;
            crate::locks::on_close(&entry.file, c.task.process.pid, last_ref);
        }
    }
    Ok(0)
}

fn getcwd(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    // Relative to the caller's root (d_path), "(unreachable)" when outside it (after a
    // pivot_root or chroot moved the root away: Linux getcwd's prefix).
    let (cwd, root) = {
        let fs = lock(&c.task.process.fs);
        (fs.cwd.clone(), fs.root.clone())
    };
    let cp = cwd.path();
    let mut p = mount::relative_to(&cp, &root.path()).unwrap_or_else(|| {
        let mut u = b"(unreachable)".to_vec();
        u.extend_from_slice(&cp);
        u
    });
    p.push(0);
    if p.len() as u64 > a[1] {
        return Err(Errno::ERANGE);
    }
    c.write_bytes(a[0], &p)?;
    Ok(p.len() as u64)
}

/// `d` if it is a directory the caller may search (fs/open.c: chdir, fchdir and chroot all
/// ask for `MAY_EXEC | MAY_CHDIR` on the directory itself).
fn searchable_dir(c: &SyscallCtx<'_>, d: Arc<Dentry>) -> SysResult<Arc<Dentry>> {
    let st = d.inode.stat()?;
    if st.mode & mode::S_IFMT != mode::S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    permission(&st, &creds(c), MAY_EXEC)?;
    Ok(d)
}

fn chdir(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let path = c.read_path(a[0])?;
    let d = searchable_dir(c, lookup(c, AT_FDCWD as u64, &path, Last::Follow)?)?;
    lock(&c.task.process.fs).cwd = d;
    Ok(0)
}

fn fchdir(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let f = lock(&c.task.process.files()).get(a[0])?;
    let d = searchable_dir(c, f.dentry.clone().ok_or(Errno::ENOTDIR)?)?;
    lock(&c.task.process.fs).cwd = d;
    Ok(0)
}

use um_uapi::abi::capability::CAP_SYS_CHROOT;

/// chroot (fs/open.c): a directory the caller may search becomes the root of its path walks
/// (`..` stops there); needs CAP_SYS_CHROOT. The working directory stays where it is.
fn chroot(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let path = c.read_path(a[0])?;
    let d = searchable_dir(c, lookup(c, AT_FDCWD as u64, &path, Last::Follow)?)?;
    if !c.task.process.capable(CAP_SYS_CHROOT) {
        return Err(Errno::EPERM);
    }
    lock(&c.task.process.fs).root = d;
    Ok(0)
}

fn do_readlinkat(c: &mut SyscallCtx<'_>, dirfd: u64, path: u64, buf: u64, size: u64) -> SysResult {
    if (size as i64) <= 0 {
        return Err(Errno::EINVAL);
    }
    let d = match resolve_at(
        c,
        dirfd,
        path,
        super::AT_SYMLINK_NOFOLLOW | super::AT_EMPTY_PATH,
    )? {
        Target::Dentry(d) => d,
        Target::File(_) => return Err(Errno::EINVAL),
    };
    let t = d.inode.readlink()?;
    let n = t.len().min(size as usize);
    c.write_bytes(buf, &t[..n])?;
    Ok(n as u64)
}

fn readlinkat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_readlinkat(c, a[0], a[1], a[2], a[3])
}

fn readlink(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_readlinkat(c, AT_FDCWD as u64, a[0], a[1], a[2])
}

fn do_faccessat(
    c: &mut SyscallCtx<'_>,
    dirfd: u64,
    path: u64,
    amode: u64,
    flags: u64,
) -> SysResult {
    use um_uapi::abi::fcntl::AT_EACCESS;
    if amode & !7 != 0 || flags & !(AT_EACCESS | 0x100 | 0x1000) != 0 {
        return Err(Errno::EINVAL);
    }
    // access() checks with the real ids unless AT_EACCESS (fs/open.c access_override_creds).
    let mut cr = creds(c);
    if flags & AT_EACCESS == 0 {
        cr.fsuid = cr.uid;
        cr.fsgid = cr.gid;
    }
    let p = c.read_cstr(path, 4096)?;
    let (st, d) = if p.is_empty() {
        match resolve_at(c, dirfd, path, flags)? {
            Target::Dentry(d) => (d.inode.stat()?, Some(d)),
            Target::File(f) => (f.ops.stat()?, None),
        }
    } else {
        let fs = lock(&c.task.process.fs).clone();
        let start = if p[0] == b'/' {
            fs.root.clone()
        } else {
            start_dir(c, dirfd)?
        };
        let last = if flags & 0x100 != 0 {
            Last::NoFollow
        } else {
            Last::Follow
        };
        let d = namei::walk_with(&fs, &cr, &start, &p, last)?;
        (d.inode.stat()?, Some(d))
    };
    // amode is R_OK 4, W_OK 2, X_OK 1: the same bits as MAY_*.
    permission(&st, &cr, amode as u32)?;
    if amode & 2 != 0
        && matches!(
            st.mode & mode::S_IFMT,
            mode::S_IFREG | mode::S_IFDIR | mode::S_IFLNK
        )
        && d.as_deref().is_some_and(mount::is_readonly)
    {
        return Err(Errno::EROFS);
    }
    // inode_permission: writing to an immutable inode is EPERM.
    if amode & 2 != 0 && d.is_some_and(|d| namei::is_immutable(&*d.inode)) {
        return Err(Errno::EPERM);
    }
    Ok(0)
}

fn faccessat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_faccessat(c, a[0], a[1], a[2], 0)
}

fn faccessat2(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_faccessat(c, a[0], a[1], a[2], a[3])
}

fn access(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    do_faccessat(c, AT_FDCWD as u64, a[0], a[1], 0)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("openat", openat);
    t.register("open", open);
    t.register("creat", creat);
    t.register("close", close);
    t.register("close_range", close_range);
    t.register("getcwd", getcwd);
    t.register("chdir", chdir);
    t.register("fchdir", fchdir);
    t.register("chroot", chroot);
    t.register("readlinkat", readlinkat);
    t.register("readlink", readlink);
    t.register("faccessat", faccessat);
    t.register("faccessat2", faccessat2);
    t.register("access", access);
}
