//! The stub's layout on arm64: where its code and data sit and what the data area holds.
//!
//! The same layout as x86_64 (`um_arch_x86::stub`), so the engine code is shared: the stub
//! region is `STUB_REGION` bytes at a base chosen at boot from the host's user VA size, code at
//! the base, the data area (a memfd shared with the kernel) at `DATA_OFFSET`. Offsets are
//! 64K-aligned, so the layout holds for 4K, 16K and 64K host pages.
//!
//! Data area (little-endian u64 words): `COUNT` ops to run; ops from `OPS`, `OP_SIZE` bytes
//! each: number, six arguments, and the result the stub writes back at `RESULT_OFF`.

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
/// below its top. arm64 hosts have 39-bit (2 GiB below the top, 512 GiB of VA) or 48-bit
/// (1 TiB below the top) user space. The host's stack at exec time lies within the top
/// `STACK_RND_MASK` (1 GiB with 4K pages) + 8 MiB, so the stub's fixed ELF load address never
/// collides with it; the rest of what exec put there is unmapped at setup.
pub fn stub_base(va_bits: u32) -> u64 {
    let top = 1u64 << va_bits;
    top - top / 256
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        assert_eq!(stub_base(48), 0xff00_0000_0000);
        assert_eq!(stub_base(39), 0x7f_8000_0000);
        // Below the randomised stack (1 GiB + 8 MiB under the top) on the smallest host.
        assert!(stub_base(39) + STUB_REGION < (1u64 << 39) - (1 << 30) - (8 << 20));
        const { assert!(OPS + MAX_OPS * OP_SIZE <= 0x4000) };
        assert_eq!(STUB_REGION % 0x1_0000, 0);
        // The batch runner's immediate offsets must be encodable (imm12, scaled for ldr).
        const { assert!(OPS < 4096 && OP_SIZE < 4096 && RESULT_OFF % 8 == 0) };
    }
}
