//! The x86_64 signal frame (arch/x86/kernel/signal.c, signal_64.c; arch/x86/include/asm/
//! sigframe.h; uapi asm/sigcontext.h): what a handler finds on its stack and what
//! rt_sigreturn reads back. Pure layout code, tested on every host.
//!
//! ```text
//! frame:  pretcode (8)            <- rsp at handler entry; `ret` pops it into rip
//!         ucontext (304): uc_flags, uc_link, uc_stack (24), uc_mcontext (sigcontext, 256),
//!                         uc_sigmask (8)
//!         siginfo (128)
//! fpstate: the FP image (XSAVE, xstate_size bytes) + FP_XSTATE_MAGIC2 (4), 64-byte aligned,
//!          above the frame
//! ```
//! **The FP image** on x86_64 is the host's XSAVE standard-format buffer (ptrace
//! `NT_X86_XSTATE`, or the XSAVE area of the seccomp stub's host frame): the legacy FXSAVE
//! area (512), the XSAVE header (64), then the extended components (AVX, AVX-512, ...), with
//! the host's `sw_reserved` description (`struct _fpx_sw_bytes`: magic1, extended_size,
//! xfeatures, xstate_size) in bytes 464..512. The guest frame carries it exactly as Linux's
//! `copy_fpstate_to_sigframe` does (`UC_FP_XSTATE` set, magic2 after the buffer), so AVX state
//! survives handlers and whatever the handler's code does with it. On a host without XSAVE
//! the image is the 512-byte FXSAVE area and the frame has no extension. rt_sigreturn
//! ([`fp_image_from_frame`]) takes the extended state only when the frame's description
//! matches the image's (Linux `check_xstate_in_sigframe`); otherwise only the legacy area,
//! the rest reset (`fx_only`), and an invalid header or MXCSR makes the frame bad.

use crate::regs::{Regs, idx};

/// Size of `struct rt_sigframe` (pretcode + ucontext + siginfo).
pub const FRAME_SIZE: u64 = 8 + UCONTEXT_SIZE + 128;
/// Size of `struct ucontext` on x86_64.
pub const UCONTEXT_SIZE: u64 = 8 + 8 + 24 + SIGCONTEXT_SIZE + 8;
/// Size of `struct sigcontext` (64-bit).
pub const SIGCONTEXT_SIZE: u64 = 256;
/// Size of the legacy FXSAVE area (the whole FP image on a host without XSAVE).
pub const FPSTATE_SIZE: u64 = 512;
/// `fpx_sw_bytes.magic1`: the frame's FP state is in XSAVE format (uapi asm/sigcontext.h).
pub const FP_XSTATE_MAGIC1: u32 = 0x4650_5853;
/// The word after the XSAVE buffer in a frame (uapi asm/sigcontext.h).
pub const FP_XSTATE_MAGIC2: u32 = 0x4650_5845;
/// `uc_flags` bit: the frame's FP state has the XSAVE extension.
const UC_FP_XSTATE: u64 = 0x1;
/// Offsets in the FP image: `sw_reserved` (`struct _fpx_sw_bytes`) and the XSAVE header.
const SW_MAGIC1: usize = 464;
const SW_EXTENDED_SIZE: usize = 468;
const SW_XFEATURES: usize = 472;
const SW_XSTATE_SIZE: usize = 480;
const XSTATE_BV: usize = 512;
const XCOMP_BV: usize = 520;
const XSAVE_HDR_END: usize = 576;
/// MXCSR and MXCSR_MASK in the legacy area.
const MXCSR: usize = 24;
const MXCSR_MASK: usize = 28;
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

fn get32(b: &[u8], o: usize) -> u32 {
    b.get(o..o + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

fn get64(b: &[u8], o: usize) -> u64 {
    b.get(o..o + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// Whether `img` is an XSAVE image that describes itself (magic1, and sizes that match its
/// length), i.e. one that goes into a frame with the extension.
pub fn is_xsave_image(img: &[u8]) -> bool {
    img.len() > XSAVE_HDR_END
        && get32(img, SW_MAGIC1) == FP_XSTATE_MAGIC1
        && get32(img, SW_XSTATE_SIZE) as usize == img.len()
        && get32(img, SW_EXTENDED_SIZE) as usize == img.len() + 4
}

/// The MXCSR bits that may be set (MXCSR_MASK; 0 there means the default 0xffbf).
fn mxcsr_ok(img: &[u8], mask_from: &[u8]) -> bool {
    let mask = match get32(mask_from, MXCSR_MASK) {
        0 => 0xffbf,
        m => m,
    };
    get32(img, MXCSR) & !mask == 0
}

/// Builds the frame for delivering a signal to a thread with registers `regs` and FP image
/// `fp` (arch/x86/kernel/signal_64.c `x64_setup_rt_frame`).
pub fn setup_rt_frame(regs: &Regs, fp: &[u8], d: &Delivery<'_>) -> Frame {
    let top = d.stack_top.unwrap_or(regs.sp() - REDZONE);
    let xsave = is_xsave_image(fp);
    // fpu__alloc_mathframe: the XSAVE buffer and magic2, or the legacy area.
    let math = if xsave {
        fp.len() as u64 + 4
    } else {
        FPSTATE_SIZE
    };
    let fp_addr = (top - math) & !63;
    // The frame sits below, aligned so that (frame + 8) is 16-byte aligned: the handler starts
    // as if called (its return address, pretcode, just pushed).
    let frame = ((fp_addr - FRAME_SIZE) & !15) - 8;
    let total = (top - frame) as usize;
    let mut b = vec![0u8; total];
    put(&mut b, 0, d.restorer);
    put(
        &mut b,
        8,
        if xsave {
            UC_FLAGS | UC_FP_XSTATE
        } else {
            UC_FLAGS
        },
    );
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
    if xsave {
        b[fpo..fpo + fp.len()].copy_from_slice(fp);
        b[fpo + fp.len()..fpo + fp.len() + 4].copy_from_slice(&FP_XSTATE_MAGIC2.to_le_bytes());
    } else {
        let n = fp.len().min(512);
        b[fpo..fpo + n].copy_from_slice(&fp[..n]);
        // sw_reserved (bytes 464..512): no XSAVE extension.
        b[fpo + 464..fpo + 512].fill(0);
    }

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

/// The init FP state in the format of `current` (the thread's image): FCW 0x37f, MXCSR 0x1f80,
/// all registers zero, all x87 tags empty, every extended component (AVX, ...) in its init
/// state (`xstate_bv` = x87|SSE). The host's description (`sw_reserved`) and MXCSR_MASK are
/// kept. What exec starts a program with (Linux `fpstate_init`).
pub fn init_fp_image(current: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; current.len().max(FPSTATE_SIZE as usize)];
    b[0..2].copy_from_slice(&0x37fu16.to_le_bytes()); // cwd
    b[MXCSR..MXCSR + 4].copy_from_slice(&0x1f80u32.to_le_bytes());
    let mask = match get32(current, MXCSR_MASK) {
        0 => 0xffff,
        m => m,
    };
    b[MXCSR_MASK..MXCSR_MASK + 4].copy_from_slice(&mask.to_le_bytes());
    if let Some(sw) = current.get(SW_MAGIC1..XSTATE_BV) {
        b[SW_MAGIC1..XSTATE_BV].copy_from_slice(sw);
    }
    if b.len() >= XSAVE_HDR_END {
        b[XSTATE_BV..XSTATE_BV + 8].copy_from_slice(&0x3u64.to_le_bytes());
    }
    b
}

/// The FP state a handler starts with, to load once the frame is written: the init state
/// (arch/x86/kernel/signal.c `handle_signal` calls `fpu__clear_user_states` after
/// `setup_rt_frame`), in the format of `current`. The interrupted state is in the frame, and
/// rt_sigreturn brings it back.
pub fn handler_fp_image(current: &[u8]) -> Option<Vec<u8>> {
    Some(init_fp_image(current))
}

/// The FP image rt_sigreturn restores from the frame's FP state at `addr` (Linux
/// `fpu__restore_sig`), given the thread's `current` image (whose format and host description
/// the result keeps). `read(addr, len)` reads guest memory. With the XSAVE extension in the
/// frame (magic1, sizes equal to the image's, magic2 after it) the whole buffer, its header
/// checked as XRSTOR would (`xstate_bv` within xfeatures, standard format, reserved bytes
/// zero); otherwise the legacy area only, the extended state reset (`fx_only`). None (a bad
/// frame: SIGSEGV) if memory cannot be read, the header is invalid or MXCSR has reserved bits.
pub fn fp_image_from_frame(
    read: &mut dyn FnMut(u64, usize) -> Option<Vec<u8>>,
    addr: u64,
    current: &[u8],
) -> Option<Vec<u8>> {
    let legacy = read(addr, FPSTATE_SIZE as usize)?;
    let mut img = init_fp_image(current);
    let n = current.len();
    let extended = is_xsave_image(current)
        && get32(&legacy, SW_MAGIC1) == FP_XSTATE_MAGIC1
        && get32(&legacy, SW_XSTATE_SIZE) as usize == n
        && get32(&legacy, SW_EXTENDED_SIZE) as usize == n + 4
        && read(addr + n as u64, 4).is_some_and(|m| get32(&m, 0) == FP_XSTATE_MAGIC2);
    if extended {
        let all = read(addr, n)?;
        let xfeatures = get64(current, SW_XFEATURES);
        let header_ok = get64(&all, XSTATE_BV) & !xfeatures == 0
            && get64(&all, XCOMP_BV) == 0
            && all[XCOMP_BV + 8..XSAVE_HDR_END].iter().all(|&b| b == 0);
        if !header_ok {
            return None;
        }
        img.copy_from_slice(&all);
    } else {
        img[..SW_MAGIC1].copy_from_slice(&legacy[..SW_MAGIC1]);
    }
    // Always the host's description of the format, whatever the frame said.
    if let Some(sw) = current.get(SW_MAGIC1..XSTATE_BV) {
        img[SW_MAGIC1..XSTATE_BV].copy_from_slice(sw);
    }
    mxcsr_ok(&img, current).then_some(img)
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
        let img = handler_fp_image(&[0; 512]).expect("x86 resets the FP state for a handler");
        assert_eq!(img.len(), 512);
        assert_eq!(u16::from_le_bytes([img[0], img[1]]), 0x37f);
        assert_eq!(get(&img, 24) as u32, 0x1f80);
        assert!(
            img[32..].iter().all(|&b| b == 0),
            "st, xmm and sw_reserved zero"
        );
        // XSAVE format: the host's description kept, AVX and later in their init state.
        let cur = xsave_image(832, 0x7);
        let img = handler_fp_image(&cur).unwrap();
        assert_eq!(img.len(), 832);
        assert_eq!(&img[464..512], &cur[464..512]);
        assert_eq!(get64(&img, XSTATE_BV), 0x3);
        assert!(img[32..464].iter().chain(&img[576..]).all(|&b| b == 0));
    }

    /// An XSAVE image as the host gives it: AVX (xfeatures 0x7), `len` bytes, patterned.
    fn xsave_image(len: usize, xfeatures: u64) -> Vec<u8> {
        let mut b: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        b[MXCSR..MXCSR + 4].copy_from_slice(&0x1f80u32.to_le_bytes());
        b[MXCSR_MASK..MXCSR_MASK + 4].copy_from_slice(&0xffffu32.to_le_bytes());
        b[464..512].fill(0);
        b[SW_MAGIC1..SW_MAGIC1 + 4].copy_from_slice(&FP_XSTATE_MAGIC1.to_le_bytes());
        b[SW_EXTENDED_SIZE..SW_EXTENDED_SIZE + 4].copy_from_slice(&(len as u32 + 4).to_le_bytes());
        b[SW_XFEATURES..SW_XFEATURES + 8].copy_from_slice(&xfeatures.to_le_bytes());
        b[SW_XSTATE_SIZE..SW_XSTATE_SIZE + 4].copy_from_slice(&(len as u32).to_le_bytes());
        b[XSTATE_BV..XSTATE_BV + 8].copy_from_slice(&0x7u64.to_le_bytes());
        b[XCOMP_BV..XSAVE_HDR_END].fill(0);
        b
    }

    fn deliver(fp: &[u8]) -> (Frame, u64) {
        let mut regs = Regs::default();
        regs.w[idx::RSP] = 0x7fff_0000_1000;
        let d = Delivery {
            signo: 10,
            handler: 0x4000,
            restorer: 0x5000,
            info: &[0; 128],
            old_mask: 0,
            stack_top: None,
            altstack: (0, 2, 0),
        };
        let f = setup_rt_frame(&regs, fp, &d);
        let fpa = get(&f.bytes, MCONTEXT_OFF + 184);
        (f, fpa)
    }

    /// Reads guest memory from a delivered frame.
    fn reader(f: &Frame) -> impl FnMut(u64, usize) -> Option<Vec<u8>> + '_ {
        move |a, n| {
            let o = a.checked_sub(f.addr)? as usize;
            f.bytes.get(o..o + n).map(<[u8]>::to_vec)
        }
    }

    #[test]
    fn xsave_state_round_trips_through_a_frame() {
        let cur = xsave_image(832, 0x7);
        let (f, fpa) = deliver(&cur);
        assert_eq!(fpa % 64, 0);
        assert_eq!(get(&f.bytes, 8) & UC_FP_XSTATE, UC_FP_XSTATE, "uc_flags");
        let o = (fpa - f.addr) as usize;
        assert_eq!(&f.bytes[o..o + 832], &cur[..]);
        assert_eq!(get32(&f.bytes, o + 832), FP_XSTATE_MAGIC2);
        assert!(fpa + 836 <= 0x7fff_0000_1000 - 128, "below the red zone");
        let back = fp_image_from_frame(&mut reader(&f), fpa, &cur).unwrap();
        assert_eq!(back, cur);
    }

    #[test]
    fn bad_xsave_frames() {
        let cur = xsave_image(832, 0x7);
        let (f, fpa) = deliver(&cur);
        let o = (fpa - f.addr) as usize;
        let with = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut g = Frame {
                addr: f.addr,
                bytes: f.bytes.clone(),
                regs: f.regs,
            };
            edit(&mut g.bytes);
            fp_image_from_frame(&mut reader(&g), fpa, &cur)
        };
        // A feature the host does not have, a compacted header, reserved header bytes, a
        // reserved MXCSR bit: a bad frame.
        assert_eq!(with(&|b| b[o + XSTATE_BV] = 0x1f), None);
        assert_eq!(with(&|b| b[o + XCOMP_BV + 7] = 0x80), None);
        assert_eq!(with(&|b| b[o + 560] = 1), None);
        assert_eq!(with(&|b| b[o + MXCSR + 2] = 0x01), None);
        // DAZ (bit 6) is reserved where MXCSR_MASK says so.
        let mut cur_mask = cur.clone();
        cur_mask[MXCSR_MASK..MXCSR_MASK + 4].copy_from_slice(&0xffbfu32.to_le_bytes());
        let g = with(&|b| b[o + MXCSR] = 0xc0);
        assert!(g.is_some());
        let mut g = Frame {
            addr: f.addr,
            bytes: f.bytes.clone(),
            regs: f.regs,
        };
        g.bytes[o + MXCSR] = 0xc0;
        assert_eq!(fp_image_from_frame(&mut reader(&g), fpa, &cur_mask), None);
        // No magic2, or a description that does not match: the legacy area only (fx_only).
        let fx = with(&|b| b[o + 832] = 0).unwrap();
        assert_eq!(&fx[..464], &cur[..464]);
        assert_eq!(
            &fx[464..512],
            &cur[464..512],
            "the host's description stays"
        );
        assert_eq!(get64(&fx, XSTATE_BV), 0x3);
        assert!(fx[576..].iter().all(|&b| b == 0), "extended state reset");
        let fx = with(&|b| b[o + SW_XSTATE_SIZE] = 0).unwrap();
        assert_eq!(get64(&fx, XSTATE_BV), 0x3);
        // A guest that wrote its own sw_reserved does not change the image's.
        let sw = with(&|b| b[o + SW_XFEATURES] = 0xff).unwrap();
        assert_eq!(&sw[464..512], &cur[464..512]);
        // Unreadable memory.
        assert_eq!(fp_image_from_frame(&mut |_, _| None, fpa, &cur), None);
    }

    #[test]
    fn legacy_images_stay_legacy() {
        let mut cur = vec![0u8; 512];
        cur[MXCSR..MXCSR + 4].copy_from_slice(&0x1f80u32.to_le_bytes());
        cur[100] = 0x55;
        let (f, fpa) = deliver(&cur);
        assert_eq!(get(&f.bytes, 8) & UC_FP_XSTATE, 0);
        let back = fp_image_from_frame(&mut reader(&f), fpa, &cur).unwrap();
        assert_eq!(back.len(), 512);
        assert_eq!(back[100], 0x55);
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
