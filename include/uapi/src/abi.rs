//! Constants and structures of the Linux user ABI that are the same on x86_64 and arm64.
//!
//! Arch-specific layouts (`struct stat`, `struct epoll_event`, the open flags whose values differ:
//! `O_DIRECTORY`, `O_NOFOLLOW`, `O_DIRECT`, `O_LARGEFILE`) live in the arch crates
//! (`um-arch-x86::abi`, `um-arch-arm64::abi`), which build on the types here.
//!
//! Facts come from the Linux UAPI headers (kernel tree paths; the host copies are under
//! `/usr/include`): `include/uapi/asm-generic/{fcntl,signal,signal-defs,siginfo,termbits,
//! termbits-common,ioctls,ioctl,poll,mman-common,resource}.h`, `include/uapi/linux/{stat,fcntl,
//! auxvec,sched,wait,futex,time,time_types,resource,sysinfo,utsname,eventpoll,uio,mman}.h`,
//! `include/uapi/asm-generic/statfs.h`, `include/linux/dirent.h` and `fs/readdir.c`
//! (`linux_dirent64`), `include/uapi/linux/{in,in6,tcp}.h` (internet sockets),
//! `include/uapi/linux/loop.h` (loop devices), `include/uapi/linux/fs.h` (inode flags), `include/uapi/linux/{ipc,shm,sem,msg}.h` (SysV IPC), `include/uapi/linux/capability.h`
//! (capability numbers), `include/uapi/linux/{seccomp,filter}.h` (seccomp, classic BPF),
//! `include/uapi/linux/xattr.h` (extended attributes), `include/uapi/linux/{kcmp,ioprio,mqueue,aio_abi}.h`
//! (the probed-for calls, [`probe`]), `include/uapi/linux/bpf.h` ([`bpf`]). Each submodule
//! names its own sources.
//!
//! Every structure implements [`Pod`] (safe little-endian byte conversion) and has its size and
//! key field offsets pinned with `static_assertions`.

pub mod auxv;
pub mod blkdev;
pub mod bpf;
pub mod capability;
pub mod fcntl;
pub mod fs;
pub mod futex;
pub mod inet;
pub mod ipc;
pub mod loopdev;
pub mod mman;
pub mod mount;
pub mod netdevice;
pub mod netlink;
pub mod nsfs;
pub mod overlay;
pub mod packet;
pub mod pod;
pub mod poll;
pub mod probe;
pub mod ptrace;
pub mod resource;
pub mod sched;
pub mod seccomp;
pub mod signal;
pub mod time;
pub mod tty;
pub mod uio;
pub mod userfaultfd;
pub mod xattr;

pub use fcntl::{
    AtFlags, Flock, LinuxDirent64, OpenFlags, OpenFlagsArch, Statfs, Statx, StatxTimestamp,
};
pub use futex::RobustListHead;
pub use inet::{
    GroupReq, In6Pktinfo, InPktinfo, IpMreqn, Ipv6Mreq, Linger, SockaddrIn, SockaddrIn6,
};
pub use pod::Pod;
pub use poll::Pollfd;
pub use resource::{Rlimit, Rusage, Sysinfo, Utsname};
pub use sched::{CloneArgs, CloneFlags, WaitOptions};
pub use signal::{KernelSigaction, Siginfo, SigsetT, Stack};
pub use time::{Itimerspec, Itimerval, Timespec, Timeval, Timezone, Tms};
pub use tty::{Termios, Termios2, Winsize};
pub use uio::Iovec;

#[cfg(test)]
mod tests {
    use super::*;

    fn check<T: Pod + Default + PartialEq + core::fmt::Debug>() {
        let b = T::default().as_bytes();
        assert_eq!(
            b.len(),
            core::mem::size_of::<T>(),
            "{}",
            core::any::type_name::<T>()
        );
        assert_eq!(T::SIZE, core::mem::size_of::<T>());
        assert!(
            b.iter().all(|&x| x == 0),
            "{} default is not all zero",
            core::any::type_name::<T>()
        );
        // A non-trivial pattern survives a round trip through bytes.
        let pattern: Vec<u8> = (0..T::SIZE).map(|i| (i * 7 + 1) as u8).collect();
        let v = T::from_bytes(&pattern).unwrap();
        assert_eq!(v.as_bytes(), pattern, "{}", core::any::type_name::<T>());
        assert!(T::from_bytes(&pattern[1..]).is_none());
    }

    #[test]
    fn every_struct_is_pod_with_c_size() {
        check::<Timespec>();
        check::<Timeval>();
        check::<Timezone>();
        check::<Itimerval>();
        check::<Itimerspec>();
        check::<Tms>();
        check::<Utsname>();
        check::<Iovec>();
        check::<Rlimit>();
        check::<Rusage>();
        check::<Sysinfo>();
        check::<Winsize>();
        check::<Termios>();
        check::<Termios2>();
        check::<Statx>();
        check::<StatxTimestamp>();
        check::<Statfs>();
        check::<Flock>();
        check::<LinuxDirent64>();
        check::<Pollfd>();
        check::<RobustListHead>();
        check::<Siginfo>();
        check::<Stack>();
        check::<KernelSigaction>();
        check::<CloneArgs>();
        check::<SockaddrIn>();
        check::<SockaddrIn6>();
        check::<Linger>();
        check::<IpMreqn>();
        check::<GroupReq>();
        check::<Ipv6Mreq>();
        check::<InPktinfo>();
        check::<In6Pktinfo>();
        check::<seccomp::SockFilter>();
        check::<seccomp::SockFprog>();
        check::<seccomp::SeccompData>();
        check::<seccomp::SeccompNotifSizes>();
        check::<probe::KcmpEpollSlot>();
        check::<probe::MqAttr>();
        check::<probe::Iocb>();
        check::<probe::IoEvent>();
    }
}
