//! The parts of the Linux user ABI that are specific to arm64 (the common ones are in
//! `um_uapi::abi`).
//!
//! Sources: `include/uapi/asm-generic/stat.h` (arm64 uses the generic `struct stat`, 128 bytes;
//! `arch/arm64/include/uapi/asm/stat.h` only includes it), `arch/arm64/include/uapi/asm/fcntl.h`
//! (`O_DIRECTORY` 040000, `O_NOFOLLOW` 0100000, `O_DIRECT` 0200000, `O_LARGEFILE` 0400000),
//! `include/uapi/linux/eventpoll.h` (`struct epoll_event` is not packed on arm64: 16 bytes),
//! `arch/arm64/include/uapi/asm/signal.h` (`MINSIGSTKSZ` 5120, `SIGSTKSZ` 16384),
//! `arch/arm64/include/uapi/asm/mman.h` (`PROT_BTI`, `PROT_MTE`), `include/uapi/linux/elf-em.h`
//! (`EM_AARCH64`), `include/uapi/linux/audit.h` (`AUDIT_ARCH_AARCH64`), `arch/arm64/Kconfig`
//! (`select CLONE_BACKWARDS`: `clone(flags, newsp, parent_tid, tls, child_tid)`).

use static_assertions::const_assert_eq;
use um_uapi::abi::fcntl::OpenFlagsArch;
use um_uapi::abi::sched::{CSIGNAL, CloneArgs};
use um_uapi::abi::{Statx, StatxTimestamp};

/// `e_machine` of arm64 ELF files (`EM_AARCH64`).
pub const ELF_MACHINE: u16 = 183;
/// The `AT_PLATFORM` string.
pub const PLATFORM: &str = "aarch64";
/// `uname -m`.
pub const UTS_MACHINE: &str = "aarch64";
/// `AUDIT_ARCH_AARCH64`, as seccomp filters and `SIGSYS` `si_arch` report it.
pub const AUDIT_ARCH: u32 = 0xc000_00b7;
/// Minimum alternate signal stack size (`MINSIGSTKSZ`; the real need with SVE/SME is larger and
/// reported through `AT_MINSIGSTKSZ`).
pub const MINSIGSTKSZ: usize = 5120;
/// Recommended alternate signal stack size (`SIGSTKSZ`).
pub const SIGSTKSZ: usize = 16384;

/// Guest page sizes (`pagesize=`) this arch supports: 4 KiB and 16 KiB (`CONFIG_ARM64_4K_PAGES`,
/// `CONFIG_ARM64_16K_PAGES`). arm64 ELF files are linked with a 64 KiB `max-page-size`, so their
/// segments map at either size. (The 64 KiB granule is not offered, as in the C port.)
pub const PAGE_SIZES: &[u64] = &[4096, 16384];
/// Why a page size outside [`PAGE_SIZES`] is refused.
pub const PAGE_SIZE_REFUSAL: &str = "arm64 guests have 4K or 16K pages";

/// `O_DIRECTORY` on arm64.
pub const O_DIRECTORY: u32 = 0o40000;
/// `O_NOFOLLOW` on arm64.
pub const O_NOFOLLOW: u32 = 0o100000;

/// The old `struct loop_info` (`LOOP_SET_STATUS`/`LOOP_GET_STATUS`, include/uapi/linux/loop.h):
/// `__kernel_old_dev_t` is the asm-generic `unsigned int` here: 160 bytes.
pub type LoopInfo = um_uapi::abi::loopdev::LoopInfoNarrowDev;

/// `struct semid64_ds` (include/uapi/asm-generic/sembuf.h, 88 bytes).
pub type SemidDs = um_uapi::abi::ipc::SemidDsGeneric;
const_assert_eq!(core::mem::size_of::<SemidDs>(), 88);

/// `O_DIRECT` on arm64.
pub const O_DIRECT: u32 = 0o200000;
/// `O_LARGEFILE` on arm64.
pub const O_LARGEFILE: u32 = 0o400000;
/// `O_TMPFILE` = `__O_TMPFILE | O_DIRECTORY`.
pub const O_TMPFILE: u32 = 0o20000000 | O_DIRECTORY;
/// The arch-dependent open flags, for arch-neutral code.
pub const OPEN_FLAGS_ARCH: OpenFlagsArch = OpenFlagsArch {
    directory: O_DIRECTORY,
    nofollow: O_NOFOLLOW,
    direct: O_DIRECT,
    largefile: O_LARGEFILE,
};

/// `mmap`/`mprotect`: branch target identification page (arm64 only).
pub const PROT_BTI: u32 = 0x10;
/// `mmap`/`mprotect`: memory tagging enabled (arm64 only).
pub const PROT_MTE: u32 = 0x20;

/// The `clone` syscall's raw arguments as a `clone3`-style [`CloneArgs`]. arm64 selects
/// `CLONE_BACKWARDS`, so its order is `clone(flags, newsp, parent_tid, tls, child_tid)` — `tls`
/// and `child_tid` are swapped relative to x86_64. As in Linux's `kernel_clone_args` for
/// `clone`, `stack` is the new stack *pointer* and `stack_size` is 0.
pub fn clone_args(a: [u64; 5]) -> CloneArgs {
    let [flags, newsp, parent_tid, tls, child_tid] = a;
    CloneArgs {
        flags: flags & !CSIGNAL,
        exit_signal: flags & CSIGNAL,
        stack: newsp,
        parent_tid,
        child_tid,
        tls,
        ..Default::default()
    }
}

um_uapi::pod_struct! {
    /// The asm-generic `struct stat` that arm64 uses (`fstat`, `newfstatat`): 128 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Stat {
        /// Containing device (`new_encode_dev`).
        pub st_dev: u64,
        /// Inode number.
        pub st_ino: u64,
        /// Mode (before `st_nlink` here, unlike x86_64).
        pub st_mode: u32,
        /// Hard links (32-bit here).
        pub st_nlink: u32,
        /// Owner.
        pub st_uid: u32,
        /// Group.
        pub st_gid: u32,
        /// Device of a special file.
        pub st_rdev: u64,
        /// `__pad1`.
        pub pad1: u64,
        /// Size in bytes.
        pub st_size: i64,
        /// Preferred I/O size (32-bit here).
        pub st_blksize: i32,
        /// `__pad2`.
        pub pad2: i32,
        /// 512-byte blocks.
        pub st_blocks: i64,
        /// Access time, seconds.
        pub st_atime: i64,
        /// Access time, nanoseconds.
        pub st_atime_nsec: u64,
        /// Modification time, seconds.
        pub st_mtime: i64,
        /// Modification time, nanoseconds.
        pub st_mtime_nsec: u64,
        /// Status change time, seconds.
        pub st_ctime: i64,
        /// Status change time, nanoseconds.
        pub st_ctime_nsec: u64,
        /// `__unused4`, `__unused5`.
        pub unused: [u32; 2],
    }
}

const_assert_eq!(core::mem::size_of::<Stat>(), 128);
const_assert_eq!(core::mem::offset_of!(Stat, st_mode), 16);
const_assert_eq!(core::mem::offset_of!(Stat, st_nlink), 20);
const_assert_eq!(core::mem::offset_of!(Stat, st_uid), 24);
const_assert_eq!(core::mem::offset_of!(Stat, st_rdev), 32);
const_assert_eq!(core::mem::offset_of!(Stat, st_size), 48);
const_assert_eq!(core::mem::offset_of!(Stat, st_blksize), 56);
const_assert_eq!(core::mem::offset_of!(Stat, st_blocks), 64);
const_assert_eq!(core::mem::offset_of!(Stat, st_atime), 72);
const_assert_eq!(core::mem::offset_of!(Stat, st_mtime), 88);
const_assert_eq!(core::mem::offset_of!(Stat, st_ctime), 104);
const_assert_eq!(core::mem::offset_of!(Stat, unused), 120);

impl Stat {
    /// Builds a `struct stat` from the arch-neutral [`Statx`] a filesystem filled in (as Linux's
    /// `cp_new_stat` does from `struct kstat`); devices are encoded with `new_encode_dev`.
    pub fn from_statx(s: &Statx) -> Self {
        use um_uapi::abi::fcntl::new_encode_dev;
        let t = |t: &StatxTimestamp| (t.tv_sec, u64::from(t.tv_nsec));
        let (st_atime, st_atime_nsec) = t(&s.stx_atime);
        let (st_mtime, st_mtime_nsec) = t(&s.stx_mtime);
        let (st_ctime, st_ctime_nsec) = t(&s.stx_ctime);
        Stat {
            st_dev: new_encode_dev(s.stx_dev_major, s.stx_dev_minor),
            st_ino: s.stx_ino,
            st_mode: u32::from(s.stx_mode),
            st_nlink: s.stx_nlink,
            st_uid: s.stx_uid,
            st_gid: s.stx_gid,
            st_rdev: new_encode_dev(s.stx_rdev_major, s.stx_rdev_minor),
            pad1: 0,
            st_size: s.stx_size as i64,
            st_blksize: s.stx_blksize as i32,
            pad2: 0,
            st_blocks: s.stx_blocks as i64,
            st_atime,
            st_atime_nsec,
            st_mtime,
            st_mtime_nsec,
            st_ctime,
            st_ctime_nsec,
            unused: [0; 2],
        }
    }
}

um_uapi::pod_struct! {
    /// arm64 `struct epoll_event`: naturally aligned, 16 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct EpollEvent {
        /// `EPOLL*` bits.
        pub events: u32,
        /// Alignment padding.
        pub pad: u32,
        /// User data.
        pub data: u64,
    }
}

const_assert_eq!(core::mem::size_of::<EpollEvent>(), 16);
const_assert_eq!(core::mem::offset_of!(EpollEvent, data), 8);

#[cfg(test)]
mod tests {
    use super::*;
    use um_uapi::abi::Pod;

    #[test]
    fn stat_layout() {
        let x = Statx {
            stx_mode: 0o040755,
            stx_nlink: 3,
            stx_uid: 1000,
            stx_size: 4096,
            stx_blksize: 4096,
            stx_rdev_major: 136,
            stx_rdev_minor: 2,
            stx_ctime: StatxTimestamp {
                tv_sec: 7,
                tv_nsec: 9,
                reserved: 0,
            },
            ..Default::default()
        };
        let s = Stat::from_statx(&x);
        let b = s.as_bytes();
        assert_eq!(b.len(), 128);
        assert_eq!(&b[16..20], &0o040755u32.to_le_bytes());
        assert_eq!(b[20], 3);
        assert_eq!(&b[32..40], &0x8802u64.to_le_bytes());
        assert_eq!(&b[56..60], &4096i32.to_le_bytes());
        assert_eq!(b[104], 7);
        assert_eq!(b[112], 9);
        assert_eq!(Stat::from_bytes(&b), Some(s));
    }

    #[test]
    fn epoll_event_is_not_packed() {
        let e = EpollEvent {
            events: 1,
            pad: 0,
            data: 0x1122_3344_5566_7788,
        };
        let b = e.as_bytes();
        assert_eq!(
            b,
            vec![
                1, 0, 0, 0, 0, 0, 0, 0, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11
            ]
        );
        assert_eq!(EpollEvent::from_bytes(&b), Some(e));
    }

    #[test]
    fn flags_and_clone() {
        assert_eq!(OPEN_FLAGS_ARCH.tmpfile(), O_TMPFILE);
        assert_eq!(O_TMPFILE, 0o20040000);
        // clone(flags, newsp, parent_tid, tls, child_tid)
        let a = clone_args([0x3d0f00 | 17, 0x7000, 0x100, 0x300, 0x200]);
        assert_eq!((a.flags, a.exit_signal), (0x3d0f00, 17));
        assert_eq!(
            (a.stack, a.parent_tid, a.child_tid, a.tls),
            (0x7000, 0x100, 0x200, 0x300)
        );
    }

    #[test]
    fn match_host_libc() {
        // On an arm64 host, compare with the host's C definitions.
        #[cfg(target_arch = "aarch64")]
        {
            assert_eq!(
                core::mem::size_of::<libc::stat>(),
                core::mem::size_of::<Stat>()
            );
            assert_eq!(
                core::mem::size_of::<libc::epoll_event>(),
                core::mem::size_of::<EpollEvent>()
            );
            assert_eq!(libc::O_DIRECTORY as u32, O_DIRECTORY);
            assert_eq!(libc::O_NOFOLLOW as u32, O_NOFOLLOW);
            assert_eq!(libc::O_DIRECT as u32, O_DIRECT);
        }
    }
}
