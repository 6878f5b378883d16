//! sync_file_range(2) (Linux fs/sync.c `ksys_sync_file_range` and `sync_file_range`).
//!
//! The checks are Linux's, in its order: unknown flags, a negative offset or end, or an end
//! before the offset are `EINVAL`; then the descriptor (`EBADF`, also for `O_PATH`); then the
//! file type (`ESPIPE` unless a regular file, block device, directory or symlink). The work:
//! `SYNC_FILE_RANGE_WRITE` or `..._WAIT_AFTER` write the data out, which here is the file
//! system's `fsync(datasync)` of the whole file (a superset of writing out the range: hostfs
//! passes it to the host file, tmpfs has nothing to write); `WAIT_BEFORE` alone only waits for
//! writeback already under way, of which there is none.

use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::vfs::mode;
use um_uapi::{Errno, SysResult};

/// `SYNC_FILE_RANGE_WAIT_BEFORE`.
const WAIT_BEFORE: u64 = 1;
/// `SYNC_FILE_RANGE_WRITE`.
const WRITE: u64 = 2;
/// `SYNC_FILE_RANGE_WAIT_AFTER`.
const WAIT_AFTER: u64 = 4;
use um_uapi::abi::fcntl::O_PATH;

/// The argument checks of `ksys_sync_file_range` before the descriptor is looked at.
fn check_range(offset: u64, nbytes: u64, flags: u64) -> SysResult<()> {
    if flags & !(WAIT_BEFORE | WRITE | WAIT_AFTER) != 0 {
        return Err(Errno::EINVAL);
    }
    let end = offset.wrapping_add(nbytes);
    if (offset as i64) < 0 || (end as i64) < 0 || end < offset {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

fn sync_file_range(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let (fd, offset, nbytes, flags) = (a[0], a[1], a[2], a[3]);
    check_range(offset, nbytes, flags)?;
    let f = lock(&c.task.process.files()).get(fd)?;
    if f.flags() & O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    let fmt = f.ops.stat()?.mode & mode::S_IFMT;
    if !matches!(
        fmt,
        mode::S_IFREG | mode::S_IFBLK | mode::S_IFDIR | mode::S_IFLNK
    ) {
        return Err(Errno::ESPIPE);
    }
    if flags & (WRITE | WAIT_AFTER) != 0
        && let Some(d) = &f.dentry
    {
        d.inode.fsync(true)?;
    }
    Ok(0)
}

/// Registers this family.
pub fn register(t: &mut SyscallTable) {
    t.register("sync_file_range", sync_file_range);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_checks_follow_linux() {
        assert_eq!(check_range(0, 0, 0), Ok(()));
        assert_eq!(check_range(0, 0, 7), Ok(()));
        assert_eq!(check_range(0, 0, 8), Err(Errno::EINVAL), "unknown flag");
        assert_eq!(
            check_range(u64::MAX, 1, 0),
            Err(Errno::EINVAL),
            "negative offset"
        );
        assert_eq!(
            check_range(1, i64::MAX as u64, 0),
            Err(Errno::EINVAL),
            "end wraps negative"
        );
        assert_eq!(
            check_range(1 << 62, 1 << 62, 0),
            Err(Errno::EINVAL),
            "end overflows i64"
        );
        assert_eq!(check_range(4096, 4096, WRITE), Ok(()));
    }
}
