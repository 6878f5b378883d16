//! stat family (Linux fs/stat.c): `struct stat` in the native arch's layout, `statx` in the
//! common one.

use super::{AT_EMPTY_PATH, AT_FDCWD, Target, resolve_at};
use um_kernel::sysarg::args;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::vfs::Kstat;
use um_uapi::abi::fcntl::STATX_ATTR_MOUNT_ROOT;
use um_uapi::abi::pod::Pod;
use um_uapi::{Errno, SysResult};

/// The metadata as the caller sees it: owner and group through its user namespace
/// (fs/stat.c `cp_new_stat`, `from_kuid_munged(current_user_ns(), ..)`).
fn stat_of(t: Target) -> SysResult<Kstat> {
    let st = match t {
        Target::Dentry(d) => d.inode.stat(),
        Target::File(f) => f.ops.stat(),
    }?;
    Ok(seen(st))
}

fn seen(mut st: Kstat) -> Kstat {
    st.uid = um_kernel::userns::uid_out(st.uid);
    st.gid = um_kernel::userns::gid_out(st.gid);
    st
}

/// The metadata `(dirfd, path, flags)` names. An empty path with `AT_EMPTY_PATH` on a
/// descriptor is `vfs_fstat`: the open file's own inode, which still answers after its name
/// was unlinked or renamed (a hostfs inode looked up by name would not).
fn stat_at(c: &SyscallCtx<'_>, dirfd: u64, path: u64, flags: u64) -> SysResult<Kstat> {
    stat_of(target_at(c, dirfd, path, flags)?)
}

/// What `(dirfd, path, flags)` names, for the stat calls (see [`stat_at`]).
fn target_at(c: &SyscallCtx<'_>, dirfd: u64, path: u64, flags: u64) -> SysResult<Target> {
    if flags & AT_EMPTY_PATH != 0
        && dirfd as i32 != AT_FDCWD
        && matches!(c.read_cstr(path, 1), Ok(p) if p.is_empty())
    {
        return Ok(Target::File(
            lock(&c.task.process.files()).get(dirfd & 0xffff_ffff)?,
        ));
    }
    resolve_at(c, dirfd, path, flags)
}

fn newfstatat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    if a[3] & !(0x100 | 0x800 | 0x1000) != 0 {
        return Err(Errno::EINVAL);
    }
    let st = stat_at(c, a[0], a[1], a[3])?;
    c.write_bytes(a[2], &um_kernel::arch::stat_bytes(&st))?;
    Ok(0)
}

fn fstat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let f = lock(&c.task.process.files()).get(a[0])?;
    let st = seen(f.ops.stat()?);
    c.write_bytes(a[1], &um_kernel::arch::stat_bytes(&st))?;
    Ok(0)
}

fn stat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    newfstatat(c, [AT_FDCWD as u64, a[0], a[1], 0, 0, 0])
}

fn lstat(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    newfstatat(c, [AT_FDCWD as u64, a[0], a[1], 0x100, 0, 0])
}

fn statx(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (dirfd, path, flags, mask, buf): (u64, u64, u64, u32, u64) = args(&a)?;
    // AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH | AT_STATX_SYNC_TYPE
    if flags & !(0x100 | 0x800 | 0x1000 | 0x6000) != 0 || flags & 0x6000 == 0x6000 {
        return Err(Errno::EINVAL);
    }
    // STATX__RESERVED
    if mask & 0x8000_0000 != 0 {
        return Err(Errno::EINVAL);
    }
    let target = target_at(c, dirfd, path, flags)?;
    let inode = match &target {
        Target::Dentry(d) => Some(d.inode.clone()),
        Target::File(f) => f.dentry.as_ref().map(|d| d.inode.clone()),
    };
    let mut x = stat_of(target)?.to_statx();
    // fs/stat.c vfs_getattr_nosec: every file system reports whether the file is a mount's
    // root.
    x.stx_attributes_mask |= STATX_ATTR_MOUNT_ROOT;
    if let Some(i) = inode {
        if crate::mount::is_mount_root(&*i) {
            x.stx_attributes |= STATX_ATTR_MOUNT_ROOT;
        }
        // The inode flags that have statx attributes (the same bit values: compressed,
        // immutable, append, nodump), as each file system's getattr reports them.
        let mask = i.statx_attributes_mask();
        x.stx_attributes_mask |= mask;
        x.stx_attributes |= u64::from(i.fsflags().unwrap_or(0)) & mask;
    }
    c.write_bytes(buf, &x.as_bytes())?;
    Ok(0)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("newfstatat", newfstatat);
    t.register("fstat", fstat);
    t.register("stat", stat);
    t.register("lstat", lstat);
    t.register("statx", statx);
}
