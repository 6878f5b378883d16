//! memfd_create(2) (Linux mm/memfd.c `SYSCALL_DEFINE2(memfd_create)`). The file is
//! [`crate::memfd`]; its seals are reached through `fcntl` (`sys/fd.rs`).

use super::open::creds;
use um_kernel::syscall::{SyscallCtx, SyscallTable};
use um_kernel::task::lock;
use um_kernel::vfs::{OpenFile, Owner};
use um_kernel::wait::IoCtx;
use um_uapi::{Errno, SysResult};

/// `MFD_CLOEXEC`.
const MFD_CLOEXEC: u32 = 0x1;
/// `MFD_ALLOW_SEALING`.
const MFD_ALLOW_SEALING: u32 = 0x2;
/// `MFD_HUGETLB`.
const MFD_HUGETLB: u32 = 0x4;
/// `MFD_HUGE_MASK << MFD_HUGE_SHIFT`: the huge page size, allowed only with `MFD_HUGETLB`.
const MFD_HUGE_SIZE_BITS: u32 = 0x3f << 26;
/// `MFD_NAME_MAX_LEN`: `NAME_MAX` minus the `memfd:` prefix.
const MFD_NAME_MAX_LEN: usize = 255 - 6;
use um_uapi::abi::fcntl::O_CLOEXEC;
use um_uapi::abi::fcntl::O_RDWR;

/// The flag checks of memfd_create (Linux 6.1: `MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB`,
/// plus the size bits with `MFD_HUGETLB`).
fn check_flags(flags: u32) -> SysResult<()> {
    let all = MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB;
    let allowed = if flags & MFD_HUGETLB != 0 {
        all | MFD_HUGE_SIZE_BITS
    } else {
        all
    };
    if flags & !allowed != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

fn memfd_create(c: &mut SyscallCtx<'_>, a: [u64; 6]) -> SysResult {
    let flags = u32::try_from(a[1]).map_err(|_| Errno::EINVAL)?;
    check_flags(flags)?;
    // strnlen_user(uname, MFD_NAME_MAX_LEN + 1): unreadable is EFAULT, too long EINVAL.
    let name = match c.read_cstr(a[0], MFD_NAME_MAX_LEN + 1) {
        Ok(n) => n,
        Err(Errno::ENAMETOOLONG) => return Err(Errno::EINVAL),
        Err(e) => return Err(e),
    };
    // MFD_HUGETLB: a hugetlbfs file of the size the MFD_HUGE_* field names (0: the default);
    // hugetlb_file_setup answers ENODEV for a size the kernel has no pool of.
    let huge = if flags & MFD_HUGETLB != 0 {
        let log2 = (flags & MFD_HUGE_SIZE_BITS) >> 26;
        Some(
            um_mm::hugetlb::pool()
                .size_of_log(log2)
                .ok_or(Errno::ENODEV)?,
        )
    } else {
        None
    };
    let cr = creds(c);
    let owner = Owner {
        uid: cr.fsuid,
        gid: cr.fsgid,
    };
    let d = crate::memfd::create(&name, owner, flags & MFD_ALLOW_SEALING != 0, huge)?;
    let ops = d.inode.open(
        &IoCtx {
            task: c.task,
            nonblock: false,
            flags: 0,
        },
        O_RDWR,
    )?;
    let cloexec = flags & MFD_CLOEXEC != 0;
    let file_flags = O_RDWR | if cloexec { O_CLOEXEC } else { 0 };
    let f = OpenFile::new(ops, file_flags, Some(d));
    Ok(lock(&c.task.process.files()).install(f, cloexec, 0)? as u64)
}

/// Registers this family (and hugetlbfs, which memfd_create and mmap use).
pub fn register(t: &mut SyscallTable) {
    crate::hugetlbfs::register();
    t.register("memfd_create", memfd_create);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags() {
        assert_eq!(check_flags(0), Ok(()));
        assert_eq!(check_flags(MFD_CLOEXEC | MFD_ALLOW_SEALING), Ok(()));
        assert_eq!(check_flags(0x8), Err(Errno::EINVAL));
        assert_eq!(
            check_flags(MFD_HUGE_SIZE_BITS),
            Err(Errno::EINVAL),
            "size without HUGETLB"
        );
        assert_eq!(check_flags(MFD_HUGETLB | (21 << 26)), Ok(()));
    }
}
