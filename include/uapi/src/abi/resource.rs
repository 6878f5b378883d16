//! Resource limits and usage, `sysinfo` and `uname`, identical on x86_64 and arm64.
//!
//! Sources: `include/uapi/asm-generic/resource.h` (`RLIMIT_*`; x86_64 and arm64 use it
//! unchanged), `include/uapi/linux/resource.h` (`struct rlimit`, `struct rusage`, `RUSAGE_*`,
//! `PRIO_*`), `include/uapi/linux/sysinfo.h` (`struct sysinfo`), `include/uapi/linux/utsname.h`
//! (`struct new_utsname`, 6 x 65 bytes).

use static_assertions::const_assert_eq;

use super::time::Timeval;

/// CPU time in seconds.
pub const RLIMIT_CPU: u32 = 0;
/// Largest file size.
pub const RLIMIT_FSIZE: u32 = 1;
/// Data segment size.
pub const RLIMIT_DATA: u32 = 2;
/// Stack size.
pub const RLIMIT_STACK: u32 = 3;
/// Core file size.
pub const RLIMIT_CORE: u32 = 4;
/// Resident set size.
pub const RLIMIT_RSS: u32 = 5;
/// Number of processes.
pub const RLIMIT_NPROC: u32 = 6;
/// Number of open files.
pub const RLIMIT_NOFILE: u32 = 7;
/// Locked memory.
pub const RLIMIT_MEMLOCK: u32 = 8;
/// Address space size.
pub const RLIMIT_AS: u32 = 9;
/// File locks.
pub const RLIMIT_LOCKS: u32 = 10;
/// Pending signals.
pub const RLIMIT_SIGPENDING: u32 = 11;
/// POSIX message queue bytes.
pub const RLIMIT_MSGQUEUE: u32 = 12;
/// Nice ceiling.
pub const RLIMIT_NICE: u32 = 13;
/// Real-time priority ceiling.
pub const RLIMIT_RTPRIO: u32 = 14;
/// Real-time CPU time in microseconds.
pub const RLIMIT_RTTIME: u32 = 15;
/// Number of limits.
pub const RLIM_NLIMITS: usize = 16;
/// No limit.
pub const RLIM_INFINITY: u64 = u64::MAX;

/// `getrusage` who: the calling process.
pub const RUSAGE_SELF: i32 = 0;
/// Waited-for children.
pub const RUSAGE_CHILDREN: i32 = -1;
/// The calling thread.
pub const RUSAGE_THREAD: i32 = 1;
/// `getpriority` which: a process.
pub const PRIO_PROCESS: u32 = 0;
/// A process group.
pub const PRIO_PGRP: u32 = 1;
/// A user.
pub const PRIO_USER: u32 = 2;

crate::pod_struct! {
    /// `struct rlimit` / `struct rlimit64` (the same on 64-bit): 16 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Rlimit {
        /// `rlim_cur`: soft limit.
        pub cur: u64,
        /// `rlim_max`: hard limit.
        pub max: u64,
    }
}

crate::pod_struct! {
    /// `struct rusage`: 144 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Rusage {
        /// User CPU time.
        pub ru_utime: Timeval,
        /// System CPU time.
        pub ru_stime: Timeval,
        /// Maximum resident set size, KiB.
        pub ru_maxrss: i64,
        /// Integral shared memory size.
        pub ru_ixrss: i64,
        /// Integral unshared data size.
        pub ru_idrss: i64,
        /// Integral unshared stack size.
        pub ru_isrss: i64,
        /// Minor page faults.
        pub ru_minflt: i64,
        /// Major page faults.
        pub ru_majflt: i64,
        /// Swaps.
        pub ru_nswap: i64,
        /// Block input operations.
        pub ru_inblock: i64,
        /// Block output operations.
        pub ru_oublock: i64,
        /// IPC messages sent.
        pub ru_msgsnd: i64,
        /// IPC messages received.
        pub ru_msgrcv: i64,
        /// Signals received.
        pub ru_nsignals: i64,
        /// Voluntary context switches.
        pub ru_nvcsw: i64,
        /// Involuntary context switches.
        pub ru_nivcsw: i64,
    }
}

crate::pod_struct! {
    /// `struct sysinfo` (64-bit: `_f` is empty): 112 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Sysinfo {
        /// Seconds since boot.
        pub uptime: i64,
        /// 1, 5 and 15 minute load averages, scaled by `1 << SI_LOAD_SHIFT`.
        pub loads: [u64; 3],
        /// Total usable RAM, in `mem_unit`s.
        pub totalram: u64,
        /// Free RAM.
        pub freeram: u64,
        /// Shared memory.
        pub sharedram: u64,
        /// Buffer memory.
        pub bufferram: u64,
        /// Total swap.
        pub totalswap: u64,
        /// Free swap.
        pub freeswap: u64,
        /// Number of processes.
        pub procs: u16,
        /// `pad`.
        pub pad: u16,
        /// Alignment padding before `totalhigh`.
        pub pad1: u32,
        /// Total high memory.
        pub totalhigh: u64,
        /// Free high memory.
        pub freehigh: u64,
        /// Unit of the memory fields, in bytes.
        pub mem_unit: u32,
        /// Tail padding.
        pub pad2: u32,
    }
}

/// Fixed-point shift of `Sysinfo::loads`.
pub const SI_LOAD_SHIFT: u32 = 16;

/// Length of each `utsname` field, NUL included.
pub const UTS_LEN: usize = 65;

crate::pod_struct! {
    /// `struct new_utsname` (`uname`): six NUL-terminated 65-byte strings, 390 bytes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Utsname {
        /// "Linux".
        pub sysname: [u8; UTS_LEN],
        /// Host name.
        pub nodename: [u8; UTS_LEN],
        /// Kernel release.
        pub release: [u8; UTS_LEN],
        /// Kernel version string.
        pub version: [u8; UTS_LEN],
        /// Machine ("x86_64", "aarch64").
        pub machine: [u8; UTS_LEN],
        /// NIS domain name.
        pub domainname: [u8; UTS_LEN],
    }
}

impl Default for Utsname {
    fn default() -> Self {
        Utsname {
            sysname: [0; UTS_LEN],
            nodename: [0; UTS_LEN],
            release: [0; UTS_LEN],
            version: [0; UTS_LEN],
            machine: [0; UTS_LEN],
            domainname: [0; UTS_LEN],
        }
    }
}

impl Utsname {
    /// A `uts` field from a string, truncated to 64 bytes and NUL-padded.
    pub fn field(s: &str) -> [u8; UTS_LEN] {
        let mut f = [0u8; UTS_LEN];
        let n = s.len().min(UTS_LEN - 1);
        f[..n].copy_from_slice(&s.as_bytes()[..n]);
        f
    }

    /// The text of a field up to its first NUL (lossy on invalid UTF-8).
    pub fn text(f: &[u8; UTS_LEN]) -> String {
        let end = f.iter().position(|&c| c == 0).unwrap_or(UTS_LEN);
        String::from_utf8_lossy(&f[..end]).into_owned()
    }
}

const_assert_eq!(core::mem::size_of::<Rlimit>(), 16);
const_assert_eq!(core::mem::size_of::<Rusage>(), 144);
const_assert_eq!(core::mem::offset_of!(Rusage, ru_maxrss), 32);
const_assert_eq!(core::mem::offset_of!(Rusage, ru_nivcsw), 136);
const_assert_eq!(core::mem::size_of::<Sysinfo>(), 112);
const_assert_eq!(core::mem::offset_of!(Sysinfo, procs), 80);
const_assert_eq!(core::mem::offset_of!(Sysinfo, totalhigh), 88);
const_assert_eq!(core::mem::offset_of!(Sysinfo, mem_unit), 104);
const_assert_eq!(core::mem::size_of::<Utsname>(), 390);
const_assert_eq!(core::mem::offset_of!(Utsname, machine), 260);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::Pod;

    #[test]
    fn round_trips() {
        let u = Utsname {
            sysname: Utsname::field("Linux"),
            machine: Utsname::field("aarch64"),
            ..Default::default()
        };
        let b = u.as_bytes();
        assert_eq!(b.len(), 390);
        assert_eq!(&b[..6], b"Linux\0");
        assert_eq!(&b[260..268], b"aarch64\0");
        assert_eq!(
            Utsname::text(&Utsname::from_bytes(&b).unwrap().machine),
            "aarch64"
        );
        assert_eq!(Utsname::field(&"x".repeat(100))[64], 0);

        let s = Sysinfo {
            uptime: 5,
            procs: 3,
            mem_unit: 1,
            ..Default::default()
        };
        let sb = s.as_bytes();
        assert_eq!(sb.len(), 112);
        assert_eq!(sb[80], 3);
        assert_eq!(sb[104], 1);
        assert_eq!(Sysinfo::from_bytes(&sb), Some(s));

        let r = Rusage {
            ru_utime: Timeval {
                tv_sec: 1,
                tv_usec: 2,
            },
            ru_nivcsw: 9,
            ..Default::default()
        };
        let rb = r.as_bytes();
        assert_eq!(rb.len(), 144);
        assert_eq!(rb[136], 9);
        assert_eq!(Rusage::from_bytes(&rb), Some(r));
        assert_eq!(
            Rlimit {
                cur: 1,
                max: RLIM_INFINITY
            }
            .as_bytes()[8..],
            [0xff; 8]
        );
    }
}
