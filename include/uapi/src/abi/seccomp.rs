//! seccomp(2) and classic BPF: modes, operations, filter flags, return actions,
//! `struct seccomp_data`, `struct seccomp_notif_sizes` (`include/uapi/linux/seccomp.h`), and
//! the classic BPF instruction format and opcodes (`include/uapi/linux/filter.h`,
//! `include/uapi/linux/bpf_common.h`). The `AUDIT_ARCH_*` values a filter compares
//! `seccomp_data.arch` against are the ones of [`super::ptrace`] (`include/uapi/linux/audit.h`).

use static_assertions::const_assert_eq;

pub use super::ptrace::{AUDIT_ARCH_AARCH64, AUDIT_ARCH_X86_64};

/// `task->seccomp.mode` (PR_GET_SECCOMP, `/proc/PID/status` `Seccomp:`).
pub const SECCOMP_MODE_DISABLED: u32 = 0;
pub const SECCOMP_MODE_STRICT: u32 = 1;
pub const SECCOMP_MODE_FILTER: u32 = 2;

/// seccomp(2) operations.
pub const SECCOMP_SET_MODE_STRICT: u32 = 0;
pub const SECCOMP_SET_MODE_FILTER: u32 = 1;
pub const SECCOMP_GET_ACTION_AVAIL: u32 = 2;
pub const SECCOMP_GET_NOTIF_SIZES: u32 = 3;

/// SECCOMP_SET_MODE_FILTER flags.
pub const SECCOMP_FILTER_FLAG_TSYNC: u32 = 1 << 0;
pub const SECCOMP_FILTER_FLAG_LOG: u32 = 1 << 1;
pub const SECCOMP_FILTER_FLAG_SPEC_ALLOW: u32 = 1 << 2;
pub const SECCOMP_FILTER_FLAG_NEW_LISTENER: u32 = 1 << 3;
pub const SECCOMP_FILTER_FLAG_TSYNC_ESRCH: u32 = 1 << 4;
pub const SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV: u32 = 1 << 5;
/// Every flag Linux knows (kernel/seccomp.c `SECCOMP_FILTER_FLAG_MASK`).
pub const SECCOMP_FILTER_FLAG_MASK: u32 = SECCOMP_FILTER_FLAG_TSYNC
    | SECCOMP_FILTER_FLAG_LOG
    | SECCOMP_FILTER_FLAG_SPEC_ALLOW
    | SECCOMP_FILTER_FLAG_NEW_LISTENER
    | SECCOMP_FILTER_FLAG_TSYNC_ESRCH
    | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;

/// Filter return actions, most restrictive first (compared as signed 32-bit values of
/// `ret & SECCOMP_RET_ACTION_FULL`).
pub const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
pub const SECCOMP_RET_KILL_THREAD: u32 = 0x0000_0000;
/// The old name of KILL_THREAD.
pub const SECCOMP_RET_KILL: u32 = SECCOMP_RET_KILL_THREAD;
pub const SECCOMP_RET_TRAP: u32 = 0x0003_0000;
pub const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
pub const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;
pub const SECCOMP_RET_TRACE: u32 = 0x7ff0_0000;
pub const SECCOMP_RET_LOG: u32 = 0x7ffc_0000;
pub const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
/// Masks of the action and data parts of a return value.
pub const SECCOMP_RET_ACTION_FULL: u32 = 0xffff_0000;
pub const SECCOMP_RET_ACTION: u32 = 0x7fff_0000;
pub const SECCOMP_RET_DATA: u32 = 0x0000_ffff;

/// The largest errno a filter's SECCOMP_RET_ERRNO may return (include/linux/err.h).
pub const MAX_ERRNO: u32 = 4095;

/// Most instructions one filter may have (`BPF_MAXINSNS`, include/uapi/linux/bpf_common.h).
pub const BPF_MAXINSNS: usize = 4096;
/// Scratch memory words (`BPF_MEMWORDS`).
pub const BPF_MEMWORDS: u32 = 16;
/// Most instructions of all filters on one path, each older filter counting 4 more
/// (kernel/seccomp.c `MAX_INSNS_PER_PATH`: 256 KiB of `struct sock_filter`).
pub const MAX_INSNS_PER_PATH: usize = (1 << 18) / 8;

/// Classic BPF opcode fields (include/uapi/linux/bpf_common.h, filter.h).
pub mod bpf {
    /// Instruction classes.
    pub const LD: u16 = 0x00;
    pub const LDX: u16 = 0x01;
    pub const ST: u16 = 0x02;
    pub const STX: u16 = 0x03;
    pub const ALU: u16 = 0x04;
    pub const JMP: u16 = 0x05;
    pub const RET: u16 = 0x06;
    pub const MISC: u16 = 0x07;
    /// Load sizes.
    pub const W: u16 = 0x00;
    pub const H: u16 = 0x08;
    pub const B: u16 = 0x10;
    /// Load modes.
    pub const IMM: u16 = 0x00;
    pub const ABS: u16 = 0x20;
    pub const IND: u16 = 0x40;
    pub const MEM: u16 = 0x60;
    pub const LEN: u16 = 0x80;
    pub const MSH: u16 = 0xa0;
    /// ALU operations.
    pub const ADD: u16 = 0x00;
    pub const SUB: u16 = 0x10;
    pub const MUL: u16 = 0x20;
    pub const DIV: u16 = 0x30;
    pub const OR: u16 = 0x40;
    pub const AND: u16 = 0x50;
    pub const LSH: u16 = 0x60;
    pub const RSH: u16 = 0x70;
    pub const NEG: u16 = 0x80;
    pub const MOD: u16 = 0x90;
    pub const XOR: u16 = 0xa0;
    /// Jump operations.
    pub const JA: u16 = 0x00;
    pub const JEQ: u16 = 0x10;
    pub const JGT: u16 = 0x20;
    pub const JGE: u16 = 0x30;
    pub const JSET: u16 = 0x40;
    /// Operand source: the constant `k` or register X.
    pub const K: u16 = 0x00;
    pub const X: u16 = 0x08;
    /// RET operand: register A.
    pub const A: u16 = 0x10;
    /// MISC operations.
    pub const TAX: u16 = 0x00;
    pub const TXA: u16 = 0x80;
}

crate::pod_struct! {
    /// `struct sock_filter`: one classic BPF instruction.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SockFilter {
        pub code: u16,
        pub jt: u8,
        pub jf: u8,
        pub k: u32,
    }
}

const_assert_eq!(core::mem::size_of::<SockFilter>(), 8);
const_assert_eq!(core::mem::offset_of!(SockFilter, k), 4);

crate::pod_struct! {
    /// `struct sock_fprog`: a program's length and the guest address of its instructions.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SockFprog {
        pub len: u16,
        pub pad0: u16,
        pub pad1: u32,
        pub filter: u64,
    }
}

const_assert_eq!(core::mem::size_of::<SockFprog>(), 16);
const_assert_eq!(core::mem::offset_of!(SockFprog, filter), 8);

crate::pod_struct! {
    /// `struct seccomp_data`: what a filter reads (32-bit words at 4-byte aligned offsets).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SeccompData {
        pub nr: i32,
        pub arch: u32,
        pub instruction_pointer: u64,
        pub args: [u64; 6],
    }
}

const_assert_eq!(core::mem::size_of::<SeccompData>(), 64);
const_assert_eq!(core::mem::offset_of!(SeccompData, arch), 4);
const_assert_eq!(core::mem::offset_of!(SeccompData, instruction_pointer), 8);
const_assert_eq!(core::mem::offset_of!(SeccompData, args), 16);

crate::pod_struct! {
    /// `struct seccomp_notif_sizes` (SECCOMP_GET_NOTIF_SIZES).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SeccompNotifSizes {
        pub seccomp_notif: u16,
        pub seccomp_notif_resp: u16,
        pub seccomp_data: u16,
    }
}

const_assert_eq!(core::mem::size_of::<SeccompNotifSizes>(), 6);

/// `sizeof(struct seccomp_notif)` (id, pid, flags, data) and `sizeof(struct
/// seccomp_notif_resp)` (id, val, error, flags).
pub const SECCOMP_NOTIF_SIZE: u16 = 80;
pub const SECCOMP_NOTIF_RESP_SIZE: u16 = 24;

crate::pod_struct! {
    /// `struct seccomp_notif` (SECCOMP_IOCTL_NOTIF_RECV): one notification as the listener
    /// receives it; `pid` in the receiver's pid namespace.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SeccompNotif {
        pub id: u64,
        pub pid: u32,
        pub flags: u32,
        pub data: SeccompData,
    }
}

const_assert_eq!(
    core::mem::size_of::<SeccompNotif>(),
    SECCOMP_NOTIF_SIZE as usize
);
const_assert_eq!(core::mem::offset_of!(SeccompNotif, data), 16);

crate::pod_struct! {
    /// `struct seccomp_notif_resp` (SECCOMP_IOCTL_NOTIF_SEND): the listener's answer.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SeccompNotifResp {
        pub id: u64,
        pub val: i64,
        pub error: i32,
        pub flags: u32,
    }
}

const_assert_eq!(
    core::mem::size_of::<SeccompNotifResp>(),
    SECCOMP_NOTIF_RESP_SIZE as usize
);
const_assert_eq!(core::mem::offset_of!(SeccompNotifResp, error), 16);

crate::pod_struct! {
    /// `struct seccomp_notif_addfd` (SECCOMP_IOCTL_NOTIF_ADDFD, `SECCOMP_NOTIFY_ADDFD_SIZE_VER0`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SeccompNotifAddfd {
        pub id: u64,
        pub flags: u32,
        pub srcfd: u32,
        pub newfd: u32,
        pub newfd_flags: u32,
    }
}

const_assert_eq!(core::mem::size_of::<SeccompNotifAddfd>(), 24);

/// `SECCOMP_NOTIFY_ADDFD_SIZE_VER0`: the smallest `struct seccomp_notif_addfd` NOTIF_ADDFD
/// takes (include/linux/seccomp.h); a larger one must be zero past it.
pub const SECCOMP_NOTIFY_ADDFD_SIZE_VER0: usize = 24;
/// `seccomp_notif_addfd.flags`: install at `newfd` (replacing what is there), as dup2 does.
pub const SECCOMP_ADDFD_FLAG_SETFD: u32 = 1 << 0;
/// `seccomp_notif_addfd.flags`: and answer the notification with the new descriptor, in one
/// step.
pub const SECCOMP_ADDFD_FLAG_SEND: u32 = 1 << 1;

/// `seccomp_notif_resp.flags`: run the syscall as it is instead of answering it.
pub const SECCOMP_USER_NOTIF_FLAG_CONTINUE: u32 = 1 << 0;
/// SECCOMP_IOCTL_NOTIF_SET_FLAGS: wake the notified task on the listener's CPU.
pub const SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP: u64 = 1 << 0;

/// `SECCOMP_IOC_MAGIC` and the listener's ioctls (the generic `_IOC` encoding, the same on
/// x86_64 and arm64).
pub const SECCOMP_IOC_MAGIC: u8 = b'!';
pub const SECCOMP_IOCTL_NOTIF_RECV: u32 =
    super::tty::iowr(SECCOMP_IOC_MAGIC, 0, core::mem::size_of::<SeccompNotif>());
pub const SECCOMP_IOCTL_NOTIF_SEND: u32 = super::tty::iowr(
    SECCOMP_IOC_MAGIC,
    1,
    core::mem::size_of::<SeccompNotifResp>(),
);
pub const SECCOMP_IOCTL_NOTIF_ID_VALID: u32 = super::tty::iow(SECCOMP_IOC_MAGIC, 2, 8);
/// The direction the first kernels gave ID_VALID by mistake, still accepted.
pub const SECCOMP_IOCTL_NOTIF_ID_VALID_WRONG_DIR: u32 = super::tty::ior(SECCOMP_IOC_MAGIC, 2, 8);
pub const SECCOMP_IOCTL_NOTIF_ADDFD: u32 = super::tty::iow(
    SECCOMP_IOC_MAGIC,
    3,
    core::mem::size_of::<SeccompNotifAddfd>(),
);
pub const SECCOMP_IOCTL_NOTIF_SET_FLAGS: u32 = super::tty::iow(SECCOMP_IOC_MAGIC, 4, 8);

/// prctl(2) options of seccomp (include/uapi/linux/prctl.h).
pub const PR_GET_SECCOMP: u64 = 21;
pub const PR_SET_SECCOMP: u64 = 22;

/// ptrace(2) requests that read a tracee's filters (include/uapi/linux/ptrace.h).
pub const PTRACE_SECCOMP_GET_FILTER: u64 = 0x420c;
pub const PTRACE_SECCOMP_GET_METADATA: u64 = 0x420d;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::pod::Pod;

    #[test]
    fn seccomp_data_words_are_little_endian_at_linux_offsets() {
        let d = SeccompData {
            nr: 59,
            arch: AUDIT_ARCH_X86_64,
            instruction_pointer: 0x1122_3344_5566_7788,
            args: [1, 2, 3, 4, 5, 0xdead_beef_0000_0006],
        };
        let b = d.as_bytes();
        assert_eq!(b.len(), 64);
        assert_eq!(&b[0..4], &59i32.to_le_bytes());
        assert_eq!(&b[4..8], &0xc000_003eu32.to_le_bytes());
        assert_eq!(&b[8..12], &0x5566_7788u32.to_le_bytes());
        assert_eq!(&b[12..16], &0x1122_3344u32.to_le_bytes());
        assert_eq!(&b[56..60], &6u32.to_le_bytes());
        assert_eq!(SeccompData::from_bytes(&b), Some(d));
    }

    #[test]
    fn actions_order_as_linux_compares_them() {
        let order = [
            SECCOMP_RET_KILL_PROCESS,
            SECCOMP_RET_KILL_THREAD,
            SECCOMP_RET_TRAP,
            SECCOMP_RET_ERRNO,
            SECCOMP_RET_USER_NOTIF,
            SECCOMP_RET_TRACE,
            SECCOMP_RET_LOG,
            SECCOMP_RET_ALLOW,
        ];
        assert!(order.windows(2).all(|w| (w[0] as i32) < (w[1] as i32)));
        assert_eq!(SECCOMP_FILTER_FLAG_MASK, 0x3f);
        assert_eq!(MAX_INSNS_PER_PATH, 32768);
        assert_eq!(bpf::LD | bpf::W | bpf::ABS, 0x20);
        assert_eq!(bpf::RET | bpf::K, 0x06);
        assert_eq!(bpf::JMP | bpf::JEQ | bpf::K, 0x15);
    }

    #[test]
    fn notify_ioctls_have_linux_numbers() {
        assert_eq!(SECCOMP_IOCTL_NOTIF_RECV, 0xc050_2100);
        assert_eq!(SECCOMP_IOCTL_NOTIF_SEND, 0xc018_2101);
        assert_eq!(SECCOMP_IOCTL_NOTIF_ID_VALID, 0x4008_2102);
        assert_eq!(SECCOMP_IOCTL_NOTIF_ID_VALID_WRONG_DIR, 0x8008_2102);
        assert_eq!(SECCOMP_IOCTL_NOTIF_ADDFD, 0x4018_2103);
        // The extensible ioctl: its number with the size field masked is what identifies it.
        assert_eq!(super::super::tty::ioc_size(SECCOMP_IOCTL_NOTIF_ADDFD), 24);
        assert_eq!(
            SECCOMP_NOTIFY_ADDFD_SIZE_VER0,
            core::mem::size_of::<SeccompNotifAddfd>()
        );
        assert_eq!((SECCOMP_ADDFD_FLAG_SETFD, SECCOMP_ADDFD_FLAG_SEND), (1, 2));
        let a = SeccompNotifAddfd {
            id: 0x0102_0304_0506_0708,
            flags: SECCOMP_ADDFD_FLAG_SEND,
            srcfd: 3,
            newfd: 42,
            newfd_flags: 0o2000000,
        };
        let b = a.as_bytes();
        assert_eq!(&b[8..12], &2u32.to_le_bytes());
        assert_eq!(&b[16..20], &42u32.to_le_bytes());
        assert_eq!(SeccompNotifAddfd::from_bytes(&b), Some(a));
        assert_eq!(SECCOMP_IOCTL_NOTIF_SET_FLAGS, 0x4008_2104);
        let r = SeccompNotifResp {
            id: 7,
            val: -2,
            error: -1,
            flags: 1,
        };
        let b = r.as_bytes();
        assert_eq!(&b[8..16], &(-2i64).to_le_bytes());
        assert_eq!(&b[16..20], &(-1i32).to_le_bytes());
        assert_eq!(SeccompNotifResp::from_bytes(&b), Some(r));
    }
}
