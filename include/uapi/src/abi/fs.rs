//! Inode flags and their ioctls (Linux `include/uapi/linux/fs.h`): the `FS_*_FL` bits that
//! `chattr`/`lsattr` set and read with `FS_IOC_SETFLAGS`/`FS_IOC_GETFLAGS`, and `struct fsxattr`
//! (`FS_IOC_FSGETXATTR`) with its `FS_XFLAG_*` bits. The same on every arch (the ioctl numbers
//! encode `sizeof(long)`, 8 on both 64-bit arches here; the kernel reads and writes an `int`).

use static_assertions::const_assert_eq;

use super::tty::{ior, iow};

/// `FS_SECRM_FL`: secure deletion.
pub const FS_SECRM_FL: u32 = 0x0000_0001;
/// `FS_UNRM_FL`: undelete.
pub const FS_UNRM_FL: u32 = 0x0000_0002;
/// `FS_COMPR_FL`: compress file.
pub const FS_COMPR_FL: u32 = 0x0000_0004;
/// `FS_SYNC_FL`: synchronous updates.
pub const FS_SYNC_FL: u32 = 0x0000_0008;
/// `FS_IMMUTABLE_FL`: no change to data or metadata, no new or removed names.
pub const FS_IMMUTABLE_FL: u32 = 0x0000_0010;
/// `FS_APPEND_FL`: writes only at the end, no truncation, no removal.
pub const FS_APPEND_FL: u32 = 0x0000_0020;
/// `FS_NODUMP_FL`: not for dump(8).
pub const FS_NODUMP_FL: u32 = 0x0000_0040;
/// `FS_NOATIME_FL`: access time not updated.
pub const FS_NOATIME_FL: u32 = 0x0000_0080;
/// `FS_FL_USER_VISIBLE`: the flags `FS_IOC_GETFLAGS` may report.
pub const FS_FL_USER_VISIBLE: u32 = 0x0003_DFFF;

/// `FS_IOC_GETFLAGS` = `_IOR('f', 1, long)`.
pub const FS_IOC_GETFLAGS: u32 = ior(b'f', 1, 8);
/// `FS_IOC_SETFLAGS` = `_IOW('f', 2, long)`.
pub const FS_IOC_SETFLAGS: u32 = iow(b'f', 2, 8);
/// `FS_IOC32_GETFLAGS` = `_IOR('f', 1, int)` (the compat number; 64-bit kernels answer it too).
pub const FS_IOC32_GETFLAGS: u32 = ior(b'f', 1, 4);
/// `FS_IOC32_SETFLAGS` = `_IOW('f', 2, int)`.
pub const FS_IOC32_SETFLAGS: u32 = iow(b'f', 2, 4);
/// `FS_IOC_FSGETXATTR` = `_IOR('X', 31, struct fsxattr)`.
pub const FS_IOC_FSGETXATTR: u32 = ior(b'X', 31, core::mem::size_of::<FsXattr>());

/// `FS_XFLAG_IMMUTABLE`.
pub const FS_XFLAG_IMMUTABLE: u32 = 0x0000_0008;
/// `FS_XFLAG_APPEND`.
pub const FS_XFLAG_APPEND: u32 = 0x0000_0010;
/// `FS_XFLAG_SYNC`.
pub const FS_XFLAG_SYNC: u32 = 0x0000_0020;
/// `FS_XFLAG_NOATIME`.
pub const FS_XFLAG_NOATIME: u32 = 0x0000_0040;
/// `FS_XFLAG_NODUMP`.
pub const FS_XFLAG_NODUMP: u32 = 0x0000_0080;

crate::pod_struct! {
    /// `struct fsxattr`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct FsXattr {
        pub fsx_xflags: u32,
        pub fsx_extsize: u32,
        pub fsx_nextents: u32,
        pub fsx_projid: u32,
        pub fsx_cowextsize: u32,
        pub fsx_pad: [u8; 8],
    }
}
const_assert_eq!(core::mem::size_of::<FsXattr>(), 28);
const_assert_eq!(core::mem::offset_of!(FsXattr, fsx_cowextsize), 16);

/// The `FS_XFLAG_*` bits of `FS_*_FL` flags (`fileattr_fill_flags`, fs/ioctl.c).
pub const fn xflags_of(flags: u32) -> u32 {
    let mut x = 0;
    if flags & FS_SYNC_FL != 0 {
        x |= FS_XFLAG_SYNC;
    }
    if flags & FS_IMMUTABLE_FL != 0 {
        x |= FS_XFLAG_IMMUTABLE;
    }
    if flags & FS_APPEND_FL != 0 {
        x |= FS_XFLAG_APPEND;
    }
    if flags & FS_NODUMP_FL != 0 {
        x |= FS_XFLAG_NODUMP;
    }
    if flags & FS_NOATIME_FL != 0 {
        x |= FS_XFLAG_NOATIME;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_numbers_match_linux() {
        // The values strace and e2fsprogs print on x86_64 and arm64.
        assert_eq!(FS_IOC_GETFLAGS, 0x8008_6601);
        assert_eq!(FS_IOC_SETFLAGS, 0x4008_6602);
        assert_eq!(FS_IOC32_GETFLAGS, 0x8004_6601);
        assert_eq!(FS_IOC32_SETFLAGS, 0x4004_6602);
        assert_eq!(FS_IOC_FSGETXATTR, 0x801c_581f);
    }

    #[test]
    fn xflags_follow_flags() {
        assert_eq!(
            xflags_of(FS_IMMUTABLE_FL | FS_APPEND_FL | FS_NODUMP_FL),
            FS_XFLAG_IMMUTABLE | FS_XFLAG_APPEND | FS_XFLAG_NODUMP
        );
        assert_eq!(xflags_of(FS_COMPR_FL), 0);
    }
}
