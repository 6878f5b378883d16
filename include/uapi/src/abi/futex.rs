//! Futex operations and the robust-list head (`include/uapi/linux/futex.h`), identical on
//! x86_64 and arm64.

use static_assertions::const_assert_eq;

/// Wait if `*uaddr == val`.
pub const FUTEX_WAIT: u32 = 0;
/// Wake up to `val` waiters.
pub const FUTEX_WAKE: u32 = 1;
/// Removed in 2.6.26.
pub const FUTEX_FD: u32 = 2;
/// Wake and requeue.
pub const FUTEX_REQUEUE: u32 = 3;
/// Wake and requeue if `*uaddr == val3`.
pub const FUTEX_CMP_REQUEUE: u32 = 4;
/// Wake, operate on a second word, conditionally wake more.
pub const FUTEX_WAKE_OP: u32 = 5;
/// PI lock.
pub const FUTEX_LOCK_PI: u32 = 6;
/// PI unlock.
pub const FUTEX_UNLOCK_PI: u32 = 7;
/// PI trylock.
pub const FUTEX_TRYLOCK_PI: u32 = 8;
/// Wait with a bitset.
pub const FUTEX_WAIT_BITSET: u32 = 9;
/// Wake with a bitset.
pub const FUTEX_WAKE_BITSET: u32 = 10;
/// Wait on a non-PI futex, to be requeued to a PI futex.
pub const FUTEX_WAIT_REQUEUE_PI: u32 = 11;
/// Requeue to a PI futex.
pub const FUTEX_CMP_REQUEUE_PI: u32 = 12;
/// PI lock with a selectable clock.
pub const FUTEX_LOCK_PI2: u32 = 13;
/// The futex is process-private.
pub const FUTEX_PRIVATE_FLAG: u32 = 128;
/// Timeouts are `CLOCK_REALTIME` (default monotonic).
pub const FUTEX_CLOCK_REALTIME: u32 = 256;
/// The command part of `op`.
pub const FUTEX_CMD_MASK: u32 = !(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
/// Bitset matching every waiter.
pub const FUTEX_BITSET_MATCH_ANY: u32 = 0xffff_ffff;
/// PI futex word: there are waiters.
pub const FUTEX_WAITERS: u32 = 0x8000_0000;
/// PI/robust futex word: the owner died.
pub const FUTEX_OWNER_DIED: u32 = 0x4000_0000;
/// PI/robust futex word: the owner tid.
pub const FUTEX_TID_MASK: u32 = 0x3fff_ffff;
/// Longest robust list the kernel walks at exit.
pub const ROBUST_LIST_LIMIT: usize = 2048;
/// `futex_waitv`: 32-bit futex.
pub const FUTEX_32: u32 = 2;
/// `futex_waitv`: most waiters per call.
pub const FUTEX_WAITV_MAX: usize = 128;

/// `FUTEX_WAKE_OP` operations (bits 28..31 of `val3`).
pub const FUTEX_OP_SET: u32 = 0;
/// `+=`.
pub const FUTEX_OP_ADD: u32 = 1;
/// `|=`.
pub const FUTEX_OP_OR: u32 = 2;
/// `&= !`.
pub const FUTEX_OP_ANDN: u32 = 3;
/// `^=`.
pub const FUTEX_OP_XOR: u32 = 4;
/// Flag: the operand is `1 << oparg`.
pub const FUTEX_OP_OPARG_SHIFT: u32 = 8;
/// `FUTEX_WAKE_OP` comparisons (bits 24..27 of `val3`).
pub const FUTEX_OP_CMP_EQ: u32 = 0;
/// `!=`.
pub const FUTEX_OP_CMP_NE: u32 = 1;
/// `<`.
pub const FUTEX_OP_CMP_LT: u32 = 2;
/// `<=`.
pub const FUTEX_OP_CMP_LE: u32 = 3;
/// `>`.
pub const FUTEX_OP_CMP_GT: u32 = 4;
/// `>=`.
pub const FUTEX_OP_CMP_GE: u32 = 5;

crate::pod_struct! {
    /// `struct robust_list_head` (`set_robust_list`): 24 bytes; its `len` argument must be 24.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct RobustListHead {
        /// `list.next`: first entry (points back at the head when empty).
        pub list: u64,
        /// Offset from an entry to its futex word.
        pub futex_offset: i64,
        /// Entry being (un)locked right now.
        pub list_op_pending: u64,
    }
}

const_assert_eq!(core::mem::size_of::<RobustListHead>(), 24);
const_assert_eq!(core::mem::offset_of!(RobustListHead, futex_offset), 8);
const_assert_eq!(core::mem::offset_of!(RobustListHead, list_op_pending), 16);
