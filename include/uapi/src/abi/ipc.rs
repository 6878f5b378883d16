//! System V IPC: the `ipc64_perm` header, shared memory, semaphore and message queue structures
//! and constants (svipc(7)).
//!
//! Sources: `include/uapi/linux/ipc.h` (`IPC_*` keys, flags and commands),
//! `include/uapi/asm-generic/ipcbuf.h` (`struct ipc64_perm`), `include/uapi/linux/shm.h` and
//! `include/uapi/asm-generic/shmbuf.h` (`struct shmid64_ds`, `shminfo64`, `shm_info`),
//! `include/uapi/linux/sem.h` and `include/uapi/asm-generic/sembuf.h`,
//! `arch/x86/include/uapi/asm/sembuf.h` (`struct semid64_ds`: the one layout that differs
//! between the arches, so both are here and each arch crate names its own `SemidDs`),
//! `include/uapi/linux/msg.h` and `include/uapi/asm-generic/msgbuf.h` (`struct msqid64_ds`,
//! `msginfo`). x86_64 uses the generic `shmbuf.h` and `msgbuf.h` (its own headers include them
//! outside x32).
//!
//! `ipc64_perm.mode` is `__kernel_mode_t`: `unsigned short` on x86_64 followed by two bytes of
//! `__pad1`, `unsigned int` on arm64 with no pad. Every mode the kernel stores fits in 16 bits
//! (permissions plus `SHM_DEST`/`SHM_LOCKED`), so one layout serves both: `mode: u16` and a
//! zero `pad1: u16` give the same bytes as arm64's `u32`.

use static_assertions::const_assert_eq;

/// `IPC_PRIVATE`: always a new object.
pub const IPC_PRIVATE: i32 = 0;
/// `IPC_CREAT`: create if the key does not exist.
pub const IPC_CREAT: u32 = 0o1000;
/// `IPC_EXCL`: fail if the key exists.
pub const IPC_EXCL: u32 = 0o2000;
/// `IPC_NOWAIT`: return an error rather than wait.
pub const IPC_NOWAIT: u32 = 0o4000;
/// `IPC_RMID`: remove the object.
pub const IPC_RMID: i32 = 0;
/// `IPC_SET`: set `ipc_perm` options.
pub const IPC_SET: i32 = 1;
/// `IPC_STAT`: get `ipc_perm` options.
pub const IPC_STAT: i32 = 2;
/// `IPC_INFO`: the system-wide limits.
pub const IPC_INFO: i32 = 3;
/// `IPC_64`: the "new" layouts flag some ABIs or in `cmd`; unused by x86_64 and arm64, whose
/// kernels do not parse it (`CONFIG_ARCH_WANT_IPC_PARSE_VERSION` unset).
pub const IPC_64: i32 = 0x100;

/// `SHM_RDONLY`: attach read-only.
pub const SHM_RDONLY: u32 = 0o10000;
/// `SHM_RND`: round the attach address down to `SHMLBA`.
pub const SHM_RND: u32 = 0o20000;
/// `SHM_REMAP`: take over the range (no `EINVAL` for an existing mapping).
pub const SHM_REMAP: u32 = 0o40000;
/// `SHM_EXEC`: execute access.
pub const SHM_EXEC: u32 = 0o100000;
/// `SHM_HUGETLB` (shmget): back with huge pages.
pub const SHM_HUGETLB: u32 = 0o4000;
/// `SHM_NORESERVE` (shmget): no swap reserved.
pub const SHM_NORESERVE: u32 = 0o10000;
/// `SHM_LOCK`: lock the segment in memory.
pub const SHM_LOCK: i32 = 11;
/// `SHM_UNLOCK`.
pub const SHM_UNLOCK: i32 = 12;
/// `SHM_STAT`: `IPC_STAT` by index.
pub const SHM_STAT: i32 = 13;
/// `SHM_INFO`: usage figures (`struct shm_info`).
pub const SHM_INFO: i32 = 14;
/// `SHM_STAT_ANY`: `SHM_STAT` without the read permission check.
pub const SHM_STAT_ANY: i32 = 15;
/// Mode bit: removed while attached, destroyed at the last detach.
pub const SHM_DEST: u32 = 0o1000;
/// Mode bit: locked (`SHM_LOCK`).
pub const SHM_LOCKED: u32 = 0o2000;

/// `GETPID`: the pid of the last semop.
pub const GETPID: i32 = 11;
/// `GETVAL`.
pub const GETVAL: i32 = 12;
/// `GETALL`.
pub const GETALL: i32 = 13;
/// `GETNCNT`: waiters for an increase.
pub const GETNCNT: i32 = 14;
/// `GETZCNT`: waiters for zero.
pub const GETZCNT: i32 = 15;
/// `SETVAL`.
pub const SETVAL: i32 = 16;
/// `SETALL`.
pub const SETALL: i32 = 17;
/// `SEM_STAT`: `IPC_STAT` by index.
pub const SEM_STAT: i32 = 18;
/// `SEM_INFO`: usage figures in a `struct seminfo`.
pub const SEM_INFO: i32 = 19;
/// `SEM_STAT_ANY`.
pub const SEM_STAT_ANY: i32 = 20;
/// `SEM_UNDO` (`sem_flg`): undone when the process exits.
pub const SEM_UNDO: i16 = 0x1000;

/// `MSG_STAT`: `IPC_STAT` by index.
pub const MSG_STAT: i32 = 11;
/// `MSG_INFO`: usage figures in a `struct msginfo`.
pub const MSG_INFO: i32 = 12;
/// `MSG_STAT_ANY`.
pub const MSG_STAT_ANY: i32 = 13;
/// `MSG_NOERROR`: truncate long messages.
pub const MSG_NOERROR: u32 = 0o10000;
/// `MSG_EXCEPT`: receive the first message not of `msgtyp`.
pub const MSG_EXCEPT: u32 = 0o20000;
/// `MSG_COPY`: copy, by position (needs `CONFIG_CHECKPOINT_RESTORE`).
pub const MSG_COPY: u32 = 0o40000;

crate::pod_struct! {
    /// `struct ipc64_perm`: 48 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Ipc64Perm {
        pub key: i32,
        pub uid: u32,
        pub gid: u32,
        pub cuid: u32,
        pub cgid: u32,
        /// `__kernel_mode_t` (see the module docs).
        pub mode: u16,
        pub pad1: u16,
        pub seq: u16,
        pub pad2: u16,
        /// Alignment of `__unused1`.
        pub pad3: u32,
        pub unused1: u64,
        pub unused2: u64,
    }
}

crate::pod_struct! {
    /// `struct shmid64_ds` (64-bit): 112 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct ShmidDs {
        pub shm_perm: Ipc64Perm,
        pub shm_segsz: u64,
        pub shm_atime: i64,
        pub shm_dtime: i64,
        pub shm_ctime: i64,
        pub shm_cpid: i32,
        pub shm_lpid: i32,
        pub shm_nattch: u64,
        pub unused4: u64,
        pub unused5: u64,
    }
}

crate::pod_struct! {
    /// `struct shminfo64` (`IPC_INFO`): 72 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Shminfo64 {
        pub shmmax: u64,
        pub shmmin: u64,
        pub shmmni: u64,
        pub shmseg: u64,
        pub shmall: u64,
        pub unused: [u64; 4],
    }
}

crate::pod_struct! {
    /// `struct shm_info` (`SHM_INFO`): 48 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct ShmInfo {
        pub used_ids: i32,
        pub pad: u32,
        pub shm_tot: u64,
        pub shm_rss: u64,
        pub shm_swp: u64,
        pub swap_attempts: u64,
        pub swap_successes: u64,
    }
}

crate::pod_struct! {
    /// `struct semid64_ds` of asm-generic (arm64): 88 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SemidDsGeneric {
        pub sem_perm: Ipc64Perm,
        pub sem_otime: i64,
        pub sem_ctime: i64,
        pub sem_nsems: u64,
        pub unused3: u64,
        pub unused4: u64,
    }
}

crate::pod_struct! {
    /// `struct semid64_ds` of x86_64 (padding after each time): 104 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SemidDsX86 {
        pub sem_perm: Ipc64Perm,
        pub sem_otime: i64,
        pub unused1: u64,
        pub sem_ctime: i64,
        pub unused2: u64,
        pub sem_nsems: u64,
        pub unused3: u64,
        pub unused4: u64,
    }
}

/// What arch-neutral code needs of a `semid64_ds` layout.
pub trait SemidDs: crate::Pod + Default {
    /// Builds one from its meaningful fields.
    fn new(perm: Ipc64Perm, otime: i64, ctime: i64, nsems: u64) -> Self;
    /// The permissions (what `IPC_SET` reads).
    fn perm(&self) -> Ipc64Perm;
}

impl SemidDs for SemidDsGeneric {
    fn new(perm: Ipc64Perm, otime: i64, ctime: i64, nsems: u64) -> Self {
        SemidDsGeneric {
            sem_perm: perm,
            sem_otime: otime,
            sem_ctime: ctime,
            sem_nsems: nsems,
            ..Default::default()
        }
    }
    fn perm(&self) -> Ipc64Perm {
        self.sem_perm
    }
}

impl SemidDs for SemidDsX86 {
    fn new(perm: Ipc64Perm, otime: i64, ctime: i64, nsems: u64) -> Self {
        SemidDsX86 {
            sem_perm: perm,
            sem_otime: otime,
            sem_ctime: ctime,
            sem_nsems: nsems,
            ..Default::default()
        }
    }
    fn perm(&self) -> Ipc64Perm {
        self.sem_perm
    }
}

crate::pod_struct! {
    /// `struct sembuf`: 6 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Sembuf {
        pub sem_num: u16,
        pub sem_op: i16,
        pub sem_flg: i16,
    }
}

crate::pod_struct! {
    /// `struct seminfo` (`IPC_INFO`, `SEM_INFO`): 40 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Seminfo {
        pub semmap: i32,
        pub semmni: i32,
        pub semmns: i32,
        pub semmnu: i32,
        pub semmsl: i32,
        pub semopm: i32,
        pub semume: i32,
        pub semusz: i32,
        pub semvmx: i32,
        pub semaem: i32,
    }
}

crate::pod_struct! {
    /// `struct msqid64_ds` (64-bit): 120 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct MsqidDs {
        pub msg_perm: Ipc64Perm,
        pub msg_stime: i64,
        pub msg_rtime: i64,
        pub msg_ctime: i64,
        pub msg_cbytes: u64,
        pub msg_qnum: u64,
        pub msg_qbytes: u64,
        pub msg_lspid: i32,
        pub msg_lrpid: i32,
        pub unused4: u64,
        pub unused5: u64,
    }
}

crate::pod_struct! {
    /// `struct msginfo` (`IPC_INFO`, `MSG_INFO`): 32 bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Msginfo {
        pub msgpool: i32,
        pub msgmap: i32,
        pub msgmax: i32,
        pub msgmnb: i32,
        pub msgmni: i32,
        pub msgssz: i32,
        pub msgtql: i32,
        pub msgseg: u16,
        pub pad: u16,
    }
}

const_assert_eq!(core::mem::size_of::<Ipc64Perm>(), 48);
const_assert_eq!(core::mem::offset_of!(Ipc64Perm, mode), 20);
const_assert_eq!(core::mem::offset_of!(Ipc64Perm, seq), 24);
const_assert_eq!(core::mem::offset_of!(Ipc64Perm, unused1), 32);
const_assert_eq!(core::mem::size_of::<ShmidDs>(), 112);
const_assert_eq!(core::mem::offset_of!(ShmidDs, shm_segsz), 48);
const_assert_eq!(core::mem::offset_of!(ShmidDs, shm_cpid), 80);
const_assert_eq!(core::mem::offset_of!(ShmidDs, shm_nattch), 88);
const_assert_eq!(core::mem::size_of::<Shminfo64>(), 72);
const_assert_eq!(core::mem::size_of::<ShmInfo>(), 48);
const_assert_eq!(core::mem::offset_of!(ShmInfo, shm_tot), 8);
const_assert_eq!(core::mem::size_of::<SemidDsGeneric>(), 88);
const_assert_eq!(core::mem::offset_of!(SemidDsGeneric, sem_ctime), 56);
const_assert_eq!(core::mem::offset_of!(SemidDsGeneric, sem_nsems), 64);
const_assert_eq!(core::mem::size_of::<SemidDsX86>(), 104);
const_assert_eq!(core::mem::offset_of!(SemidDsX86, sem_ctime), 64);
const_assert_eq!(core::mem::offset_of!(SemidDsX86, sem_nsems), 80);
const_assert_eq!(core::mem::size_of::<Sembuf>(), 6);
const_assert_eq!(core::mem::size_of::<Seminfo>(), 40);
const_assert_eq!(core::mem::size_of::<MsqidDs>(), 120);
const_assert_eq!(core::mem::offset_of!(MsqidDs, msg_cbytes), 72);
const_assert_eq!(core::mem::offset_of!(MsqidDs, msg_lspid), 96);
const_assert_eq!(core::mem::size_of::<Msginfo>(), 32);
const_assert_eq!(core::mem::offset_of!(Msginfo, msgseg), 28);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Pod;

    /// On arm64 `mode` is a 32-bit field at 20: the u16 plus the zero pad read back as it.
    #[test]
    fn mode_bytes_match_both_arches() {
        let p = Ipc64Perm {
            mode: 0o1666,
            seq: 3,
            ..Default::default()
        };
        let b = p.as_bytes();
        assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), 0o1666);
        assert_eq!(u16::from_le_bytes(b[24..26].try_into().unwrap()), 3);
    }

    #[test]
    fn semid_layouts() {
        let p = Ipc64Perm::default();
        let g = SemidDsGeneric::new(p, 1, 2, 3).as_bytes();
        assert_eq!(g.len(), 88);
        assert_eq!(g[56], 2);
        assert_eq!(g[64], 3);
        let x = SemidDsX86::new(p, 1, 2, 3).as_bytes();
        assert_eq!(x.len(), 104);
        assert_eq!(x[48], 1);
        assert_eq!(x[64], 2);
        assert_eq!(x[80], 3);
    }

    #[test]
    fn sembuf_bytes() {
        let s = Sembuf::from_bytes(&[1, 0, 0xff, 0xff, 0x00, 0x18]).unwrap();
        assert_eq!((s.sem_num, s.sem_op, s.sem_flg), (1, -1, 0x1800));
    }
}
