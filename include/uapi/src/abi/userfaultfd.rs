//! The userfaultfd ABI: the `userfaultfd(2)` flags, the `UFFDIO_*` ioctls and their structures,
//! the messages read from the descriptor, the feature and mode bits.
//!
//! Source: `include/uapi/linux/userfaultfd.h` (every structure is made of `__u64`/`__s64`, so the
//! layouts and the `_IOWR(0xAA, ...)` numbers are the same on x86_64 and arm64), the
//! `/dev/userfaultfd` minor from `include/linux/miscdevice.h`. Man pages: userfaultfd(2),
//! ioctl_userfaultfd(2).

use static_assertions::const_assert_eq;

use super::pod::Pod;
use super::tty::{io, ior, iowr};

/// `UFFD_API`: the only API version.
pub const UFFD_API: u64 = 0xAA;
/// The ioctl type byte (`UFFDIO`, also `USERFAULTFD_IOC`).
pub const UFFDIO: u8 = 0xAA;

/// `UFFD_USER_MODE_ONLY`: the descriptor only handles faults from user mode.
pub const UFFD_USER_MODE_ONLY: u32 = 1;

// The ioctl numbers (`_UFFDIO_*`), also the bit numbers of the `ioctls` masks.
/// `_UFFDIO_REGISTER`.
pub const NR_REGISTER: u8 = 0x00;
/// `_UFFDIO_UNREGISTER`.
pub const NR_UNREGISTER: u8 = 0x01;
/// `_UFFDIO_WAKE`.
pub const NR_WAKE: u8 = 0x02;
/// `_UFFDIO_COPY`.
pub const NR_COPY: u8 = 0x03;
/// `_UFFDIO_ZEROPAGE`.
pub const NR_ZEROPAGE: u8 = 0x04;
/// `_UFFDIO_MOVE`.
pub const NR_MOVE: u8 = 0x05;
/// `_UFFDIO_WRITEPROTECT`.
pub const NR_WRITEPROTECT: u8 = 0x06;
/// `_UFFDIO_CONTINUE`.
pub const NR_CONTINUE: u8 = 0x07;
/// `_UFFDIO_POISON`.
pub const NR_POISON: u8 = 0x08;
/// `_UFFDIO_API`.
pub const NR_API: u8 = 0x3F;

/// `UFFDIO_API`.
pub const UFFDIO_API: u32 = iowr(UFFDIO, NR_API, UffdioApi::SIZE);
/// `UFFDIO_REGISTER`.
pub const UFFDIO_REGISTER: u32 = iowr(UFFDIO, NR_REGISTER, UffdioRegister::SIZE);
/// `UFFDIO_UNREGISTER`.
pub const UFFDIO_UNREGISTER: u32 = ior(UFFDIO, NR_UNREGISTER, UffdioRange::SIZE);
/// `UFFDIO_WAKE`.
pub const UFFDIO_WAKE: u32 = ior(UFFDIO, NR_WAKE, UffdioRange::SIZE);
/// `UFFDIO_COPY`.
pub const UFFDIO_COPY: u32 = iowr(UFFDIO, NR_COPY, UffdioCopy::SIZE);
/// `UFFDIO_ZEROPAGE`.
pub const UFFDIO_ZEROPAGE: u32 = iowr(UFFDIO, NR_ZEROPAGE, UffdioZeropage::SIZE);
/// `UFFDIO_MOVE` (`struct uffdio_move` has `uffdio_copy`'s layout).
pub const UFFDIO_MOVE: u32 = iowr(UFFDIO, NR_MOVE, UffdioCopy::SIZE);
/// `UFFDIO_WRITEPROTECT` (`struct uffdio_writeprotect`: a range and a mode, 24 bytes).
pub const UFFDIO_WRITEPROTECT: u32 = iowr(UFFDIO, NR_WRITEPROTECT, 24);
/// `UFFDIO_CONTINUE` (`struct uffdio_continue` has `uffdio_zeropage`'s layout).
pub const UFFDIO_CONTINUE: u32 = iowr(UFFDIO, NR_CONTINUE, UffdioZeropage::SIZE);
/// `UFFDIO_POISON` (`struct uffdio_poison` has `uffdio_zeropage`'s layout).
pub const UFFDIO_POISON: u32 = iowr(UFFDIO, NR_POISON, UffdioZeropage::SIZE);
/// `USERFAULTFD_IOC_NEW` on `/dev/userfaultfd`: the argument is `userfaultfd(2)`'s flags.
pub const USERFAULTFD_IOC_NEW: u32 = io(UFFDIO, 0x00);
/// `USERFAULTFD_MINOR`: `/dev/userfaultfd` is misc 10:126.
pub const USERFAULTFD_MINOR: u32 = 126;

/// `UFFD_API_IOCTLS`: what the descriptor answers once the API is set.
pub const UFFD_API_IOCTLS: u64 = (1 << NR_REGISTER) | (1 << NR_UNREGISTER) | (1 << NR_API);

// Message events (`uffd_msg.event`).
/// `UFFD_EVENT_PAGEFAULT`.
pub const UFFD_EVENT_PAGEFAULT: u8 = 0x12;
/// `UFFD_EVENT_FORK`.
pub const UFFD_EVENT_FORK: u8 = 0x13;
/// `UFFD_EVENT_REMAP`.
pub const UFFD_EVENT_REMAP: u8 = 0x14;
/// `UFFD_EVENT_REMOVE`.
pub const UFFD_EVENT_REMOVE: u8 = 0x15;
/// `UFFD_EVENT_UNMAP`.
pub const UFFD_EVENT_UNMAP: u8 = 0x16;

// `uffd_msg.arg.pagefault.flags`.
/// `UFFD_PAGEFAULT_FLAG_WRITE`.
pub const UFFD_PAGEFAULT_FLAG_WRITE: u64 = 1 << 0;
/// `UFFD_PAGEFAULT_FLAG_WP`.
pub const UFFD_PAGEFAULT_FLAG_WP: u64 = 1 << 1;
/// `UFFD_PAGEFAULT_FLAG_MINOR`.
pub const UFFD_PAGEFAULT_FLAG_MINOR: u64 = 1 << 2;

// `uffdio_api.features`.
/// `UFFD_FEATURE_PAGEFAULT_FLAG_WP`.
pub const UFFD_FEATURE_PAGEFAULT_FLAG_WP: u64 = 1 << 0;
/// `UFFD_FEATURE_EVENT_FORK`.
pub const UFFD_FEATURE_EVENT_FORK: u64 = 1 << 1;
/// `UFFD_FEATURE_EVENT_REMAP`.
pub const UFFD_FEATURE_EVENT_REMAP: u64 = 1 << 2;
/// `UFFD_FEATURE_EVENT_REMOVE`.
pub const UFFD_FEATURE_EVENT_REMOVE: u64 = 1 << 3;
/// `UFFD_FEATURE_MISSING_HUGETLBFS`.
pub const UFFD_FEATURE_MISSING_HUGETLBFS: u64 = 1 << 4;
/// `UFFD_FEATURE_MISSING_SHMEM`.
pub const UFFD_FEATURE_MISSING_SHMEM: u64 = 1 << 5;
/// `UFFD_FEATURE_EVENT_UNMAP`.
pub const UFFD_FEATURE_EVENT_UNMAP: u64 = 1 << 6;
/// `UFFD_FEATURE_SIGBUS`: faults raise SIGBUS instead of queueing a message.
pub const UFFD_FEATURE_SIGBUS: u64 = 1 << 7;
/// `UFFD_FEATURE_THREAD_ID`: messages carry the faulting thread's id.
pub const UFFD_FEATURE_THREAD_ID: u64 = 1 << 8;
/// `UFFD_FEATURE_MINOR_HUGETLBFS`.
pub const UFFD_FEATURE_MINOR_HUGETLBFS: u64 = 1 << 9;
/// `UFFD_FEATURE_MINOR_SHMEM`.
pub const UFFD_FEATURE_MINOR_SHMEM: u64 = 1 << 10;
/// `UFFD_FEATURE_EXACT_ADDRESS`: the message has the exact faulting address, not its page.
pub const UFFD_FEATURE_EXACT_ADDRESS: u64 = 1 << 11;
/// `UFFD_FEATURE_WP_HUGETLBFS_SHMEM`.
pub const UFFD_FEATURE_WP_HUGETLBFS_SHMEM: u64 = 1 << 12;
/// `UFFD_FEATURE_WP_UNPOPULATED`.
pub const UFFD_FEATURE_WP_UNPOPULATED: u64 = 1 << 13;
/// `UFFD_FEATURE_POISON`.
pub const UFFD_FEATURE_POISON: u64 = 1 << 14;
/// `UFFD_FEATURE_WP_ASYNC`.
pub const UFFD_FEATURE_WP_ASYNC: u64 = 1 << 15;
/// `UFFD_FEATURE_MOVE`.
pub const UFFD_FEATURE_MOVE: u64 = 1 << 16;
/// Every feature bit Linux defines (`UFFD_API_FEATURES` with all options built in): a request
/// outside it is `EINVAL`.
pub const UFFD_FEATURES_ALL: u64 = (1 << 17) - 1;

// `uffdio_register.mode`.
/// `UFFDIO_REGISTER_MODE_MISSING`.
pub const UFFDIO_REGISTER_MODE_MISSING: u64 = 1 << 0;
/// `UFFDIO_REGISTER_MODE_WP`.
pub const UFFDIO_REGISTER_MODE_WP: u64 = 1 << 1;
/// `UFFDIO_REGISTER_MODE_MINOR`.
pub const UFFDIO_REGISTER_MODE_MINOR: u64 = 1 << 2;

/// `UFFDIO_COPY_MODE_DONTWAKE` (also `UFFDIO_ZEROPAGE_MODE_DONTWAKE`, `UFFDIO_MOVE_MODE_DONTWAKE`).
pub const UFFDIO_COPY_MODE_DONTWAKE: u64 = 1 << 0;
/// `UFFDIO_COPY_MODE_WP`.
pub const UFFDIO_COPY_MODE_WP: u64 = 1 << 1;
/// `UFFDIO_WRITEPROTECT_MODE_WP`: set the protection (clear it without).
pub const UFFDIO_WRITEPROTECT_MODE_WP: u64 = 1 << 0;
/// `UFFDIO_WRITEPROTECT_MODE_DONTWAKE`.
pub const UFFDIO_WRITEPROTECT_MODE_DONTWAKE: u64 = 1 << 1;
/// `UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES`.
pub const UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES: u64 = 1 << 1;

crate::pod_struct! {
    /// `struct uffdio_api`: the handshake.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct UffdioApi {
        /// `UFFD_API`.
        pub api: u64,
        /// In: the features wanted; out: every feature the kernel has.
        pub features: u64,
        /// Out: the ioctls the descriptor answers (bit `_UFFDIO_*`).
        pub ioctls: u64,
    }
}

crate::pod_struct! {
    /// `struct uffdio_range`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct UffdioRange {
        pub start: u64,
        pub len: u64,
    }
}

crate::pod_struct! {
    /// `struct uffdio_register`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct UffdioRegister {
        pub range: UffdioRange,
        /// `UFFDIO_REGISTER_MODE_*`.
        pub mode: u64,
        /// Out: the range ioctls the registered range answers.
        pub ioctls: u64,
    }
}

crate::pod_struct! {
    /// `struct uffdio_copy` (and `struct uffdio_move`, whose last field is `move`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct UffdioCopy {
        pub dst: u64,
        pub src: u64,
        pub len: u64,
        /// `UFFDIO_COPY_MODE_*`.
        pub mode: u64,
        /// Out: bytes copied, or a negative errno.
        pub copy: i64,
    }
}

crate::pod_struct! {
    /// `struct uffdio_zeropage` (and `uffdio_continue`, `uffdio_poison`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct UffdioZeropage {
        pub range: UffdioRange,
        pub mode: u64,
        /// Out: bytes zeroed, or a negative errno.
        pub zeropage: i64,
    }
}

crate::pod_struct! {
    /// `struct uffd_msg` (packed, 32 bytes): an event byte, seven reserved bytes, and a 24-byte
    /// union. For `UFFD_EVENT_PAGEFAULT` the union is `{ __u64 flags; __u64 address; union {
    /// __u32 ptid; } feat; }`; the other events use its first words too (`fork.ufd`,
    /// `remap.{from,to,len}`, `remove.{start,end}`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct UffdMsg {
        pub event: u8,
        pub reserved1: u8,
        pub reserved2: u16,
        pub reserved3: u32,
        pub arg: [u64; 3],
    }
}

impl UffdMsg {
    /// A `UFFD_EVENT_PAGEFAULT` message.
    pub fn pagefault(flags: u64, address: u64, ptid: u32) -> UffdMsg {
        UffdMsg {
            event: UFFD_EVENT_PAGEFAULT,
            arg: [flags, address, u64::from(ptid)],
            ..Default::default()
        }
    }
}

const_assert_eq!(core::mem::size_of::<UffdioApi>(), 24);
const_assert_eq!(core::mem::size_of::<UffdioRange>(), 16);
const_assert_eq!(core::mem::size_of::<UffdioRegister>(), 32);
const_assert_eq!(core::mem::offset_of!(UffdioRegister, mode), 16);
const_assert_eq!(core::mem::offset_of!(UffdioRegister, ioctls), 24);
const_assert_eq!(core::mem::size_of::<UffdioCopy>(), 40);
const_assert_eq!(core::mem::offset_of!(UffdioCopy, copy), 32);
const_assert_eq!(core::mem::size_of::<UffdioZeropage>(), 32);
const_assert_eq!(core::mem::offset_of!(UffdioZeropage, zeropage), 24);
const_assert_eq!(core::mem::size_of::<UffdMsg>(), 32);
const_assert_eq!(core::mem::offset_of!(UffdMsg, arg), 8);

#[cfg(test)]
mod tests {
    use super::*;

    /// The ioctl numbers as `<linux/userfaultfd.h>` gives them (the same on x86_64 and arm64).
    #[test]
    fn ioctl_numbers() {
        assert_eq!(UFFDIO_API, 0xc018_aa3f);
        assert_eq!(UFFDIO_REGISTER, 0xc020_aa00);
        assert_eq!(UFFDIO_UNREGISTER, 0x8010_aa01);
        assert_eq!(UFFDIO_WAKE, 0x8010_aa02);
        assert_eq!(UFFDIO_COPY, 0xc028_aa03);
        assert_eq!(UFFDIO_ZEROPAGE, 0xc020_aa04);
        assert_eq!(UFFDIO_MOVE, 0xc028_aa05);
        assert_eq!(UFFDIO_WRITEPROTECT, 0xc018_aa06);
        assert_eq!(UFFDIO_CONTINUE, 0xc020_aa07);
        assert_eq!(UFFDIO_POISON, 0xc020_aa08);
        assert_eq!(USERFAULTFD_IOC_NEW, 0xaa00);
    }

    /// A page-fault message lays out as the packed C struct: event byte 0, flags at 8,
    /// address at 16, ptid at 24.
    #[test]
    fn pagefault_msg_layout() {
        let m = UffdMsg::pagefault(UFFD_PAGEFAULT_FLAG_WRITE, 0x7000_1000, 42);
        let b = m.as_bytes();
        assert_eq!(b.len(), 32);
        assert_eq!(b[0], UFFD_EVENT_PAGEFAULT);
        assert_eq!(&b[1..8], &[0; 7]);
        assert_eq!(u64::from_le_bytes(b[8..16].try_into().unwrap()), 1);
        assert_eq!(
            u64::from_le_bytes(b[16..24].try_into().unwrap()),
            0x7000_1000
        );
        assert_eq!(u32::from_le_bytes(b[24..28].try_into().unwrap()), 42);
        assert_eq!(UffdMsg::read_le(&b), m);
    }

    /// `uffdio_register` and `uffdio_copy` round-trip through their byte form.
    #[test]
    fn register_and_copy_round_trip() {
        let r = UffdioRegister {
            range: UffdioRange {
                start: 0x1000,
                len: 0x2000,
            },
            mode: UFFDIO_REGISTER_MODE_MISSING,
            ioctls: 0,
        };
        let b = r.as_bytes();
        assert_eq!(u64::from_le_bytes(b[8..16].try_into().unwrap()), 0x2000);
        assert_eq!(UffdioRegister::read_le(&b), r);
        let c = UffdioCopy {
            dst: 1,
            src: 2,
            len: 3,
            mode: 0,
            copy: -11,
        };
        assert_eq!(UffdioCopy::read_le(&c.as_bytes()), c);
    }
}
