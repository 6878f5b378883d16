//! The x86_64 signal frame (arch/x86/kernel/signal.c, signal_64.c; arch/x86/include/asm/
//! sigframe.h; uapi asm/sigcontext.h): what a handler finds on its stack and what
//! rt_sigreturn reads back. Pure layout code, tested on every host.
//!
//! ```text
//! frame:  pretcode (8)            <- rsp at handler entry; `ret` pops it into rip
//!         ucontext (304): uc_flags, uc_link, uc_stack (24), uc_mcontext (sigcontext, 256),
//!                         uc_sigmask (8)
//!         siginfo (128)
//! fpstate: FXSAVE image (512), 64-byte aligned, above the frame
//! ```
//! The FP state is the legacy FXSAVE format (no XSAVE extension: `sw_reserved.magic1` is 0,
//! so `UC_FP_XSTATE` is clear and sigreturn reads 512 bytes).

use crate::regs::{Regs, idx};

/// Size of `struct rt_sigframe` (pretcode + ucontext + siginfo).
pub const FRAME_SIZE: u64 = 8 + UCONTEXT_SIZE + 128;
/// Size of `struct ucontext` on x86_64.
pub const UCONTEXT_SIZE: u64 = 8 + 8 + 24 + SIGCONTEXT_SIZE + 8;
/// Size of `struct sigcontext` (64-bit).
pub const SIGCONTEXT_SIZE: u64 = 256;
/// Size of the FXSAVE image.
pub const FPSTATE_SIZE: u64 = 512;
/// Offset of uc_mcontext within the frame.
pub const MCONTEXT_OFF: u64 = 8 + 8 + 8 + 24;
/// Offset of uc_sigmask within the frame.
pub const SIGMASK_OFF: u64 = MCONTEXT_OFF + SIGCONTEXT_SIZE;
/// Offset of uc_stack within the frame.
pub const STACK_OFF: u64 = 8 + 8 + 8;
/// Offset of siginfo within the frame.
pub const INFO_OFF: u64 = 8 + UCONTEXT_SIZE;
/// The red zone below rsp that a signal frame must skip (x86_64 ABI).
const REDZONE: u64 = 128;

/// `uc_flags`: UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS.
const UC_FLAGS: u64 = 0x2 | 0x4;

/// Order of the general registers in `struct sigcontext` (r8..r15, rdi, rsi, rbp, rbx, rdx,
/// rax, rcx, rsp, rip, eflags), as indexes into `user_regs_struct`.
pub(crate) const SC_ORDER: [usize; 18] = [
    idx::R8,
    idx::R9,
    idx::R10,
    idx::R11,
    idx::R12,
    idx::R13,
    idx::R14,
    idx::R15,
    idx::RDI,
    idx::RSI,
    idx::RBP,
    idx::RBX,
    idx::RDX,
    idx::RAX,
    idx::RCX,
    idx::RSP,
    idx::RIP,
    idx::EFLAGS,
];

/// Flags a handler or sigreturn may change (arch/x86/kernel/signal.c FIX_EFLAGS).
const FIX_EFLAGS: u64 = 0x40000 | 0x800 | 0x400 | 0x100 | 0x80 | 0x40 | 0x10 | 0x4 | 0x1 | 0x10000;

/// What a handler needs to be entered.
pub struct Delivery<'a> {
    pub signo: u32,
    pub handler: u64,
    pub restorer: u64,
    pub info: &'a [u8; 128],
    /// The mask to restore at sigreturn (the mask before delivery).
    pub old_mask: u64,
    /// The stack the frame goes on: `Some(top)` for the alternate stack, None for the
    /// interrupted stack.
    pub stack_top: Option<u64>,
    /// sigaltstack settings to save in uc_stack (sp, flags, size).
    pub altstack: (u64, i32, u64),
}

/// The result of building a frame: write `bytes` at `addr`, then run with `regs`.
pub struct Frame {
    pub addr: u64,
    pub bytes: Vec<u8>,
    pub regs: Regs,
}

fn put(b: &mut [u8], off: u64, v: u64) {
    let o = off as usize;
    b[o..o + 8].copy_from_slice(&v.to_le_bytes());
}

fn get(b: &[u8], off: u64) -> u64 {
    let o = off as usize;
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]))
}

/// Builds the frame for delivering a signal to a thread with registers `regs` and FP image
/// `fp` (arch/x86/kernel/signal_64.c `x64_setup_rt_frame`).
pub fn setup_rt_frame(regs: &Regs, fp: &[u8; 512], d: &Delivery<'_>) -> Frame {
    let top = d.stack_top.unwrap_or(regs.sp() - REDZONE);
    let fp_addr = (top - FPSTATE_SIZE) & !63;
    // The frame sits below, aligned so that (frame + 8) is 16-byte aligned: the handler starts
    // as if called (its return address, pretcode, just pushed).
    let frame = ((fp_addr - FRAME_SIZE) & !15) - 8;
    let total = (top - frame) as usize;
    let mut b = vec![0u8; total];
    put(&mut b, 0, d.restorer);
    put(&mut b, 8, UC_FLAGS);
    put(&mut b, 16, 0); // uc_link
    put(&mut b, STACK_OFF, d.altstack.0);
    b[(STACK_OFF + 8) as usize..(STACK_OFF + 12) as usize]
        .copy_from_slice(&d.altstack.1.to_le_bytes());
    put(&mut b, STACK_OFF + 16, d.altstack.2);
    for (i, r) in SC_ORDER.iter().enumerate() {
        put(&mut b, MCONTEXT_OFF + i as u64 * 8, regs.w[*r]);
    }
    // cs, gs, fs, ss as four u16.
    let segs = (regs.w[idx::CS] & 0xffff) | ((regs.w[idx::SS] & 0xffff) << 48);
    put(&mut b, MCONTEXT_OFF + 144, segs);
    // err, trapno, oldmask, cr2 stay 0 (oldmask is unused on x86_64).
    put(&mut b, MCONTEXT_OFF + 184, fp_addr);
    put(&mut b, SIGMASK_OFF, d.old_mask);
    b[INFO_OFF as usize..INFO_OFF as usize + 128].copy_from_slice(d.info);
    let fpo = (fp_addr - frame) as usize;
    b[fpo..fpo + 512].copy_from_slice(fp);
    // sw_reserved (bytes 464..512): no XSAVE extension here.
    b[fpo + 464..fpo + 512].fill(0);

    let mut r = *regs;
    r.w[idx::RDI] = d.signo as u64;
    r.w[idx::RSI] = frame + INFO_OFF;
    r.w[idx::RDX] = frame + 8;
    r.w[idx::RAX] = 0;
    r.w[idx::RSP] = frame;
    r.w[idx::RIP] = d.handler;
    // Clear DF, TF and RF for the handler.
    r.w[idx::EFLAGS] &= !(0x400 | 0x100 | 0x10000);
    r.w[idx::ORIG_RAX] = u64::MAX;
    Frame {
        addr: frame,
        bytes: b,
        regs: r,
    }
}

/// The FP state a handler starts with, to load once the frame is written: the init state
/// (arch/x86/kernel/signal.c `handle_signal` calls `fpu__clear_user_states` after
/// `setup_rt_frame`): FCW 0x37f, MXCSR 0x1f80, all registers zero, all x87 tags empty. The
/// interrupted state is in the frame, and rt_sigreturn brings it back.
pub fn handler_fp_image() -> Option<[u8; FPSTATE_SIZE as usize]> {
    let mut b = [0u8; FPSTATE_SIZE as usize];
    b[0..2].copy_from_slice(&0x37fu16.to_le_bytes()); // cwd
    b[24..28].copy_from_slice(&0x1f80u32.to_le_bytes()); // mxcsr
    b[28..32].copy_from_slice(&0xffffu32.to_le_bytes()); // mxcsr_mask
    Some(b)
}

/// What rt_sigreturn restores.
pub struct Restored {
    pub regs: Regs,
    pub fpstate_addr: u64,
    pub mask: u64,
    pub altstack: (u64, i32, u64),
}

/// Where rt_sigreturn finds the frame: the handler's `ret` popped pretcode.
pub fn frame_addr_at_sigreturn(regs: &Regs) -> u64 {
    regs.sp() - 8
}

/// Parses a frame (the `FRAME_SIZE` bytes at [`frame_addr_at_sigreturn`]) and computes the
/// registers to return to (arch/x86/kernel/signal_64.c `restore_sigcontext`).
pub fn restore_rt_frame(current: &Regs, b: &[u8]) -> Option<Restored> {
    if b.len() < FRAME_SIZE as usize {
        return None;
    }
    let mut r = *current;
    for (i, reg) in SC_ORDER.iter().enumerate() {
        let v = get(b, MCONTEXT_OFF + i as u64 * 8);
        if *reg == idx::EFLAGS {
            r.w[idx::EFLAGS] = (current.w[idx::EFLAGS] & !FIX_EFLAGS) | (v & FIX_EFLAGS);
        } else {
            r.w[*reg] = v;
        }
    }
    // The user code and stack segments are the only valid ones; keep the current values.
    r.w[idx::ORIG_RAX] = u64::MAX;
    let stack_flags = i32::from_le_bytes(
        b[(STACK_OFF + 8) as usize..(STACK_OFF + 12) as usize]
            .try_into()
            .ok()?,
    );
    Some(Restored {
        regs: r,
        fpstate_addr: get(b, MCONTEXT_OFF + 184),
        mask: get(b, SIGMASK_OFF),
        altstack: (get(b, STACK_OFF), stack_flags, get(b, STACK_OFF + 16)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    static_assertions::const_assert_eq!(UCONTEXT_SIZE, 304);
    static_assertions::const_assert_eq!(FRAME_SIZE, 440);
    // uc_mcontext is at 40 in struct ucontext, 48 in the frame (after pretcode).
    static_assertions::const_assert_eq!(MCONTEXT_OFF, 48);
    static_assertions::const_assert_eq!(INFO_OFF, 312);

    #[test]
    fn frame_round_trip() {
        let mut regs = Regs::default();
        for (i, w) in regs.w.iter_mut().enumerate() {
            *w = 0x1000 + i as u64;
        }
        regs.w[idx::RSP] = 0x7fff_0000_1234;
        regs.w[idx::EFLAGS] = 0x246;
        let mut fp = [0u8; 512];
        fp[0] = 0x7f;
        fp[24] = 0x80; // mxcsr
        let info = [7u8; 128];
        let d = Delivery {
            signo: 10,
            handler: 0x4000,
            restorer: 0x5000,
            info: &info,
            old_mask: 0xdead,
            stack_top: None,
            altstack: (0, 2, 0),
        };
        let f = setup_rt_frame(&regs, &fp, &d);
        // ABI: at handler entry rsp + 8 is 16-byte aligned, below the red zone.
        assert_eq!((f.addr + 8) % 16, 0);
        assert!(f.addr + f.bytes.len() as u64 <= regs.sp() - 128);
        assert_eq!(f.regs.pc(), 0x4000);
        assert_eq!(f.regs.w[idx::RDI], 10);
        assert_eq!(f.regs.w[idx::RSI], f.addr + INFO_OFF);
        assert_eq!(f.regs.w[idx::RDX], f.addr + 8);
        assert_eq!(get(&f.bytes, 0), 0x5000);
        assert_eq!(
            &f.bytes[INFO_OFF as usize..INFO_OFF as usize + 128],
            &info[..]
        );
        let fpa = get(&f.bytes, MCONTEXT_OFF + 184);
        assert_eq!(fpa % 64, 0);
        assert_eq!(f.bytes[(fpa - f.addr) as usize], 0x7f);
        // The handler returns: rsp = frame + 8; sigreturn finds the frame again.
        let mut at_ret = f.regs;
        at_ret.w[idx::RSP] = f.addr + 8;
        assert_eq!(frame_addr_at_sigreturn(&at_ret), f.addr);
        let back = restore_rt_frame(&at_ret, &f.bytes).unwrap();
        for r in SC_ORDER {
            if r != idx::EFLAGS {
                assert_eq!(back.regs.w[r], regs.w[r], "reg {r}");
            }
        }
        assert_eq!(back.regs.w[idx::EFLAGS] & FIX_EFLAGS, 0x246 & FIX_EFLAGS);
        assert_eq!(back.mask, 0xdead);
        assert_eq!(back.fpstate_addr, fpa);
    }

    #[test]
    fn handler_starts_with_the_init_fp_state() {
        let img = handler_fp_image().expect("x86 resets the FP state for a handler");
        assert_eq!(u16::from_le_bytes([img[0], img[1]]), 0x37f);
        assert_eq!(get(&img, 24) as u32, 0x1f80);
        assert!(
            img[32..].iter().all(|&b| b == 0),
            "st, xmm and sw_reserved zero"
        );
    }

    #[test]
    fn alternate_stack_is_used() {
        let mut regs = Regs::default();
        regs.w[idx::RSP] = 0x7fff_0000_0000;
        let d = Delivery {
            signo: 11,
            handler: 1,
            restorer: 2,
            info: &[0; 128],
            old_mask: 0,
            stack_top: Some(0x1000_0000),
            altstack: (0x0fff_0000, 1, 0x1_0000),
        };
        let f = setup_rt_frame(&regs, &[0; 512], &d);
        assert!(f.addr < 0x1000_0000 && f.addr > 0x0fff_0000);
    }
}
