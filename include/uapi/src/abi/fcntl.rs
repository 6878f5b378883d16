//! File-related flags and structures shared by x86_64 and arm64.
//!
//! Sources: `include/uapi/asm-generic/fcntl.h` (open flags, `F_*`, `struct flock`),
//! `include/uapi/linux/fcntl.h` (`AT_*`, `F_LINUX_SPECIFIC_BASE` commands, seals),
//! `include/uapi/linux/stat.h` (`S_IF*`, `struct statx`, `STATX_*`), `include/uapi/linux/fs.h`
//! (`SEEK_*`, `RENAME_*`), `include/uapi/asm-generic/statfs.h` (`struct statfs`, all words are 64
//! bits on both arches), `include/linux/dirent.h`/`fs/readdir.c` (`struct linux_dirent64`);
//! `F_OK`/`R_OK`/`W_OK`/`X_OK` are POSIX `<unistd.h>` values that `faccessat` takes.
//!
//! x86_64 (`arch/x86/include/uapi/asm/fcntl.h` is just asm-generic) and arm64
//! (`arch/arm64/include/uapi/asm/fcntl.h`) differ in four open flags: `O_DIRECTORY`, `O_NOFOLLOW`,
//! `O_DIRECT`, `O_LARGEFILE`. Those are *not* in [`OpenFlags`]; each arch crate describes them
//! with an [`OpenFlagsArch`].

use static_assertions::const_assert_eq;

use super::time::Timespec;

bitflags::bitflags! {
    /// `open(2)` flags whose values are the same on x86_64 and arm64.
    ///
    /// The access mode (`O_RDONLY` 0, `O_WRONLY` 1, `O_RDWR` 2) is a two-bit field, not flags: use
    /// [`OpenFlags::access_mode`]. Arch-dependent bits (`O_DIRECTORY`, ...) are kept as unnamed bits
    /// by `from_bits_retain` and interpreted with the arch's [`OpenFlagsArch`].
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct OpenFlags: u32 {
        /// Write only (access mode 1).
        const WRONLY = 0o1;
        /// Read and write (access mode 2).
        const RDWR = 0o2;
        /// Create the file if it does not exist.
        const CREAT = 0o100;
        /// With `CREAT`: fail if it exists.
        const EXCL = 0o200;
        /// Do not make it the controlling terminal.
        const NOCTTY = 0o400;
        /// Truncate to length 0.
        const TRUNC = 0o1000;
        /// Writes append.
        const APPEND = 0o2000;
        /// Non-blocking I/O (`O_NDELAY` is the same bit).
        const NONBLOCK = 0o4000;
        /// Synchronized data writes.
        const DSYNC = 0o10000;
        /// Signal-driven I/O (`FASYNC`).
        const ASYNC = 0o20000;
        /// Do not update the access time.
        const NOATIME = 0o1000000;
        /// Close on exec.
        const CLOEXEC = 0o2000000;
        /// `__O_SYNC`; `O_SYNC` is `__O_SYNC | O_DSYNC` ([`OpenFlags::SYNC`]).
        const SYNC_BIT = 0o4000000;
        /// `O_SYNC`: full synchronized writes.
        const SYNC = 0o4000000 | 0o10000;
        /// Open a path without opening the file.
        const PATH = 0o10000000;
        /// `__O_TMPFILE`; `O_TMPFILE` also needs the arch's `O_DIRECTORY` bit.
        const TMPFILE_BIT = 0o20000000;
    }
}

/// `O_ACCMODE`: the two access-mode bits.
pub const O_ACCMODE: u32 = 0o3;
/// Read only.
pub const O_RDONLY: u32 = 0;
/// Write only.
pub const O_WRONLY: u32 = 1;
/// Read and write.
pub const O_RDWR: u32 = 2;

// The open flags with the same value on both arches, as plain words for code that tests bits of
// a raw argument (include/uapi/asm-generic/fcntl.h); pinned to [`OpenFlags`] below and to the
// libc crate's values in the tests.
/// `O_CREAT`.
pub const O_CREAT: u32 = 0o100;
/// `O_EXCL`.
pub const O_EXCL: u32 = 0o200;
/// `O_NOCTTY`.
pub const O_NOCTTY: u32 = 0o400;
/// `O_TRUNC`.
pub const O_TRUNC: u32 = 0o1000;
/// `O_APPEND`.
pub const O_APPEND: u32 = 0o2000;
/// `O_NONBLOCK` (`O_NDELAY`).
pub const O_NONBLOCK: u32 = 0o4000;
/// `O_DSYNC`.
pub const O_DSYNC: u32 = 0o10000;
/// `O_ASYNC` (`FASYNC`).
pub const O_ASYNC: u32 = 0o20000;
/// `O_NOATIME`.
pub const O_NOATIME: u32 = 0o1000000;
/// `O_CLOEXEC`.
pub const O_CLOEXEC: u32 = 0o2000000;
/// `O_PATH`.
pub const O_PATH: u32 = 0o10000000;

const_assert_eq!(O_WRONLY, OpenFlags::WRONLY.bits());
const_assert_eq!(O_RDWR, OpenFlags::RDWR.bits());
const_assert_eq!(O_CREAT, OpenFlags::CREAT.bits());
const_assert_eq!(O_EXCL, OpenFlags::EXCL.bits());
const_assert_eq!(O_NOCTTY, OpenFlags::NOCTTY.bits());
const_assert_eq!(O_TRUNC, OpenFlags::TRUNC.bits());
const_assert_eq!(O_APPEND, OpenFlags::APPEND.bits());
const_assert_eq!(O_NONBLOCK, OpenFlags::NONBLOCK.bits());
const_assert_eq!(O_DSYNC, OpenFlags::DSYNC.bits());
const_assert_eq!(O_ASYNC, OpenFlags::ASYNC.bits());
const_assert_eq!(O_NOATIME, OpenFlags::NOATIME.bits());
const_assert_eq!(O_CLOEXEC, OpenFlags::CLOEXEC.bits());
const_assert_eq!(O_PATH, OpenFlags::PATH.bits());

/// The access mode of an open file (`flags & O_ACCMODE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessMode {
    /// `O_RDONLY`.
    ReadOnly,
    /// `O_WRONLY`.
    WriteOnly,
    /// `O_RDWR`.
    ReadWrite,
}

impl AccessMode {
    /// Whether reads are allowed.
    pub const fn readable(self) -> bool {
        matches!(self, AccessMode::ReadOnly | AccessMode::ReadWrite)
    }
    /// Whether writes are allowed.
    pub const fn writable(self) -> bool {
        matches!(self, AccessMode::WriteOnly | AccessMode::ReadWrite)
    }
}

impl OpenFlags {
    /// The access mode; `None` for the value 3, which Linux treats as "no access" (used by some
    /// programs for ioctl-only opens; `open` accepts it, `read`/`write` then fail with `EBADF`).
    pub const fn access_mode(self) -> Option<AccessMode> {
        match self.bits() & O_ACCMODE {
            O_RDONLY => Some(AccessMode::ReadOnly),
            O_WRONLY => Some(AccessMode::WriteOnly),
            O_RDWR => Some(AccessMode::ReadWrite),
            _ => None,
        }
    }
}

/// The values of the open flags that differ between arches (`arch/*/include/uapi/asm/fcntl.h`).
/// Each arch crate exports one as `OPEN_FLAGS_ARCH`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpenFlagsArch {
    /// `O_DIRECTORY`.
    pub directory: u32,
    /// `O_NOFOLLOW`.
    pub nofollow: u32,
    /// `O_DIRECT`.
    pub direct: u32,
    /// `O_LARGEFILE` (always implied on 64-bit; `fcntl(F_GETFL)` reports it).
    pub largefile: u32,
}

impl OpenFlagsArch {
    /// All arch-dependent bits.
    pub const fn all(&self) -> u32 {
        self.directory | self.nofollow | self.direct | self.largefile
    }
    /// Every bit `open` knows about on this arch (common and arch-dependent).
    pub const fn known_bits(&self) -> u32 {
        OpenFlags::all().bits() | self.all()
    }
    /// `O_TMPFILE` = `__O_TMPFILE | O_DIRECTORY`.
    pub const fn tmpfile(&self) -> u32 {
        OpenFlags::TMPFILE_BIT.bits() | self.directory
    }
}

/// `AT_FDCWD`: the "current directory" dirfd for the `*at()` calls.
pub const AT_FDCWD: i32 = -100;

bitflags::bitflags! {
    /// Flags of the `*at()` calls (`include/uapi/linux/fcntl.h`). `REMOVEDIR` (unlinkat) and
    /// `EACCESS` (faccessat) share the bit 0x200; which one applies depends on the call.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct AtFlags: u32 {
        /// Do not follow a trailing symlink.
        const SYMLINK_NOFOLLOW = 0x100;
        /// `unlinkat`: remove a directory.
        const REMOVEDIR = 0x200;
        /// `faccessat`: check with the effective ids.
        const EACCESS = 0x200;
        /// `linkat`: follow a trailing symlink.
        const SYMLINK_FOLLOW = 0x400;
        /// Do not trigger an automount.
        const NO_AUTOMOUNT = 0x800;
        /// An empty path means the dirfd itself.
        const EMPTY_PATH = 0x1000;
        /// `statx`: force a sync with the server.
        const STATX_FORCE_SYNC = 0x2000;
        /// `statx`: do not sync.
        const STATX_DONT_SYNC = 0x4000;
        /// Apply to a whole subtree (`open_tree`, `mount_setattr`).
        const RECURSIVE = 0x8000;
    }
}

// The `*at()` flags as words: u64, because handlers test them against the raw argument register
// (include/uapi/linux/fcntl.h); pinned to [`AtFlags`] below and to libc's values in the tests.
/// `AT_SYMLINK_NOFOLLOW`.
pub const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
/// `AT_EACCESS`.
pub const AT_EACCESS: u64 = 0x200;
/// `AT_REMOVEDIR`.
pub const AT_REMOVEDIR: u64 = 0x200;
/// `AT_SYMLINK_FOLLOW`.
pub const AT_SYMLINK_FOLLOW: u64 = 0x400;
/// `AT_NO_AUTOMOUNT`.
pub const AT_NO_AUTOMOUNT: u64 = 0x800;
/// `AT_EMPTY_PATH`.
pub const AT_EMPTY_PATH: u64 = 0x1000;
/// `AT_STATX_SYNC_TYPE`: the mask of the statx sync mode.
pub const AT_STATX_SYNC_TYPE: u64 = 0x6000;
/// `AT_STATX_SYNC_AS_STAT`.
pub const AT_STATX_SYNC_AS_STAT: u64 = 0x0000;
/// `AT_STATX_FORCE_SYNC`.
pub const AT_STATX_FORCE_SYNC: u64 = 0x2000;
/// `AT_STATX_DONT_SYNC`.
pub const AT_STATX_DONT_SYNC: u64 = 0x4000;
/// `AT_RECURSIVE`.
pub const AT_RECURSIVE: u64 = 0x8000;

const_assert_eq!(AT_SYMLINK_NOFOLLOW, AtFlags::SYMLINK_NOFOLLOW.bits() as u64);
const_assert_eq!(AT_EACCESS, AtFlags::EACCESS.bits() as u64);
const_assert_eq!(AT_REMOVEDIR, AtFlags::REMOVEDIR.bits() as u64);
const_assert_eq!(AT_SYMLINK_FOLLOW, AtFlags::SYMLINK_FOLLOW.bits() as u64);
const_assert_eq!(AT_NO_AUTOMOUNT, AtFlags::NO_AUTOMOUNT.bits() as u64);
const_assert_eq!(AT_EMPTY_PATH, AtFlags::EMPTY_PATH.bits() as u64);
const_assert_eq!(AT_STATX_FORCE_SYNC, AtFlags::STATX_FORCE_SYNC.bits() as u64);
const_assert_eq!(AT_STATX_DONT_SYNC, AtFlags::STATX_DONT_SYNC.bits() as u64);
const_assert_eq!(AT_RECURSIVE, AtFlags::RECURSIVE.bits() as u64);

/// `renameat2` flags.
pub const RENAME_NOREPLACE: u32 = 1;
/// Atomically exchange the two names.
pub const RENAME_EXCHANGE: u32 = 2;
/// Leave a whiteout at the source.
pub const RENAME_WHITEOUT: u32 = 4;

/// `access` modes.
pub const F_OK: u32 = 0;
/// Execute permission.
pub const X_OK: u32 = 1;
/// Write permission.
pub const W_OK: u32 = 2;
/// Read permission.
pub const R_OK: u32 = 4;

/// `lseek` whence: from the start.
pub const SEEK_SET: u32 = 0;
/// From the current offset.
pub const SEEK_CUR: u32 = 1;
/// From the end.
pub const SEEK_END: u32 = 2;
/// Next data at or after the offset.
pub const SEEK_DATA: u32 = 3;
/// Next hole at or after the offset.
pub const SEEK_HOLE: u32 = 4;

/// File type mask of `st_mode`.
pub const S_IFMT: u32 = 0o170000;
/// Socket.
pub const S_IFSOCK: u32 = 0o140000;
/// Symbolic link.
pub const S_IFLNK: u32 = 0o120000;
/// Regular file.
pub const S_IFREG: u32 = 0o100000;
/// Block device.
pub const S_IFBLK: u32 = 0o060000;
/// Directory.
pub const S_IFDIR: u32 = 0o040000;
/// Character device.
pub const S_IFCHR: u32 = 0o020000;
/// FIFO.
pub const S_IFIFO: u32 = 0o010000;
/// Set-user-id.
pub const S_ISUID: u32 = 0o4000;
/// Set-group-id.
pub const S_ISGID: u32 = 0o2000;
/// Sticky.
pub const S_ISVTX: u32 = 0o1000;
/// Owner rwx.
pub const S_IRWXU: u32 = 0o700;
/// Owner read.
pub const S_IRUSR: u32 = 0o400;
/// Owner write.
pub const S_IWUSR: u32 = 0o200;
/// Owner execute.
pub const S_IXUSR: u32 = 0o100;
/// Group rwx.
pub const S_IRWXG: u32 = 0o070;
/// Group read.
pub const S_IRGRP: u32 = 0o040;
/// Group write.
pub const S_IWGRP: u32 = 0o020;
/// Group execute.
pub const S_IXGRP: u32 = 0o010;
/// Others rwx.
pub const S_IRWXO: u32 = 0o007;
/// Others read.
pub const S_IROTH: u32 = 0o004;
/// Others write.
pub const S_IWOTH: u32 = 0o002;
/// Others execute.
pub const S_IXOTH: u32 = 0o001;

/// `d_type` values of `linux_dirent64` (`include/linux/fs_types.h`: `S_IFMT >> 12`).
pub const DT_UNKNOWN: u8 = 0;
/// FIFO.
pub const DT_FIFO: u8 = 1;
/// Character device.
pub const DT_CHR: u8 = 2;
/// Directory.
pub const DT_DIR: u8 = 4;
/// Block device.
pub const DT_BLK: u8 = 6;
/// Regular file.
pub const DT_REG: u8 = 8;
/// Symbolic link.
pub const DT_LNK: u8 = 10;
/// Socket.
pub const DT_SOCK: u8 = 12;
/// Whiteout.
pub const DT_WHT: u8 = 14;

/// The `d_type` for a mode (`S_IFMT` bits >> 12).
pub const fn dt_from_mode(mode: u32) -> u8 {
    ((mode & S_IFMT) >> 12) as u8
}

/// `new_encode_dev` (`include/linux/kdev_t.h`): the device number as `stat` reports it on
/// 64-bit (12-bit major, 20-bit minor; what glibc's `major()`/`minor()` decode).
pub const fn new_encode_dev(major: u32, minor: u32) -> u64 {
    ((minor & 0xff) | ((major & 0xfff) << 8) | ((minor & !0xff) << 12)) as u64
}

/// `new_decode_dev`: `(major, minor)` of an encoded device number.
pub const fn new_decode_dev(dev: u64) -> (u32, u32) {
    let dev = dev as u32;
    ((dev & 0xfff00) >> 8, (dev & 0xff) | ((dev >> 12) & 0xfff00))
}

/// `fcntl` commands.
pub const F_DUPFD: u32 = 0;
/// Get the fd flags (`FD_CLOEXEC`).
pub const F_GETFD: u32 = 1;
/// Set the fd flags.
pub const F_SETFD: u32 = 2;
/// Get the file status flags.
pub const F_GETFL: u32 = 3;
/// Set the file status flags.
pub const F_SETFL: u32 = 4;
/// Test a POSIX lock.
pub const F_GETLK: u32 = 5;
/// Set a POSIX lock.
pub const F_SETLK: u32 = 6;
/// Set a POSIX lock, waiting.
pub const F_SETLKW: u32 = 7;
/// Set the SIGIO owner.
pub const F_SETOWN: u32 = 8;
/// Get the SIGIO owner.
pub const F_GETOWN: u32 = 9;
/// Set the SIGIO signal.
pub const F_SETSIG: u32 = 10;
/// Get the SIGIO signal.
pub const F_GETSIG: u32 = 11;
/// Set the owner (`struct f_owner_ex`).
pub const F_SETOWN_EX: u32 = 15;
/// Get the owner (`struct f_owner_ex`).
pub const F_GETOWN_EX: u32 = 16;
/// Test an OFD lock.
pub const F_OFD_GETLK: u32 = 36;
/// Set an OFD lock.
pub const F_OFD_SETLK: u32 = 37;
/// Set an OFD lock, waiting.
pub const F_OFD_SETLKW: u32 = 38;
/// Base of the Linux-specific commands.
pub const F_LINUX_SPECIFIC_BASE: u32 = 1024;
/// Set a lease.
pub const F_SETLEASE: u32 = 1024;
/// Get a lease.
pub const F_GETLEASE: u32 = 1025;
/// Directory notifications.
pub const F_NOTIFY: u32 = 1026;
/// Cancel a blocking lock.
pub const F_CANCELLK: u32 = 1029;
/// `F_DUPFD` with `FD_CLOEXEC`.
pub const F_DUPFD_CLOEXEC: u32 = 1030;
/// Set the pipe buffer size.
pub const F_SETPIPE_SZ: u32 = 1031;
/// Get the pipe buffer size.
pub const F_GETPIPE_SZ: u32 = 1032;
/// Add memfd seals.
pub const F_ADD_SEALS: u32 = 1033;
/// Get memfd seals.
pub const F_GET_SEALS: u32 = 1034;
/// Seal: no more seals.
pub const F_SEAL_SEAL: u32 = 0x1;
/// Seal: no shrinking.
pub const F_SEAL_SHRINK: u32 = 0x2;
/// Seal: no growing.
pub const F_SEAL_GROW: u32 = 0x4;
/// Seal: no writes.
pub const F_SEAL_WRITE: u32 = 0x8;
/// Seal: no new writable mappings.
pub const F_SEAL_FUTURE_WRITE: u32 = 0x10;
/// The close-on-exec fd flag.
pub const FD_CLOEXEC: u32 = 1;
/// Lock types of `struct flock`.
pub const F_RDLCK: i16 = 0;
/// Write lock.
pub const F_WRLCK: i16 = 1;
/// Unlock.
pub const F_UNLCK: i16 = 2;

crate::pod_struct! {
    /// `struct flock` (asm-generic, identical on x86_64 and arm64): 32 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Flock {
        /// `F_RDLCK`, `F_WRLCK`, `F_UNLCK`.
        pub l_type: i16,
        /// `SEEK_*` base of `l_start`.
        pub l_whence: i16,
        /// Padding.
        pub pad0: u32,
        /// Start offset.
        pub l_start: i64,
        /// Length (0: to EOF).
        pub l_len: i64,
        /// Owner pid (`F_GETLK`).
        pub l_pid: i32,
        /// Padding.
        pub pad1: u32,
    }
}

const_assert_eq!(core::mem::size_of::<Flock>(), 32);
const_assert_eq!(core::mem::offset_of!(Flock, l_start), 8);
const_assert_eq!(core::mem::offset_of!(Flock, l_pid), 24);

/// `statx` mask bits.
pub const STATX_TYPE: u32 = 0x1;
/// `stx_mode & !S_IFMT`.
pub const STATX_MODE: u32 = 0x2;
/// `stx_nlink`.
pub const STATX_NLINK: u32 = 0x4;
/// `stx_uid`.
pub const STATX_UID: u32 = 0x8;
/// `stx_gid`.
pub const STATX_GID: u32 = 0x10;
/// `stx_atime`.
pub const STATX_ATIME: u32 = 0x20;
/// `stx_mtime`.
pub const STATX_MTIME: u32 = 0x40;
/// `stx_ctime`.
pub const STATX_CTIME: u32 = 0x80;
/// `stx_ino`.
pub const STATX_INO: u32 = 0x100;
/// `stx_size`.
pub const STATX_SIZE: u32 = 0x200;
/// `stx_blocks`.
pub const STATX_BLOCKS: u32 = 0x400;
/// Everything `stat` returns.
pub const STATX_BASIC_STATS: u32 = 0x7ff;
/// `stx_btime`.
pub const STATX_BTIME: u32 = 0x800;
/// `stx_mnt_id`.
pub const STATX_MNT_ID: u32 = 0x1000;
/// `stx_dio_*_align`.
pub const STATX_DIOALIGN: u32 = 0x2000;
/// Reserved; a request with it is `EINVAL`.
pub const STATX_RESERVED: u32 = 0x8000_0000;
/// Deprecated "all" mask.
pub const STATX_ALL: u32 = 0xfff;
/// `stx_attributes`: compressed.
pub const STATX_ATTR_COMPRESSED: u64 = 0x4;
/// Immutable.
pub const STATX_ATTR_IMMUTABLE: u64 = 0x10;
/// Append-only.
pub const STATX_ATTR_APPEND: u64 = 0x20;
/// Not to be dumped.
pub const STATX_ATTR_NODUMP: u64 = 0x40;
/// Encrypted.
pub const STATX_ATTR_ENCRYPTED: u64 = 0x800;
/// Automount trigger.
pub const STATX_ATTR_AUTOMOUNT: u64 = 0x1000;
/// Root of a mount.
pub const STATX_ATTR_MOUNT_ROOT: u64 = 0x2000;
/// Verity protected.
pub const STATX_ATTR_VERITY: u64 = 0x10_0000;
/// DAX.
pub const STATX_ATTR_DAX: u64 = 0x20_0000;

crate::pod_struct! {
    /// `struct statx_timestamp`: 16 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct StatxTimestamp {
        /// Seconds since the epoch.
        pub tv_sec: i64,
        /// Nanoseconds.
        pub tv_nsec: u32,
        /// `__reserved`.
        pub reserved: i32,
    }
}

impl From<Timespec> for StatxTimestamp {
    fn from(t: Timespec) -> Self {
        StatxTimestamp {
            tv_sec: t.tv_sec,
            tv_nsec: t.tv_nsec as u32,
            reserved: 0,
        }
    }
}

crate::pod_struct! {
    /// `struct statx` (Linux 6.1 layout): 256 bytes. Newer kernels carve fields out of `spare3`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Statx {
        /// Which fields are filled in (`STATX_*`).
        pub stx_mask: u32,
        /// Preferred I/O size.
        pub stx_blksize: u32,
        /// `STATX_ATTR_*`.
        pub stx_attributes: u64,
        /// Hard links.
        pub stx_nlink: u32,
        /// Owner.
        pub stx_uid: u32,
        /// Group.
        pub stx_gid: u32,
        /// Mode (type and permissions).
        pub stx_mode: u16,
        /// `__spare0`.
        pub spare0: u16,
        /// Inode number.
        pub stx_ino: u64,
        /// Size in bytes.
        pub stx_size: u64,
        /// 512-byte blocks.
        pub stx_blocks: u64,
        /// Which `stx_attributes` bits are supported.
        pub stx_attributes_mask: u64,
        /// Access time.
        pub stx_atime: StatxTimestamp,
        /// Creation time.
        pub stx_btime: StatxTimestamp,
        /// Status change time.
        pub stx_ctime: StatxTimestamp,
        /// Modification time.
        pub stx_mtime: StatxTimestamp,
        /// Device of a special file: major.
        pub stx_rdev_major: u32,
        /// Device of a special file: minor.
        pub stx_rdev_minor: u32,
        /// Containing device: major.
        pub stx_dev_major: u32,
        /// Containing device: minor.
        pub stx_dev_minor: u32,
        /// Mount id.
        pub stx_mnt_id: u64,
        /// Direct I/O memory alignment.
        pub stx_dio_mem_align: u32,
        /// Direct I/O offset alignment.
        pub stx_dio_offset_align: u32,
        /// `__spare3`.
        pub spare3: [u64; 12],
    }
}

const_assert_eq!(core::mem::size_of::<StatxTimestamp>(), 16);
const_assert_eq!(core::mem::size_of::<Statx>(), 256);
const_assert_eq!(core::mem::offset_of!(Statx, stx_mode), 28);
const_assert_eq!(core::mem::offset_of!(Statx, stx_ino), 32);
const_assert_eq!(core::mem::offset_of!(Statx, stx_attributes_mask), 56);
const_assert_eq!(core::mem::offset_of!(Statx, stx_atime), 64);
const_assert_eq!(core::mem::offset_of!(Statx, stx_mtime), 112);
const_assert_eq!(core::mem::offset_of!(Statx, stx_rdev_major), 128);
const_assert_eq!(core::mem::offset_of!(Statx, stx_mnt_id), 144);
const_assert_eq!(core::mem::offset_of!(Statx, spare3), 160);

crate::pod_struct! {
    /// The fixed header of `struct linux_dirent64` (`getdents64`). In the guest buffer the header
    /// is [`LinuxDirent64::HEADER_LEN`] (19) bytes, followed by the NUL-terminated name, and the
    /// record is padded to 8 bytes; use [`LinuxDirent64::encode`] to build records. (The Rust
    /// struct has 5 bytes of tail padding, `pad`, that `encode` does not emit.)
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct LinuxDirent64 {
        /// Inode number.
        pub d_ino: u64,
        /// Offset cookie of the next entry.
        pub d_off: i64,
        /// Length of this record.
        pub d_reclen: u16,
        /// `DT_*`.
        pub d_type: u8,
        /// Not part of the record: the name starts at offset 19.
        pub pad: [u8; 5],
    }
}

const_assert_eq!(core::mem::offset_of!(LinuxDirent64, d_reclen), 16);
const_assert_eq!(core::mem::offset_of!(LinuxDirent64, d_type), 18);

impl LinuxDirent64 {
    /// Offset of `d_name` in a record.
    pub const HEADER_LEN: usize = 19;

    /// The record length for a name of `name_len` bytes: header + name + NUL, rounded up to 8.
    pub const fn reclen(name_len: usize) -> usize {
        (Self::HEADER_LEN + name_len + 1 + 7) & !7
    }

    /// Appends one complete record (header, name, NUL, zero padding) to `out`; returns its length.
    pub fn encode(out: &mut Vec<u8>, ino: u64, off: i64, d_type: u8, name: &[u8]) -> usize {
        let len = Self::reclen(name.len());
        let start = out.len();
        out.extend_from_slice(&ino.to_le_bytes());
        out.extend_from_slice(&off.to_le_bytes());
        out.extend_from_slice(&(len as u16).to_le_bytes());
        out.push(d_type);
        out.extend_from_slice(name);
        out.resize(start + len, 0);
        len
    }
}

crate::pod_struct! {
    /// `struct statfs` (asm-generic with 64-bit words; x86_64's is the same): 120 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Statfs {
        /// Filesystem magic.
        pub f_type: i64,
        /// Optimal transfer block size.
        pub f_bsize: i64,
        /// Total blocks.
        pub f_blocks: u64,
        /// Free blocks.
        pub f_bfree: u64,
        /// Free blocks for unprivileged users.
        pub f_bavail: u64,
        /// Total inodes.
        pub f_files: u64,
        /// Free inodes.
        pub f_ffree: u64,
        /// Filesystem id.
        pub f_fsid: [i32; 2],
        /// Maximum name length.
        pub f_namelen: i64,
        /// Fragment size.
        pub f_frsize: i64,
        /// Mount flags (`ST_*`).
        pub f_flags: i64,
        /// Spare.
        pub f_spare: [i64; 4],
    }
}

/// `ST_RDONLY` of `statfs.f_flags` (include/linux/statfs.h; `statvfs(3)`): the mount or the
/// file system instance is read-only. The same bit as `MS_RDONLY`.
pub const ST_RDONLY: i64 = 1;

const_assert_eq!(core::mem::size_of::<Statfs>(), 120);
const_assert_eq!(core::mem::offset_of!(Statfs, f_fsid), 56);
const_assert_eq!(core::mem::offset_of!(Statfs, f_namelen), 64);

/// The old `struct linux_dirent` of `getdents` (fs/readdir.c; x86_64 has the call, arm64 does
/// not): `unsigned long d_ino, d_off; unsigned short d_reclen; char d_name[]`, then a NUL and
/// the `DT_*` type in the record's last byte.
pub struct LinuxDirent;

impl LinuxDirent {
    /// Offset of `d_name` in a record (64-bit `long`).
    pub const HEADER_LEN: usize = 18;

    /// The record length (`ALIGN(offsetof(d_name) + namlen + 2, sizeof(long))`): header, name,
    /// NUL and the type byte, rounded up to 8.
    pub const fn reclen(name_len: usize) -> usize {
        (Self::HEADER_LEN + name_len + 2 + 7) & !7
    }

    /// Appends one complete record to `out`; returns its length.
    pub fn encode(out: &mut Vec<u8>, ino: u64, off: i64, d_type: u8, name: &[u8]) -> usize {
        let len = Self::reclen(name.len());
        let start = out.len();
        out.extend_from_slice(&ino.to_le_bytes());
        out.extend_from_slice(&off.to_le_bytes());
        out.extend_from_slice(&(len as u16).to_le_bytes());
        out.extend_from_slice(name);
        out.resize(start + len, 0);
        out[start + len - 1] = d_type;
        len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::Pod;

    /// The plain flag words against an independent source, the libc crate's Linux values.
    #[test]
    fn flag_words_are_libc_values() {
        let o = [
            (O_CREAT, libc::O_CREAT),
            (O_EXCL, libc::O_EXCL),
            (O_NOCTTY, libc::O_NOCTTY),
            (O_TRUNC, libc::O_TRUNC),
            (O_APPEND, libc::O_APPEND),
            (O_NONBLOCK, libc::O_NONBLOCK),
            (O_DSYNC, libc::O_DSYNC),
            (O_ASYNC, libc::O_ASYNC),
            (O_NOATIME, libc::O_NOATIME),
            (O_CLOEXEC, libc::O_CLOEXEC),
            (O_PATH, libc::O_PATH),
            (O_RDWR, libc::O_RDWR),
            (O_ACCMODE, libc::O_ACCMODE),
        ];
        for (ours, theirs) in o {
            assert_eq!(ours, theirs as u32);
        }
        let at = [
            (AT_SYMLINK_NOFOLLOW, libc::AT_SYMLINK_NOFOLLOW),
            (AT_EACCESS, libc::AT_EACCESS),
            (AT_REMOVEDIR, libc::AT_REMOVEDIR),
            (AT_SYMLINK_FOLLOW, libc::AT_SYMLINK_FOLLOW),
            (AT_NO_AUTOMOUNT, libc::AT_NO_AUTOMOUNT),
            (AT_EMPTY_PATH, libc::AT_EMPTY_PATH),
            (AT_RECURSIVE, libc::AT_RECURSIVE),
        ];
        for (ours, theirs) in at {
            assert_eq!(ours, theirs as u64);
        }
        assert_eq!(AT_FDCWD, libc::AT_FDCWD);
    }

    #[test]
    fn access_mode() {
        assert_eq!(
            OpenFlags::from_bits_retain(0).access_mode(),
            Some(AccessMode::ReadOnly)
        );
        assert_eq!(OpenFlags::RDWR.access_mode(), Some(AccessMode::ReadWrite));
        assert_eq!(
            (OpenFlags::WRONLY | OpenFlags::CREAT).access_mode(),
            Some(AccessMode::WriteOnly)
        );
        assert_eq!(OpenFlags::from_bits_retain(3).access_mode(), None);
        assert_eq!(OpenFlags::SYNC.bits(), 0o4010000);
        assert_eq!(OpenFlags::CLOEXEC.bits(), 0o2000000);
    }

    #[test]
    fn dirent_records() {
        let mut v = Vec::new();
        assert_eq!(LinuxDirent64::encode(&mut v, 5, 1, DT_DIR, b"."), 24);
        assert_eq!(
            LinuxDirent64::encode(&mut v, 6, 2, DT_REG, b"hello.txt"),
            32
        );
        assert_eq!(v.len(), 56);
        assert_eq!(v[16], 24);
        assert_eq!(v[18], DT_DIR);
        assert_eq!(&v[19..21], b".\0");
        let (h, _) = LinuxDirent64::from_prefix(&v[24..]).unwrap();
        assert_eq!((h.d_ino, h.d_off, h.d_reclen, h.d_type), (6, 2, 32, DT_REG));
        assert_eq!(dt_from_mode(S_IFLNK | 0o777), DT_LNK);
        assert_eq!(new_encode_dev(8, 1), 0x801);
        assert_eq!(new_encode_dev(136, 300), 0x10_882c);
        assert_eq!(new_decode_dev(new_encode_dev(259, 70000)), (259, 70000));
    }

    #[test]
    fn old_dirent_records() {
        // "." : 18 + 1 + 2 = 21, rounded to 24; the type in the last byte.
        let mut v = Vec::new();
        assert_eq!(LinuxDirent::encode(&mut v, 5, 1, DT_DIR, b"."), 24);
        assert_eq!(u16::from_le_bytes([v[16], v[17]]), 24);
        assert_eq!(&v[18..20], b".\0");
        assert_eq!(v[23], DT_DIR);
        // A 6-byte name fills 18 + 6 + 2 = 26 -> 32.
        assert_eq!(LinuxDirent::encode(&mut v, 7, 2, DT_REG, b"abcdef"), 32);
        assert_eq!(v[24 + 31], DT_REG);
        assert_eq!(&v[24 + 18..24 + 25], b"abcdef\0");
    }

    #[test]
    fn statx_bytes() {
        let s = Statx {
            stx_mode: 0o100644,
            stx_size: 42,
            ..Default::default()
        };
        let b = s.as_bytes();
        assert_eq!(b.len(), 256);
        assert_eq!(&b[28..30], &0o100644u16.to_le_bytes());
        assert_eq!(b[40], 42);
        assert_eq!(Statx::from_bytes(&b), Some(s));
        assert_eq!(Flock::default().as_bytes().len(), 32);
        assert_eq!(Statfs::default().as_bytes().len(), 120);
    }
}
