//! The arm64 signal frame (arch/arm64/kernel/signal.c; uapi asm/sigcontext.h, asm/ucontext.h):
//! what a handler finds on its stack and what rt_sigreturn reads back, and the FP image format
//! the kernel passes around. Pure layout code, tested on every host.
//!
//! ```text
//! frame:  siginfo (128)                          <- sp at handler entry (16-byte aligned)
//!         ucontext (4560): uc_flags, uc_link, uc_stack (24), uc_sigmask (8), pad to 128 bytes
//!                          of sigset, uc_mcontext at +176 = sigcontext (4384):
//!                            fault_address, regs[31], sp, pc, pstate,
//!                            __reserved[4096]: fpsimd_context (528), terminator {0, 0}
//! record: {fp, lr} (16)                          <- x29 at handler entry
//! ```
//! The handler gets x0 = signo, x1 = &info, x2 = &uc, x29 = &record, x30 = the return
//! trampoline, pc = handler. The trampoline is `sa_restorer` when the handler came with
//! `SA_RESTORER` (musl passes it), else the vDSO's `__kernel_rt_sigreturn` (Linux
//! `setup_return`; glibc relies on it): the caller decides and passes it in
//! [`Delivery::restorer`] (see `vdso.rs`). No `esr_context` record is written
//! (as the C port), and no SVE/SME state (`NT_PRFPREG` is the FPSIMD view of it).
//!
//! **The FP image.** The kernel treats FP state as an opaque image of [`FPSTATE_SIZE`] bytes
//! (fork copies it, exec resets it, signal delivery stores it in the frame, rt_sigreturn reads
//! it back from `Restored::fpstate_addr`). On arm64 the image *is* the frame's
//! `fpsimd_context` record (magic, size, fpsr, fpcr, vregs), so the frame code copies it
//! verbatim and a frame's record can be handed back unchanged; `host::get_fpregs` and
//! `set_fpregs` convert it to and from the `NT_PRFPREG` regset (`user_fpsimd_state`: vregs,
//! fpsr, fpcr, 8 reserved bytes), and a record with a wrong magic or size is refused as Linux's
//! `restore_fpsimd_context` does. Note the record's payload is 520 bytes and the regset 528:
//! the C port once compared the two and silently lost FP state across signals.

use crate::regs::{PC, PSTATE, Regs, SP, pstate};

/// Size of `struct siginfo`.
pub const SIGINFO_SIZE: u64 = 128;
/// Offset of `uc_mcontext` in `struct ucontext` (168 rounded up to sigcontext's 16-byte
/// alignment).
pub const UC_MCONTEXT_OFF: u64 = 176;
/// Size of `struct sigcontext`: fault_address, 31 regs, sp, pc, pstate, 4096 reserved.
pub const SIGCONTEXT_SIZE: u64 = 288 + RESERVED_SIZE;
/// Size of `sigcontext.__reserved`.
pub const RESERVED_SIZE: u64 = 4096;
/// Size of `struct ucontext`.
pub const UCONTEXT_SIZE: u64 = UC_MCONTEXT_OFF + SIGCONTEXT_SIZE;
/// Size of `struct rt_sigframe` (siginfo + ucontext); already a multiple of 16.
pub const FRAME_SIZE: u64 = SIGINFO_SIZE + UCONTEXT_SIZE;
/// Offset of the ucontext in the frame.
pub const UC_OFF: u64 = SIGINFO_SIZE;
/// Offset of uc_stack in the frame.
pub const STACK_OFF: u64 = UC_OFF + 16;
/// Offset of uc_sigmask in the frame.
pub const SIGMASK_OFF: u64 = UC_OFF + 40;
/// Offset of the sigcontext in the frame.
pub const MCONTEXT_OFF: u64 = UC_OFF + UC_MCONTEXT_OFF;
/// Offset of `__reserved` (the context records) in the frame.
pub const RESERVED_OFF: u64 = MCONTEXT_OFF + 288;
/// `FPSIMD_MAGIC`.
pub const FPSIMD_MAGIC: u32 = 0x4650_8001;
/// `ESR_MAGIC` (a record rt_sigreturn skips).
pub const ESR_MAGIC: u32 = 0x4553_5201;
/// Size of `struct fpsimd_context` (header 8 + fpsr 4 + fpcr 4 + 32 x 16 vregs), which is also
/// the size of the kernel's FP image on arm64.
pub const FPSTATE_SIZE: u64 = 528;
/// Size of `struct frame_record` {fp, lr}.
const RECORD_SIZE: u64 = 16;

/// What a handler needs to be entered (the same fields as on x86_64).
pub struct Delivery<'a> {
    pub signo: u32,
    pub handler: u64,
    pub restorer: u64,
    pub info: &'a [u8; 128],
    /// The mask to restore at sigreturn (the mask before delivery).
    pub old_mask: u64,
    /// `Some(top)` for the alternate stack, None for the interrupted stack.
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

/// What rt_sigreturn restores.
pub struct Restored {
    pub regs: Regs,
    /// Guest address of the frame's `fpsimd_context` record (the FP image).
    pub fpstate_addr: u64,
    pub mask: u64,
    pub altstack: (u64, i32, u64),
}

fn put(b: &mut [u8], off: u64, v: u64) {
    let o = off as usize;
    b[o..o + 8].copy_from_slice(&v.to_le_bytes());
}

fn put32(b: &mut [u8], off: u64, v: u32) {
    let o = off as usize;
    b[o..o + 4].copy_from_slice(&v.to_le_bytes());
}

fn get(b: &[u8], off: u64) -> u64 {
    let o = off as usize;
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]))
}

fn get32(b: &[u8], off: u64) -> u32 {
    let o = off as usize;
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap_or([0; 4]))
}

/// The FP image of a fresh program (Linux `fpsimd_flush_thread`): all registers, FPSR and FPCR
/// zero.
pub fn initial_fp_image() -> [u8; FPSTATE_SIZE as usize] {
    let mut b = [0u8; FPSTATE_SIZE as usize];
    put32(&mut b, 0, FPSIMD_MAGIC);
    put32(&mut b, 4, FPSTATE_SIZE as u32);
    b
}

/// The FP state a handler starts with, if it is not the interrupted one: `None`, because
/// arm64 keeps V0-V31, FPSR and FPCR for the handler (arch/arm64/kernel/signal.c
/// `setup_return` resets only SME streaming mode, ZA and FPMR, none of which exist here).
pub fn handler_fp_image(_current: &[u8]) -> Option<Vec<u8>> {
    None
}

/// The FP image exec starts a program with ([`initial_fp_image`]; the same format whatever
/// `current` is).
pub fn init_fp_image(_current: &[u8]) -> Vec<u8> {
    initial_fp_image().to_vec()
}

/// The FP image rt_sigreturn restores: the `fpsimd_context` record at `addr` (the frame's
/// `__reserved`), read with `read(addr, len)`; None (a bad frame) if it cannot be read or is
/// not an fpsimd_context of the right size (Linux `restore_fpsimd_context`).
pub fn fp_image_from_frame(
    read: &mut dyn FnMut(u64, usize) -> Option<Vec<u8>>,
    addr: u64,
    _current: &[u8],
) -> Option<Vec<u8>> {
    let b = read(addr, FPSTATE_SIZE as usize)?;
    image_to_regset(&b).map(|_| b)
}

/// Converts an `NT_PRFPREG` regset (`user_fpsimd_state`: vregs[32], fpsr, fpcr, reserved[2])
/// into the FP image (an `fpsimd_context` record).
pub fn regset_to_image(r: &[u8; FPSTATE_SIZE as usize]) -> [u8; FPSTATE_SIZE as usize] {
    let mut b = initial_fp_image();
    b[8..12].copy_from_slice(&r[512..516]); // fpsr
    b[12..16].copy_from_slice(&r[516..520]); // fpcr
    b[16..528].copy_from_slice(&r[0..512]);
    b
}

/// Converts an FP image back to the `NT_PRFPREG` regset; `None` if its header is not an
/// `fpsimd_context` (Linux `restore_fpsimd_context`: wrong magic or size is `-EINVAL`).
pub fn image_to_regset(b: &[u8]) -> Option<[u8; FPSTATE_SIZE as usize]> {
    if b.len() != FPSTATE_SIZE as usize
        || get32(b, 0) != FPSIMD_MAGIC
        || get32(b, 4) != FPSTATE_SIZE as u32
    {
        return None;
    }
    let mut r = [0u8; FPSTATE_SIZE as usize];
    r[0..512].copy_from_slice(&b[16..528]);
    r[512..516].copy_from_slice(&b[8..12]);
    r[516..520].copy_from_slice(&b[12..16]);
    Some(r)
}

/// Builds the frame for delivering a signal to a thread with registers `regs` and FP image
/// `fp` (arch/arm64/kernel/signal.c `get_sigframe`, `setup_sigframe`, `setup_return`).
pub fn setup_rt_frame(regs: &Regs, fp: &[u8], d: &Delivery<'_>) -> Frame {
    // The image is the record itself; anything else (never produced here) becomes the init
    // record rather than a malformed frame.
    let init = initial_fp_image();
    let fp: &[u8] = if image_to_regset(fp).is_some() {
        fp
    } else {
        &init
    };
    // arm64 has no red zone: the frame goes right below sp (or the alternate stack's top).
    let top = d.stack_top.unwrap_or(regs.sp());
    let record = (top.wrapping_sub(RECORD_SIZE)) & !15;
    let frame = record.wrapping_sub(FRAME_SIZE);
    let total = top.wrapping_sub(frame) as usize;
    let mut b = vec![0u8; total];
    b[..SIGINFO_SIZE as usize].copy_from_slice(d.info);
    // uc_flags and uc_link stay 0.
    put(&mut b, STACK_OFF, d.altstack.0);
    b[(STACK_OFF + 8) as usize..(STACK_OFF + 12) as usize]
        .copy_from_slice(&d.altstack.1.to_le_bytes());
    put(&mut b, STACK_OFF + 16, d.altstack.2);
    put(&mut b, SIGMASK_OFF, d.old_mask);
    // fault_address: Linux stores the thread's last fault address; we have it for the
    // synchronous fault signals (si_addr, kernel si_code > 0).
    let si_code = i32::from_le_bytes([d.info[8], d.info[9], d.info[10], d.info[11]]);
    let fault = matches!(d.signo, 4 | 5 | 7 | 8 | 11) && si_code > 0;
    put(
        &mut b,
        MCONTEXT_OFF,
        if fault { get(d.info, 16) } else { 0 },
    );
    for i in 0..31 {
        put(&mut b, MCONTEXT_OFF + 8 + i as u64 * 8, regs.w[i]);
    }
    put(&mut b, MCONTEXT_OFF + 256, regs.w[SP]);
    put(&mut b, MCONTEXT_OFF + 264, regs.w[PC]);
    put(&mut b, MCONTEXT_OFF + 272, regs.w[PSTATE]);
    let fpo = RESERVED_OFF as usize;
    b[fpo..fpo + FPSTATE_SIZE as usize].copy_from_slice(fp);
    // The header is ours, whatever the image said.
    put32(&mut b, RESERVED_OFF, FPSIMD_MAGIC);
    put32(&mut b, RESERVED_OFF + 4, FPSTATE_SIZE as u32);
    // Terminator {magic 0, size 0} right after: already zero.
    // Frame record for unwinders: the interrupted fp and lr.
    let ro = (record - frame) as usize;
    b[ro..ro + 8].copy_from_slice(&regs.w[29].to_le_bytes());
    b[ro + 8..ro + 16].copy_from_slice(&regs.w[30].to_le_bytes());

    let mut r = *regs;
    r.w[0] = d.signo as u64;
    r.w[1] = frame;
    r.w[2] = frame + UC_OFF;
    r.w[29] = record;
    r.w[30] = d.restorer;
    r.w[SP] = frame;
    r.w[PC] = d.handler;
    // A handler starts with BTYPE clear (we map no BTI-guarded pages) and TCO clear.
    r.w[PSTATE] &= !(pstate::BTYPE_MASK | pstate::TCO);
    r.syscallno = u64::MAX;
    Frame {
        addr: frame,
        bytes: b,
        regs: r,
    }
}

/// Where rt_sigreturn finds the frame: at sp (the handler returned with sp where it started).
pub fn frame_addr_at_sigreturn(regs: &Regs) -> u64 {
    regs.sp()
}

/// Walks the context records in `__reserved` (Linux `parse_user_sigframe`): returns the offset
/// in the frame of the one `fpsimd_context`; `None` for a missing or repeated one, a record of
/// a kind we never write (SVE, ZA, extra_context), or a malformed list.
fn find_fpsimd(b: &[u8]) -> Option<u64> {
    let mut off = 0u64;
    let mut fpsimd = None;
    loop {
        if off + 8 > RESERVED_SIZE {
            return None;
        }
        let magic = get32(b, RESERVED_OFF + off);
        let size = get32(b, RESERVED_OFF + off + 4) as u64;
        match magic {
            0 => {
                return if size == 0 { fpsimd } else { None };
            }
            FPSIMD_MAGIC => {
                if fpsimd.is_some() || size != FPSTATE_SIZE {
                    return None;
                }
                fpsimd = Some(RESERVED_OFF + off);
            }
            ESR_MAGIC => {}
            _ => return None,
        }
        if size < 8 || size % 16 != 0 || off + size > RESERVED_SIZE {
            return None;
        }
        off += size;
    }
}

/// Parses a frame (the `FRAME_SIZE` bytes at [`frame_addr_at_sigreturn`]) and computes the
/// registers to return to (arch/arm64/kernel/signal.c `sys_rt_sigreturn`, `restore_sigframe`).
/// `None` is a bad frame (the caller kills with SIGSEGV): sp not 16-byte aligned, a PSTATE that
/// is not EL0t with DAIF clear, or no valid `fpsimd_context`.
pub fn restore_rt_frame(current: &Regs, b: &[u8]) -> Option<Restored> {
    if b.len() < FRAME_SIZE as usize || current.sp() & 15 != 0 {
        return None;
    }
    let frame = current.sp();
    let mut r = *current;
    for i in 0..31 {
        r.w[i] = get(b, MCONTEXT_OFF + 8 + i as u64 * 8);
    }
    r.w[SP] = get(b, MCONTEXT_OFF + 256);
    r.w[PC] = get(b, MCONTEXT_OFF + 264);
    r.w[PSTATE] = pstate::filter_user(get(b, MCONTEXT_OFF + 272))?;
    // forget_syscall: no restart of rt_sigreturn itself.
    r.syscallno = u64::MAX;
    r.orig_x0 = r.w[0];
    let fp_off = find_fpsimd(b)?;
    let flags = i32::from_le_bytes(
        b[(STACK_OFF + 8) as usize..(STACK_OFF + 12) as usize]
            .try_into()
            .ok()?,
    );
    Some(Restored {
        regs: r,
        fpstate_addr: frame + fp_off,
        mask: get(b, SIGMASK_OFF),
        altstack: (get(b, STACK_OFF), flags, get(b, STACK_OFF + 16)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    static_assertions::const_assert_eq!(UCONTEXT_SIZE, 4560);
    static_assertions::const_assert_eq!(FRAME_SIZE, 4688);
    static_assertions::const_assert_eq!(FRAME_SIZE % 16, 0);
    // offsetof(struct rt_sigframe, uc.uc_mcontext.__reserved) = 128 + 176 + 288.
    static_assertions::const_assert_eq!(RESERVED_OFF, 592);
    static_assertions::const_assert_eq!(MCONTEXT_OFF % 16, 0);

    fn sample_regs() -> Regs {
        let mut regs = Regs::default();
        for (i, w) in regs.w.iter_mut().enumerate() {
            *w = 0x1000 + i as u64;
        }
        regs.w[SP] = 0x7fff_0000_1238; // deliberately not 16-byte aligned
        regs.w[PSTATE] = 0x6000_0000 | pstate::BTYPE_MASK;
        regs
    }

    #[test]
    fn fp_image_round_trip() {
        let mut rs = [0u8; 528];
        for (i, v) in rs.iter_mut().enumerate().take(520) {
            *v = i as u8;
        }
        let img = regset_to_image(&rs);
        assert_eq!(get32(&img, 0), FPSIMD_MAGIC);
        assert_eq!(get32(&img, 4), 528);
        assert_eq!(&img[8..12], &rs[512..516]); // fpsr first in the record
        assert_eq!(&img[16..32], &rs[0..16]); // v0
        let back = image_to_regset(&img).unwrap();
        assert_eq!(&back[..520], &rs[..520]);
        let mut bad = img;
        bad[4] = 8; // size 520 + 8 header would be "payload" confusion: refused
        assert!(image_to_regset(&bad).is_none());
        assert!(image_to_regset(&img[..520]).is_none());
        assert!(image_to_regset(&initial_fp_image()).is_some());
    }

    #[test]
    fn handler_keeps_the_fp_state() {
        assert!(handler_fp_image(&initial_fp_image()).is_none());
    }

    #[test]
    fn frame_layout_and_round_trip() {
        let regs = sample_regs();
        let mut fp = initial_fp_image();
        fp[8] = 0x11; // fpsr
        fp[16] = 0x77; // v0 byte 0
        let mut info = [0u8; 128];
        info[0] = 11;
        info[8] = 1; // SEGV_MAPERR
        info[16..24].copy_from_slice(&0xdead_b000u64.to_le_bytes());
        let d = Delivery {
            signo: 11,
            handler: 0x4000,
            restorer: 0x5000,
            info: &info,
            old_mask: 0xbeef,
            stack_top: None,
            altstack: (0, 2, 0),
        };
        let f = setup_rt_frame(&regs, &fp, &d);
        assert_eq!(f.addr % 16, 0);
        assert_eq!(f.addr + f.bytes.len() as u64, regs.sp());
        let record = f.regs.w[29];
        assert_eq!(record % 16, 0);
        assert_eq!(record, f.addr + FRAME_SIZE);
        assert!(record + 16 <= regs.sp());
        assert_eq!(get(&f.bytes, record - f.addr), regs.w[29]);
        assert_eq!(get(&f.bytes, record - f.addr + 8), regs.w[30]);
        assert_eq!(
            (f.regs.w[0], f.regs.w[1], f.regs.w[2]),
            (11, f.addr, f.addr + 128)
        );
        assert_eq!(
            (f.regs.pc(), f.regs.w[30], f.regs.sp()),
            (0x4000, 0x5000, f.addr)
        );
        assert_eq!(f.regs.w[PSTATE] & pstate::BTYPE_MASK, 0);
        assert_eq!(&f.bytes[..128], &info[..]);
        assert_eq!(get(&f.bytes, MCONTEXT_OFF), 0xdead_b000); // fault_address
        assert_eq!(get(&f.bytes, MCONTEXT_OFF + 8 + 7 * 8), regs.w[7]);
        assert_eq!(get32(&f.bytes, RESERVED_OFF), FPSIMD_MAGIC);
        assert_eq!(get32(&f.bytes, RESERVED_OFF + 4), 528);
        assert_eq!(f.bytes[RESERVED_OFF as usize + 8], 0x11);
        // terminator
        assert_eq!(get(&f.bytes, RESERVED_OFF + 528), 0);

        // The handler returns through the restorer: sp is back at the frame.
        let mut at_ret = f.regs;
        at_ret.w[0] = 0;
        assert_eq!(frame_addr_at_sigreturn(&at_ret), f.addr);
        let back = restore_rt_frame(&at_ret, &f.bytes[..FRAME_SIZE as usize]).unwrap();
        for i in 0..31 {
            assert_eq!(back.regs.w[i], regs.w[i], "x{i}");
        }
        assert_eq!(back.regs.sp(), regs.sp());
        assert_eq!(back.regs.pc(), regs.pc());
        assert_eq!(back.regs.w[PSTATE], regs.w[PSTATE]);
        assert_eq!(back.mask, 0xbeef);
        assert_eq!(back.fpstate_addr, f.addr + RESERVED_OFF);
        let img = &f.bytes[RESERVED_OFF as usize..(RESERVED_OFF + FPSTATE_SIZE) as usize];
        assert_eq!(img, &fp[..]);
    }

    #[test]
    fn bad_frames_are_refused() {
        let regs = sample_regs();
        let d = Delivery {
            signo: 10,
            handler: 1,
            restorer: 2,
            info: &[0; 128],
            old_mask: 0,
            stack_top: None,
            altstack: (0, 2, 0),
        };
        let f = setup_rt_frame(&regs, &initial_fp_image(), &d);
        let at_ret = f.regs;
        let ok = &f.bytes[..FRAME_SIZE as usize];
        assert!(restore_rt_frame(&at_ret, ok).is_some());
        let mut misaligned = at_ret;
        misaligned.w[SP] += 8;
        assert!(restore_rt_frame(&misaligned, ok).is_none());
        // EL1 in the saved PSTATE.
        let mut b = ok.to_vec();
        put(&mut b, MCONTEXT_OFF + 272, 0x5);
        assert!(restore_rt_frame(&at_ret, &b).is_none());
        // No fpsimd record.
        let mut b = ok.to_vec();
        put(&mut b, RESERVED_OFF, 0);
        assert!(restore_rt_frame(&at_ret, &b).is_none());
        // An unknown record kind.
        let mut b = ok.to_vec();
        put32(&mut b, RESERVED_OFF + 528, 0x5356_4501); // SVE_MAGIC
        put32(&mut b, RESERVED_OFF + 532, 16);
        assert!(restore_rt_frame(&at_ret, &b).is_none());
        // An esr record before the terminator is skipped.
        let mut b = ok.to_vec();
        put32(&mut b, RESERVED_OFF + 528, ESR_MAGIC);
        put32(&mut b, RESERVED_OFF + 532, 16);
        assert!(restore_rt_frame(&at_ret, &b).is_some());
    }

    #[test]
    fn alternate_stack_is_used() {
        let regs = sample_regs();
        let d = Delivery {
            signo: 11,
            handler: 1,
            restorer: 2,
            info: &[0; 128],
            old_mask: 0,
            stack_top: Some(0x1000_0000),
            altstack: (0x0fff_0000, 1, 0x1_0000),
        };
        let f = setup_rt_frame(&regs, &initial_fp_image(), &d);
        assert!(f.addr < 0x1000_0000 && f.addr > 0x0fff_0000);
        assert_eq!(get(&f.bytes, STACK_OFF), 0x0fff_0000);
        assert_eq!(get(&f.bytes, STACK_OFF + 16), 0x1_0000);
    }
}
