//! The ABI of the calls programs probe for: kcmp (`include/uapi/linux/kcmp.h`), I/O priorities
//! (`include/uapi/linux/ioprio.h`), POSIX message queues (`include/uapi/linux/mqueue.h`;
//! `struct sigevent` is in [`super::signal`]) and native AIO
//! (`include/uapi/linux/aio_abi.h`). The same on x86_64 and arm64 (both little-endian, so
//! `struct iocb`'s `aio_key, aio_rw_flags` order is the little-endian one).

use static_assertions::const_assert_eq;

/// kcmp(2) types (`enum kcmp_type`).
pub const KCMP_FILE: u32 = 0;
pub const KCMP_VM: u32 = 1;
pub const KCMP_FILES: u32 = 2;
pub const KCMP_FS: u32 = 3;
pub const KCMP_SIGHAND: u32 = 4;
pub const KCMP_IO: u32 = 5;
pub const KCMP_SYSVSEM: u32 = 6;
pub const KCMP_EPOLL_TFD: u32 = 7;

crate::pod_struct! {
    /// `struct kcmp_epoll_slot`: the epoll descriptor, the target fd and its index among the
    /// items of that fd.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct KcmpEpollSlot {
        pub efd: u32,
        pub tfd: u32,
        pub toff: u32,
    }
}
const_assert_eq!(core::mem::size_of::<KcmpEpollSlot>(), 12);

/// `IOPRIO_CLASS_SHIFT`: the class is bits 13..16 of an ioprio value.
pub const IOPRIO_CLASS_SHIFT: u32 = 13;
/// `IOPRIO_CLASS_MASK` (after the shift).
pub const IOPRIO_CLASS_MASK: u32 = 0x07;
/// `IOPRIO_LEVEL_MASK`: the level is bits 0..3.
pub const IOPRIO_LEVEL_MASK: u32 = 0x07;
/// I/O scheduling classes (`IOPRIO_CLASS_*`).
pub const IOPRIO_CLASS_NONE: u32 = 0;
pub const IOPRIO_CLASS_RT: u32 = 1;
pub const IOPRIO_CLASS_BE: u32 = 2;
pub const IOPRIO_CLASS_IDLE: u32 = 3;
/// `IOPRIO_CLASS_INVALID`.
pub const IOPRIO_CLASS_INVALID: u32 = 7;
/// `IOPRIO_NR_LEVELS`: levels 0 (highest) to 7.
pub const IOPRIO_NR_LEVELS: u32 = 8;
/// `IOPRIO_WHO_*`.
pub const IOPRIO_WHO_PROCESS: u32 = 1;
pub const IOPRIO_WHO_PGRP: u32 = 2;
pub const IOPRIO_WHO_USER: u32 = 3;

/// `IOPRIO_PRIO_VALUE(class, level)`.
pub const fn ioprio_value(class: u32, level: u32) -> u32 {
    ((class & IOPRIO_CLASS_MASK) << IOPRIO_CLASS_SHIFT) | (level & IOPRIO_LEVEL_MASK)
}

/// `IOPRIO_PRIO_CLASS(ioprio)`.
pub const fn ioprio_class(ioprio: u32) -> u32 {
    (ioprio >> IOPRIO_CLASS_SHIFT) & IOPRIO_CLASS_MASK
}

/// `IOPRIO_PRIO_LEVEL(ioprio)`.
pub const fn ioprio_level(ioprio: u32) -> u32 {
    ioprio & IOPRIO_LEVEL_MASK
}

crate::pod_struct! {
    /// `struct mq_attr` (mq_getattr(3)): flags (`O_NONBLOCK` only), the most messages, the
    /// largest message, and the messages queued now.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct MqAttr {
        pub mq_flags: i64,
        pub mq_maxmsg: i64,
        pub mq_msgsize: i64,
        pub mq_curmsgs: i64,
        pub reserved: [i64; 4],
    }
}
const_assert_eq!(core::mem::size_of::<MqAttr>(), 64);
/// `MQ_PRIO_MAX` (include/uapi/linux/mqueue.h): priorities are below it.
pub const MQ_PRIO_MAX: u32 = 32768;
/// `MQ_BYTES_MAX`: the default `RLIMIT_MSGQUEUE`.
pub const MQ_BYTES_MAX: u64 = 819_200;

/// `IOCB_CMD_*` (`enum` in aio_abi.h).
pub const IOCB_CMD_PREAD: u16 = 0;
pub const IOCB_CMD_PWRITE: u16 = 1;
pub const IOCB_CMD_FSYNC: u16 = 2;
pub const IOCB_CMD_FDSYNC: u16 = 3;
pub const IOCB_CMD_POLL: u16 = 5;
pub const IOCB_CMD_NOOP: u16 = 6;
pub const IOCB_CMD_PREADV: u16 = 7;
pub const IOCB_CMD_PWRITEV: u16 = 8;
/// `IOCB_FLAG_RESFD`: signal the eventfd in `aio_resfd` on completion.
pub const IOCB_FLAG_RESFD: u32 = 1 << 0;
/// `IOCB_FLAG_IOPRIO`: `aio_reqprio` is an ioprio value.
pub const IOCB_FLAG_IOPRIO: u32 = 1 << 1;

crate::pod_struct! {
    /// `struct iocb` (64 bytes).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Iocb {
        pub aio_data: u64,
        /// `aio_key` (Linux sets it to `KIOCB_KEY`, 0, at submit), then `aio_rw_flags`
        /// (`RWF_*`), in the little-endian order.
        pub aio_key: u32,
        pub aio_rw_flags: u32,
        pub aio_lio_opcode: u16,
        pub aio_reqprio: i16,
        pub aio_fildes: u32,
        pub aio_buf: u64,
        pub aio_nbytes: u64,
        pub aio_offset: i64,
        pub aio_reserved2: u64,
        pub aio_flags: u32,
        pub aio_resfd: u32,
    }
}
const_assert_eq!(core::mem::size_of::<Iocb>(), 64);
const_assert_eq!(core::mem::offset_of!(Iocb, aio_lio_opcode), 16);
const_assert_eq!(core::mem::offset_of!(Iocb, aio_buf), 24);
const_assert_eq!(core::mem::offset_of!(Iocb, aio_flags), 56);

crate::pod_struct! {
    /// `struct io_event`: the iocb's `aio_data`, the iocb's address, and the results.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct IoEvent {
        pub data: u64,
        pub obj: u64,
        pub res: i64,
        pub res2: i64,
    }
}
const_assert_eq!(core::mem::size_of::<IoEvent>(), 32);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioprio_packing() {
        // IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 4), what ionice -p prints as "best-effort: prio 4".
        assert_eq!(ioprio_value(IOPRIO_CLASS_BE, 4), 0x4004);
        assert_eq!(ioprio_class(0x4004), IOPRIO_CLASS_BE);
        assert_eq!(ioprio_level(0x4004), 4);
        assert_eq!(ioprio_class(ioprio_value(IOPRIO_CLASS_IDLE, 0)), 3);
    }
}
