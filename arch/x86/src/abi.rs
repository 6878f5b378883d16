//! The parts of the Linux user ABI that are specific to x86_64 (the common ones are in
//! `um_uapi::abi`).
//!
//! Sources: `arch/x86/include/uapi/asm/stat.h` (`struct stat`, 144 bytes, the `__x86_64__`
//! branch), `include/uapi/asm-generic/fcntl.h` (x86_64 uses the generic `O_DIRECTORY`,
//! `O_NOFOLLOW`, `O_DIRECT`, `O_LARGEFILE`), `include/uapi/linux/eventpoll.h` (`struct
//! epoll_event` is `__attribute__((packed))` on x86_64, 12 bytes), `arch/x86/include/uapi/asm/
//! signal.h` (`MINSIGSTKSZ`, `SIGSTKSZ`), `arch/x86/include/uapi/asm/prctl.h` (`ARCH_*`),
//! `arch/x86/include/uapi/asm/mman.h` (`MAP_32BIT`), `include/uapi/linux/elf-em.h` (`EM_X86_64`),
//! `include/uapi/linux/audit.h` (`AUDIT_ARCH_X86_64`), `arch/x86/Kconfig` (x86_64 `clone` is not
//! `CLONE_BACKWARDS*`: `clone(flags, newsp, parent_tid, child_tid, tls)`).

use static_assertions::const_assert_eq;
use um_uapi::abi::fcntl::OpenFlagsArch;
use um_uapi::abi::sched::{CSIGNAL, CloneArgs};
use um_uapi::abi::{Statx, StatxTimestamp};

/// `e_machine` of x86_64 ELF files (`EM_X86_64`).
pub const ELF_MACHINE: u16 = 62;
/// The `AT_PLATFORM` string.
pub const PLATFORM: &str = "x86_64";
/// `uname -m`.
pub const UTS_MACHINE: &str = "x86_64";
/// `AUDIT_ARCH_X86_64`, as seccomp filters and `SIGSYS` `si_arch` report it.
pub const AUDIT_ARCH: u32 = 0xc000_003e;
/// Minimum alternate signal stack size (`MINSIGSTKSZ`).
pub const MINSIGSTKSZ: usize = 2048;
/// Recommended alternate signal stack size (`SIGSTKSZ`).
pub const SIGSTKSZ: usize = 8192;

/// Guest page sizes (`pagesize=`) this arch supports. x86_64 has only 4 KiB pages: its ELF files
/// (Alpine's static-PIE and dynamic binaries included) are linked with a 4 KiB
/// `max-page-size`, so their segments are not congruent modulo 16 KiB and neither the ELF loader
/// nor `ld.so` (which maps libraries itself) could place them on 16 KiB pages; musl's
/// `sysconf(_SC_PAGESIZE)` is the constant 4096 there, too.
pub const PAGE_SIZES: &[u64] = &[4096];
/// Why a page size outside [`PAGE_SIZES`] is refused.
pub const PAGE_SIZE_REFUSAL: &str = "x86_64 guests have 4K pages only (their ELF files are \
    linked for 4K pages: segments are not 16K-congruent)";

/// The old `struct loop_info` (`LOOP_SET_STATUS`/`LOOP_GET_STATUS`, include/uapi/linux/loop.h):
/// `__kernel_old_dev_t` is `unsigned long` here (arch/x86/include/uapi/asm/posix_types_64.h):
/// 168 bytes.
pub type LoopInfo = um_uapi::abi::loopdev::LoopInfoWideDev;

/// `struct semid64_ds` (arch/x86/include/uapi/asm/sembuf.h: an `__unused` word after each
/// time, 104 bytes).
pub type SemidDs = um_uapi::abi::ipc::SemidDsX86;
const_assert_eq!(core::mem::size_of::<SemidDs>(), 104);

/// `O_DIRECT` on x86_64.
pub const O_DIRECT: u32 = 0o40000;
/// `O_LARGEFILE` on x86_64.
pub const O_LARGEFILE: u32 = 0o100000;
/// `O_DIRECTORY` on x86_64.
pub const O_DIRECTORY: u32 = 0o200000;
/// `O_NOFOLLOW` on x86_64.
pub const O_NOFOLLOW: u32 = 0o400000;
/// `O_TMPFILE` = `__O_TMPFILE | O_DIRECTORY`.
pub const O_TMPFILE: u32 = 0o20000000 | O_DIRECTORY;
/// The arch-dependent open flags, for arch-neutral code.
pub const OPEN_FLAGS_ARCH: OpenFlagsArch = OpenFlagsArch {
    directory: O_DIRECTORY,
    nofollow: O_NOFOLLOW,
    direct: O_DIRECT,
    largefile: O_LARGEFILE,
};

/// `mmap`: map in the low 2 GiB (x86_64 only).
pub const MAP_32BIT: u32 = 0x40;

/// `arch_prctl` codes: set the GS base.
pub const ARCH_SET_GS: u32 = 0x1001;
/// Set the FS base (TLS).
pub const ARCH_SET_FS: u32 = 0x1002;
/// Get the FS base.
pub const ARCH_GET_FS: u32 = 0x1003;
/// Get the GS base.
pub const ARCH_GET_GS: u32 = 0x1004;
/// Get the CPUID-faulting state.
pub const ARCH_GET_CPUID: u32 = 0x1011;
/// Set CPUID faulting.
pub const ARCH_SET_CPUID: u32 = 0x1012;

/// The `clone` syscall's raw arguments as a `clone3`-style [`CloneArgs`]. x86_64's order is
/// `clone(flags, newsp, parent_tid, child_tid, tls)`. As in Linux's `kernel_clone_args` for
/// `clone`, `stack` is the new stack *pointer* and `stack_size` is 0.
pub fn clone_args(a: [u64; 5]) -> CloneArgs {
    let [flags, newsp, parent_tid, child_tid, tls] = a;
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
    /// x86_64 `struct stat` (`stat`, `fstat`, `lstat`, `newfstatat`): 144 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Stat {
        /// Containing device (`new_encode_dev`).
        pub st_dev: u64,
        /// Inode number.
        pub st_ino: u64,
        /// Hard links (64-bit on x86_64, and before `st_mode`).
        pub st_nlink: u64,
        /// Mode.
        pub st_mode: u32,
        /// Owner.
        pub st_uid: u32,
        /// Group.
        pub st_gid: u32,
        /// `__pad0`.
        pub pad0: i32,
        /// Device of a special file.
        pub st_rdev: u64,
        /// Size in bytes.
        pub st_size: i64,
        /// Preferred I/O size.
        pub st_blksize: i64,
        /// 512-byte blocks.
        pub st_blocks: i64,
        /// Access time, seconds.
        pub st_atime: i64,
        /// Access time, nanoseconds.
        pub st_atime_nsec: i64,
        /// Modification time, seconds.
        pub st_mtime: i64,
        /// Modification time, nanoseconds.
        pub st_mtime_nsec: i64,
        /// Status change time, seconds.
        pub st_ctime: i64,
        /// Status change time, nanoseconds.
        pub st_ctime_nsec: i64,
        /// `__unused`.
        pub unused: [i64; 3],
    }
}

const_assert_eq!(core::mem::size_of::<Stat>(), 144);
const_assert_eq!(core::mem::offset_of!(Stat, st_nlink), 16);
const_assert_eq!(core::mem::offset_of!(Stat, st_mode), 24);
const_assert_eq!(core::mem::offset_of!(Stat, st_uid), 28);
const_assert_eq!(core::mem::offset_of!(Stat, st_rdev), 40);
const_assert_eq!(core::mem::offset_of!(Stat, st_size), 48);
const_assert_eq!(core::mem::offset_of!(Stat, st_blksize), 56);
const_assert_eq!(core::mem::offset_of!(Stat, st_blocks), 64);
const_assert_eq!(core::mem::offset_of!(Stat, st_atime), 72);
const_assert_eq!(core::mem::offset_of!(Stat, st_mtime), 88);
const_assert_eq!(core::mem::offset_of!(Stat, st_ctime), 104);

impl Stat {
    /// Builds a `struct stat` from the arch-neutral [`Statx`] a filesystem filled in (as Linux's
    /// `cp_new_stat` does from `struct kstat`); devices are encoded with `new_encode_dev`.
    pub fn from_statx(s: &Statx) -> Self {
        use um_uapi::abi::fcntl::new_encode_dev;
        let t = |t: &StatxTimestamp| (t.tv_sec, i64::from(t.tv_nsec));
        let (st_atime, st_atime_nsec) = t(&s.stx_atime);
        let (st_mtime, st_mtime_nsec) = t(&s.stx_mtime);
        let (st_ctime, st_ctime_nsec) = t(&s.stx_ctime);
        Stat {
            st_dev: new_encode_dev(s.stx_dev_major, s.stx_dev_minor),
            st_ino: s.stx_ino,
            st_nlink: u64::from(s.stx_nlink),
            st_mode: u32::from(s.stx_mode),
            st_uid: s.stx_uid,
            st_gid: s.stx_gid,
            pad0: 0,
            st_rdev: new_encode_dev(s.stx_rdev_major, s.stx_rdev_minor),
            st_size: s.stx_size as i64,
            st_blksize: i64::from(s.stx_blksize),
            st_blocks: s.stx_blocks as i64,
            st_atime,
            st_atime_nsec,
            st_mtime,
            st_mtime_nsec,
            st_ctime,
            st_ctime_nsec,
            unused: [0; 3],
        }
    }
}

um_uapi::pod_struct! {
    /// x86_64 `struct epoll_event`: packed, 12 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[repr(packed)]
    pub struct EpollEvent {
        /// `EPOLL*` bits.
        pub events: u32,
        /// User data.
        pub data: u64,
    }
}

const_assert_eq!(core::mem::size_of::<EpollEvent>(), 12);
const_assert_eq!(core::mem::offset_of!(EpollEvent, data), 4);

#[cfg(test)]
mod tests {
    use super::*;
    use um_uapi::abi::Pod;

    #[test]
    fn stat_layout() {
        let x = Statx {
            stx_mode: 0o100644,
            stx_nlink: 2,
            stx_uid: 1000,
            stx_size: 4096,
            stx_blksize: 4096,
            stx_dev_major: 8,
            stx_dev_minor: 1,
            stx_mtime: StatxTimestamp {
                tv_sec: 7,
                tv_nsec: 9,
                reserved: 0,
            },
            ..Default::default()
        };
        let s = Stat::from_statx(&x);
        let b = s.as_bytes();
        assert_eq!(b.len(), 144);
        assert_eq!(&b[0..8], &0x801u64.to_le_bytes());
        assert_eq!(b[16], 2);
        assert_eq!(&b[24..28], &0o100644u32.to_le_bytes());
        assert_eq!(&b[28..32], &1000u32.to_le_bytes());
        assert_eq!(&b[48..56], &4096i64.to_le_bytes());
        assert_eq!(b[88], 7);
        assert_eq!(b[96], 9);
        assert_eq!(Stat::from_bytes(&b), Some(s));
    }

    #[test]
    fn epoll_event_is_packed() {
        let e = EpollEvent {
            events: 1,
            data: 0x1122_3344_5566_7788,
        };
        let b = e.as_bytes();
        assert_eq!(
            b,
            vec![1, 0, 0, 0, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]
        );
        assert_eq!(EpollEvent::from_bytes(&b), Some(e));
    }

    #[test]
    fn flags_and_clone() {
        assert_eq!(OPEN_FLAGS_ARCH.tmpfile(), O_TMPFILE);
        assert_eq!(O_TMPFILE, 0o20200000);
        assert_eq!(
            OPEN_FLAGS_ARCH.known_bits() & 0o777777777,
            OPEN_FLAGS_ARCH.known_bits()
        );
        let a = clone_args([0x3d0f00 | 17, 0x7000, 0x100, 0x200, 0x300]);
        assert_eq!((a.flags, a.exit_signal), (0x3d0f00, 17));
        assert_eq!(
            (a.stack, a.parent_tid, a.child_tid, a.tls),
            (0x7000, 0x100, 0x200, 0x300)
        );
    }

    #[test]
    fn match_host_libc() {
        // This crate's tests also run on x86_64 hosts: compare with the host's C definitions.
        #[cfg(target_arch = "x86_64")]
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
            assert_eq!(libc::MINSIGSTKSZ, MINSIGSTKSZ);
        }
    }
}
