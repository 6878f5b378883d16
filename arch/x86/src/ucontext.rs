//! The host's signal frame as the seccomp engine's stub handler receives it: the `ucontext`
//! whose address the host passes in rdx (arch/x86/include/uapi/asm/ucontext.h,
//! sigcontext.h), in the shared slot where the kernel reads and edits it in place.
//!
//! Unlike the guest frame of [`crate::signal`], this one is built by the *host* kernel, so its
//! FP state is whatever the host CPU saves (XSAVE format, `fpregs` points at it); the kernel
//! touches only the legacy FXSAVE part (512 bytes) and leaves AVX and later state alone, so
//! those registers survive a syscall untouched.

use crate::regs::{Regs, idx};
use crate::signal::SC_ORDER;

/// Offset of `uc_mcontext` (`struct sigcontext`) in `struct ucontext`.
pub const UC_MCONTEXT: usize = 40;
/// Offset of `sigcontext.fpstate` (the pointer to the FP state).
pub const UC_FPSTATE_PTR: usize = UC_MCONTEXT + 184;
/// Offset of `uc_sigmask`.
pub const UC_SIGMASK: usize = UC_MCONTEXT + 256;
/// Bytes of the ucontext the kernel reads and writes.
pub const UC_SIZE: usize = UC_SIGMASK + 8;
/// Bytes of the FP state the kernel exchanges (the FXSAVE image, `user_fpregs_struct`).
pub const FP_LEGACY_SIZE: usize = 512;
/// Bytes of the FP state to map for [`mark_legacy_present`]: the legacy area and the XSAVE
/// header's `xstate_bv`.
pub const FP_WINDOW: usize = FP_LEGACY_SIZE + 8;
/// `sw_reserved.magic1` (fpstate + 464) when the frame's FP state is in XSAVE format.
const FP_XSTATE_MAGIC1: u32 = 0x4650_5853;

/// Offsets in `siginfo_t` (all signals): `si_signo`, `si_code`, and for SIGSEGV/SIGBUS/SIGILL/
/// SIGFPE/SIGTRAP `si_addr`; for SIGSYS (`SYS_SECCOMP`) `si_syscall` and `si_arch`.
pub const SI_CODE: usize = 8;
/// `si_addr` / SIGSYS `_call_addr`.
pub const SI_ADDR: usize = 16;
/// SIGSYS `_syscall`.
pub const SI_SYSCALL: usize = 24;

fn get(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap_or([0; 8]))
}

fn put(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Loads the general registers, rip and eflags from `uc` (at least [`UC_SIZE`] bytes) into
/// `r`; segment and base registers (not in the frame) keep their values.
pub fn load_regs(uc: &[u8], r: &mut Regs) {
    for (i, reg) in SC_ORDER.iter().enumerate() {
        r.w[*reg] = get(uc, UC_MCONTEXT + i * 8);
    }
}

/// Stores `r` into `uc`'s general registers, rip and eflags (rt_sigreturn filters eflags
/// itself), and clears `uc_sigmask`: the guest runs with every host signal deliverable.
pub fn store_regs(r: &Regs, uc: &mut [u8]) {
    for (i, reg) in SC_ORDER.iter().enumerate() {
        put(uc, UC_MCONTEXT + i * 8, r.w[*reg]);
    }
    put(uc, UC_SIGMASK, 0);
}

/// The stub address of the frame's FP state (0 if the host saved none).
pub fn fpstate_addr(uc: &[u8]) -> u64 {
    get(uc, UC_FPSTATE_PTR)
}

/// After the kernel wrote the legacy area of the FP state `fp` ([`FP_WINDOW`] bytes): in
/// XSAVE format, mark x87 and SSE state present in `xstate_bv` so the host's XRSTOR at
/// rt_sigreturn loads them instead of their init values.
pub fn mark_legacy_present(fp: &mut [u8]) {
    let magic = u32::from_le_bytes(fp[464..468].try_into().unwrap_or([0; 4]));
    if magic == FP_XSTATE_MAGIC1 {
        let bv = get(fp, FP_LEGACY_SIZE) | 0x3;
        put(fp, FP_LEGACY_SIZE, bv);
    }
}

/// Where the frame's FP state is (stub address, and how many bytes the kernel exchanges):
/// the block `sigcontext.fpstate` points at.
pub fn fp_window(uc: &[u8], _uc_addr: u64) -> (u64, usize) {
    (fpstate_addr(uc), FP_WINDOW)
}

/// The FP registers in the `NT_PRFPREG` regset format (the FXSAVE image) from the window.
pub fn fp_regset(window: &[u8]) -> Option<Vec<u8>> {
    window.get(..FP_LEGACY_SIZE).map(<[u8]>::to_vec)
}

/// Writes an `NT_PRFPREG` image into the window; false if it has the wrong size.
pub fn set_fp_regset(window: &mut [u8], regset: &[u8]) -> bool {
    if regset.len() != FP_LEGACY_SIZE || window.len() < FP_WINDOW {
        return false;
    }
    // Not sw_reserved (464..512): that is the host's description of its XSAVE frame (magic1,
    // sizes, xfeatures); a zeroed or guest-written one makes the host's sigreturn restore only
    // the legacy area and reset AVX and later state to init.
    window[..464].copy_from_slice(&regset[..464]);
    mark_legacy_present(window);
    true
}

/// The guest syscall a SIGSYS frame reports: registers as at entry, with `orig_rax` = the
/// number from siginfo (the host rolled rax back to it, `syscall_rollback`).
pub fn syscall_regs(uc: &[u8], siginfo: &[u8], r: &mut Regs) {
    load_regs(uc, r);
    let nr = i32::from_le_bytes(
        siginfo[SI_SYSCALL..SI_SYSCALL + 4]
            .try_into()
            .unwrap_or([0; 4]),
    );
    r.w[idx::ORIG_RAX] = nr as i64 as u64;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_the_host_headers() {
        assert_eq!(UC_FPSTATE_PTR, 224);
        assert_eq!(UC_SIGMASK, 296);
        assert_eq!(UC_SIZE, 304);
        #[cfg(target_arch = "x86_64")]
        {
            let uc: libc::ucontext_t = unsafe_free_zeroed();
            let base = &uc as *const _ as usize;
            assert_eq!(&uc.uc_mcontext as *const _ as usize - base, UC_MCONTEXT);
            assert_eq!(
                &uc.uc_mcontext.fpregs as *const _ as usize - base,
                UC_FPSTATE_PTR
            );
            assert_eq!(&uc.uc_sigmask as *const _ as usize - base, UC_SIGMASK);
            // gregs[REG_RIP] is sigcontext's 17th word, as SC_ORDER has it.
            assert_eq!(SC_ORDER[libc::REG_RIP as usize], idx::RIP);
            assert_eq!(SC_ORDER[libc::REG_RAX as usize], idx::RAX);
            assert_eq!(SC_ORDER[libc::REG_EFL as usize], idx::EFLAGS);
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn unsafe_free_zeroed() -> libc::ucontext_t {
        // SAFETY: ucontext_t is plain data (integers, arrays, raw pointers): all-zero is valid.
        unsafe { std::mem::zeroed() }
    }

    #[test]
    fn regs_round_trip_and_mask_cleared() {
        let mut uc = vec![0xaau8; UC_SIZE];
        let mut r = Regs::default();
        for (i, w) in r.w.iter_mut().enumerate() {
            *w = 0x100 + i as u64;
        }
        store_regs(&r, &mut uc);
        assert_eq!(get(&uc, UC_SIGMASK), 0);
        let mut back = Regs::default();
        back.w[idx::FS_BASE] = 77;
        load_regs(&uc, &mut back);
        for reg in SC_ORDER {
            assert_eq!(back.w[reg], r.w[reg]);
        }
        assert_eq!(back.w[idx::FS_BASE], 77);
        let mut si = [0u8; 128];
        si[SI_SYSCALL..SI_SYSCALL + 4].copy_from_slice(&39i32.to_le_bytes());
        syscall_regs(&uc, &si, &mut back);
        assert_eq!(back.syscall_nr(), 39);
    }

    #[test]
    fn xstate_bv_marked_only_in_xsave_frames() {
        let mut fp = vec![0u8; FP_WINDOW];
        mark_legacy_present(&mut fp);
        assert_eq!(get(&fp, FP_LEGACY_SIZE), 0);
        fp[464..468].copy_from_slice(&FP_XSTATE_MAGIC1.to_le_bytes());
        put(&mut fp, FP_LEGACY_SIZE, 0x4);
        mark_legacy_present(&mut fp);
        assert_eq!(get(&fp, FP_LEGACY_SIZE), 0x7);
    }
}
