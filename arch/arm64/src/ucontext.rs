//! The host's signal frame as a seccomp-engine stub handler receives it on arm64: the
//! `ucontext` whose address the host passes in x2 (arch/arm64/include/uapi/asm/ucontext.h,
//! sigcontext.h), in the shared slot where the kernel reads and edits it in place. The same
//! API as `um_arch_x86::ucontext`. (The arm64 stub handler itself is not written yet: the
//! boot refuses `seccomp=on` on arm64, see `host::SECCOMP_STUB`.)

use crate::regs::{PC, PSTATE, Regs, SP};
use crate::signal::{FPSIMD_MAGIC, FPSTATE_SIZE, UC_MCONTEXT_OFF, image_to_regset};

/// Offset of `uc_mcontext` in `struct ucontext`.
pub const UC_MCONTEXT: usize = UC_MCONTEXT_OFF as usize;
/// Offset of `uc_sigmask`.
pub const UC_SIGMASK: usize = 40;
/// Offset of `sigcontext.regs[0]`.
const SC_REGS: usize = UC_MCONTEXT + 8;
/// Offset of `sigcontext.__reserved`: the first record is the `fpsimd_context`.
const SC_RESERVED: usize = UC_MCONTEXT + 288;
/// Bytes of the ucontext the kernel reads and writes (up to the reserved area).
pub const UC_SIZE: usize = SC_RESERVED;
/// `siginfo_t` offsets: `si_code`, `si_addr` (SIGSYS: `_call_addr`), SIGSYS `_syscall`.
pub const SI_CODE: usize = 8;
/// `si_addr`.
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

/// Loads x0..x30, sp, pc and pstate from `uc` into `r` (the syscall number and TLS keep
/// their values).
pub fn load_regs(uc: &[u8], r: &mut Regs) {
    for i in 0..=PSTATE {
        r.w[i] = get(uc, SC_REGS + i * 8);
    }
    const { assert!(SP == 31 && PC == 32) };
}

/// Stores `r` into `uc` and clears `uc_sigmask`.
pub fn store_regs(r: &Regs, uc: &mut [u8]) {
    for i in 0..=PSTATE {
        put(uc, SC_REGS + i * 8, r.w[i]);
    }
    put(uc, UC_SIGMASK, 0);
}

/// Whether the fault behind this frame's SIGSEGV was a write. Not read here yet (the ESR is an
/// `esr_context` record in `__reserved`, after the FP record, outside the part of the frame the
/// kernel copies): every not-present fault is served as a read, and a write then faults once
/// more for the copy on write.
pub fn fault_was_write(_uc: &[u8]) -> bool {
    false
}

/// The FP state: the `fpsimd_context` record at the start of `__reserved`.
pub fn fp_window(_uc: &[u8], uc_addr: u64) -> (u64, usize) {
    (uc_addr + SC_RESERVED as u64, FPSTATE_SIZE as usize)
}

/// The size of the frame's FP state: always the record's.
pub fn fp_len(head: &[u8]) -> usize {
    head.len()
}

/// The FP registers in the kernel's arm64 format (`host::get_fpregs`: the `fpsimd_context`
/// record image, header included), which is exactly the frame's record; None if the record
/// there is not an fpsimd_context.
pub fn fp_regset(window: &[u8]) -> Option<Vec<u8>> {
    image_to_regset(window).map(|_| window.to_vec())
}

/// Writes an FP image (the format of [`fp_regset`]) into the record; false on a wrong size or
/// record, on either side.
pub fn set_fp_regset(window: &mut [u8], image: &[u8]) -> bool {
    if window.len() != FPSTATE_SIZE as usize
        || u32::from_le_bytes(window[0..4].try_into().unwrap_or([0; 4])) != FPSIMD_MAGIC
        || image_to_regset(image).is_none()
    {
        return false;
    }
    window.copy_from_slice(image);
    true
}

/// The guest syscall a SIGSYS frame reports: registers as at entry, the number from siginfo.
pub fn syscall_regs(uc: &[u8], siginfo: &[u8], r: &mut Regs) {
    load_regs(uc, r);
    let nr = i32::from_le_bytes(
        siginfo[SI_SYSCALL..SI_SYSCALL + 4]
            .try_into()
            .unwrap_or([0; 4]),
    );
    r.set_syscall_nr(nr as i64 as u64);
    r.orig_x0 = r.w[0];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        assert_eq!(UC_MCONTEXT, 176);
        assert_eq!(SC_RESERVED, 464);
    }

    #[test]
    fn regs_round_trip() {
        let mut uc = vec![0x55u8; UC_SIZE];
        let mut r = Regs::default();
        for i in 0..=PSTATE {
            r.w[i] = 0x1000 + i as u64;
        }
        store_regs(&r, &mut uc);
        assert_eq!(get(&uc, UC_SIGMASK), 0);
        let mut back = Regs::default();
        load_regs(&uc, &mut back);
        assert_eq!(back.w[..=PSTATE], r.w[..=PSTATE]);
    }

    #[test]
    fn fp_window_is_the_record_image() {
        let mut img = crate::signal::initial_fp_image();
        img[16] = 0x42; // v0's low byte
        img[8] = 0x10; // fpsr
        let mut window = crate::signal::initial_fp_image().to_vec();
        assert!(set_fp_regset(&mut window, &img));
        assert_eq!(window, img.to_vec());
        assert_eq!(fp_regset(&window).unwrap(), img.to_vec());
        // Not an fpsimd record: refused both ways.
        let mut bad = vec![0u8; FPSTATE_SIZE as usize];
        assert!(fp_regset(&bad).is_none());
        assert!(!set_fp_regset(&mut bad, &img));
        assert!(!set_fp_regset(&mut window, &[0u8; 528]));
    }
}
