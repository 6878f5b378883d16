//! The stub's layout: where its code and data sit and what the data area holds.
//!
//! The stub region is `STUB_REGION` bytes at a base address chosen at boot from the host's VA
//! size (just below the top of host user space); the guest's `TASK_SIZE` ends where it begins.
//! Code is at the base; the data area (a memfd shared with the kernel) at `DATA_OFFSET`.
//! Offsets are 64K-aligned so the layout works on hosts with pages up to 64K.
//!
//! Data area, as the stub code reads it (all words little-endian u64):
//! `COUNT` ops to run; ops from `OPS`, `OP_SIZE` bytes each: number, six arguments, and the
//! result, which the stub writes back (`RESULT_OFF` within the op).

/// Offset of the data area from the stub base.
pub const DATA_OFFSET: u64 = 0x1_0000;
/// Size of the data area.
pub const DATA_SIZE: u64 = 0x1_0000;
/// Word: number of queued ops.
pub const COUNT: usize = 0x0;
/// Offset of the result word within an op.
pub const RESULT_OFF: usize = 56;
/// First op.
pub const OPS: usize = 0x100;
/// Bytes per op.
pub const OP_SIZE: usize = 64;
/// How many ops fit.
pub const MAX_OPS: usize = (0x4000 - OPS) / OP_SIZE;

// The seccomp engine's slots, setup block and filter are the same on every arch.
pub use um_os_linux::stub_layout::*;

// The shared layout assumes this arch's op format and data area.
const _: () = assert!(um_os_linux::stub_layout::OP_SIZE == OP_SIZE);
const _: () = assert!(um_os_linux::stub_layout::DATA_SIZE == DATA_SIZE);

/// Where the stub lives for a host with `va_bits` of user address space: 1/256 of the space
/// below its top (512 GiB on a 47-bit host), clear of the host's randomized stack at exec time.
pub fn stub_base(va_bits: u32) -> u64 {
    let top = 1u64 << va_bits;
    top - top / 256
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        assert_eq!(stub_base(47), 0x7f80_0000_0000);
        const { assert!(OPS + MAX_OPS * OP_SIZE <= 0x4000) };
        assert_eq!(STUB_REGION % 0x1_0000, 0);
    }
}
