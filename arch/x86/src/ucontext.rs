//! The host's signal frame as the seccomp engine's stub handler receives it: the `ucontext`
//! whose address the host passes in rdx (arch/x86/include/uapi/asm/ucontext.h,
//! sigcontext.h), in the shared slot where the kernel reads and edits it in place.
//!
//! Unlike the guest frame of [`crate::signal`], this one is built by the *host* kernel, so its
//! FP state is whatever the host CPU saves: XSAVE format with the host's `sw_reserved`
//! description (`fpregs` points at it). That buffer *is* the FP image the kernel passes
//! around (see [`crate::signal`]): [`fp_len`] reads its size from the description, and
//! [`set_fp_regset`] writes a whole image back, keeping the host's description and refusing a
//! header or MXCSR the host's XRSTOR would fault on (the stub would die in rt_sigreturn).

use crate::regs::{Regs, idx};
use crate::signal::SC_ORDER;

/// Offset of `uc_mcontext` (`struct sigcontext`) in `struct ucontext`.
pub const UC_MCONTEXT: usize = 40;
/// Offset of `sigcontext.err` (the hardware error code of the trap that raised the signal).
pub const UC_ERR: usize = UC_MCONTEXT + 152;
/// Offset of `sigcontext.trapno` (its vector).
pub const UC_TRAPNO: usize = UC_MCONTEXT + 160;
/// Offset of `sigcontext.fpstate` (the pointer to the FP state).
pub const UC_FPSTATE_PTR: usize = UC_MCONTEXT + 184;
/// Offset of `uc_sigmask`.
pub const UC_SIGMASK: usize = UC_MCONTEXT + 256;
/// Bytes of the ucontext the kernel reads and writes.
pub const UC_SIZE: usize = UC_SIGMASK + 8;
/// Bytes of the legacy FXSAVE area (`user_fpregs_struct`), the head of every FP state.
pub const FP_LEGACY_SIZE: usize = 512;

/// Offsets in `siginfo_t` (all signals): `si_signo`, `si_code`, and for SIGSEGV/SIGBUS/SIGILL/
/// SIGFPE/SIGTRAP `si_addr`; for SIGSYS (`SYS_SECCOMP`) `si_syscall` and `si_arch`.
pub const SI_CODE: usize = 8;
/// `si_addr` / SIGSYS `_call_addr`.
pub const SI_ADDR: usize = 16;
/// SIGSYS `_syscall`.
pub const SI_SYSCALL: usize = 24;
/// SIGSYS `_arch` (the audit arch of the trapped call).
pub const SI_ARCH: usize = 28;

fn get(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap_or([0; 8]))
}

fn put(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Offset of sigcontext's `cs, gs, fs, ss` (four u16) word.
const UC_CSGSFS: usize = UC_MCONTEXT + 144;

/// Loads the general registers, rip, eflags and the cs and ss selectors from `uc` (at least
/// [`UC_SIZE`] bytes) into `r`; the other selectors and the bases (not in the frame) keep
/// their values. cs matters to debuggers: gdb tells a 64-bit tracee from an i386 one by the
/// cs it reads with PTRACE_PEEKUSER (gdb/nat/x86-linux.c `x86_linux_ptrace_get_arch`: 0x33
/// is 64-bit), and the seccomp engine's exec template comes from here.
pub fn load_regs(uc: &[u8], r: &mut Regs) {
    for (i, reg) in SC_ORDER.iter().enumerate() {
        r.w[*reg] = get(uc, UC_MCONTEXT + i * 8);
    }
    let segs = get(uc, UC_CSGSFS);
    r.w[idx::CS] = segs & 0xffff;
    r.w[idx::SS] = segs >> 48;
}

/// Whether the page fault behind this frame's SIGSEGV was a write: the error code's write bit
/// (`X86_PF_WRITE`) of a page-fault vector. So a first write to a page the host has not mapped
/// is served as the write it is (a copy on write broken at once) instead of as a read that maps
/// the page read-only and faults again for the write: one round trip, as on Linux.
pub fn fault_was_write(uc: &[u8]) -> bool {
    use um_uapi::abi::signal::{X86_PF_WRITE, X86_TRAP_PF};
    get(uc, UC_TRAPNO) == X86_TRAP_PF && get(uc, UC_ERR) & X86_PF_WRITE != 0
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

/// Where the frame's FP state is (stub address) and how much of it to read first to learn its
/// size ([`fp_len`]): the legacy area, whose `sw_reserved` describes the rest.
pub fn fp_window(uc: &[u8], _uc_addr: u64) -> (u64, usize) {
    (fpstate_addr(uc), FP_LEGACY_SIZE)
}

/// The size of the frame's FP state from its head: `xstate_size` of an XSAVE frame (magic1
/// and a plausible size), else the legacy 512 bytes.
pub fn fp_len(head: &[u8]) -> usize {
    let word = |o: usize| {
        head.get(o..o + 4)
            .and_then(|s| s.try_into().ok())
            .map_or(0, u32::from_le_bytes)
    };
    let size = word(480) as usize;
    if word(464) == crate::signal::FP_XSTATE_MAGIC1
        && (FP_LEGACY_SIZE + 64..=1 << 16).contains(&size)
    {
        size
    } else {
        FP_LEGACY_SIZE
    }
}

/// The FP image: the whole window.
pub fn fp_regset(window: &[u8]) -> Option<Vec<u8>> {
    (window.len() >= FP_LEGACY_SIZE).then(|| window.to_vec())
}

/// Writes an FP image into the window: all of it but `sw_reserved` (464..512), which stays the
/// host's description of its frame (a zeroed or guest-written one would make the host's
/// sigreturn restore only the legacy area). False if the size differs or the image would make
/// the host's XRSTOR fault: a feature outside the host's xfeatures, a compacted or non-zero
/// reserved header, a reserved MXCSR bit.
pub fn set_fp_regset(window: &mut [u8], image: &[u8]) -> bool {
    if image.len() != window.len() || window.len() < FP_LEGACY_SIZE {
        return false;
    }
    let mut img = image.to_vec();
    img[464..FP_LEGACY_SIZE].copy_from_slice(&window[464..FP_LEGACY_SIZE]);
    let q = |b: &[u8], o: usize| get(b, o);
    let mask = match q(&img, 24) >> 32 {
        0 => 0xffbf,
        m => m,
    };
    if (q(&img, 24) & 0xffff_ffff) & !mask != 0 {
        return false;
    }
    if img.len() >= FP_LEGACY_SIZE + 64 {
        let xfeatures = q(window, 472);
        let header_ok = q(&img, 512) & !xfeatures == 0
            && q(&img, 520) == 0
            && img[528..576].iter().all(|&b| b == 0);
        if !header_ok {
            return false;
        }
    }
    window.copy_from_slice(&img);
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
            assert_eq!(
                &uc.uc_mcontext.gregs[libc::REG_CSGSFS as usize] as *const _ as usize - base,
                UC_CSGSFS
            );
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

    /// A host frame's XSAVE buffer: AVX (xfeatures 0x7), 832 bytes.
    fn host_fp() -> Vec<u8> {
        let mut b = vec![0u8; 832];
        put(&mut b, 24, 0x0000_ffff_0000_1f80); // mxcsr, mxcsr_mask
        b[464..468].copy_from_slice(&crate::signal::FP_XSTATE_MAGIC1.to_le_bytes());
        b[468..472].copy_from_slice(&836u32.to_le_bytes());
        put(&mut b, 472, 0x7);
        b[480..484].copy_from_slice(&832u32.to_le_bytes());
        put(&mut b, 512, 0x7);
        b
    }

    #[test]
    fn fp_len_from_the_host_description() {
        assert_eq!(fp_len(&host_fp()[..512]), 832);
        assert_eq!(fp_len(&[0u8; 512]), 512);
        let mut odd = host_fp();
        odd[480..484].copy_from_slice(&100u32.to_le_bytes());
        assert_eq!(
            fp_len(&odd[..512]),
            512,
            "an implausible size is not trusted"
        );
    }

    #[test]
    fn set_fp_regset_keeps_the_description_and_checks_the_header() {
        let mut window = host_fp();
        let mut img = host_fp();
        img[600] = 0x42; // a ymm upper half
        img[470] = 0xee; // a guest-written description
        assert!(set_fp_regset(&mut window, &img));
        assert_eq!(window[600], 0x42);
        assert_eq!(window[464..512], host_fp()[464..512]);
        for (off, v) in [(512, 0x1f_u64), (520, 1 << 63), (540, 1)] {
            let mut bad = host_fp();
            put(&mut bad, off, v);
            assert!(!set_fp_regset(&mut window, &bad), "header word at {off}");
        }
        let mut bad = host_fp();
        put(&mut bad, 24, 0x0000_ffff_0001_1f80);
        assert!(!set_fp_regset(&mut window, &bad), "reserved MXCSR bit");
        assert!(!set_fp_regset(&mut window, &[0u8; 512]), "wrong size");
        assert_eq!(fp_regset(&window).unwrap().len(), 832);
    }
}
