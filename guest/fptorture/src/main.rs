//! Guest test `fptorture`: the FP/SIMD registers and the FP control/status registers of a thread
//! survive signal handlers, preemption and thread switches.
//!
//! Registers checked: on x86_64 xmm0-15, MXCSR, the x87 control word, the x87 status word (its
//! stack top and exception flags) and st0-st3; on aarch64 v0-v31, FPCR and FPSR.
//!
//! * Each of [`WORKERS`] threads loads thread-specific patterns into all of them (rounding modes,
//!   exception masks, flush-to-zero and sticky status flags differ per thread), then checks them
//!   in a loop inside one `asm!` block (store them to memory, compare with the values read right
//!   after loading; no libc call anywhere in between). Two threads only spin; one makes a raw
//!   `sched_yield` between checks, one `sched_yield` and every 8th check a 20 us `nanosleep`,
//!   with all registers live across the system calls (which Linux preserves).
//! * Meanwhile the main thread sends each worker [`SIGNALS`] SIGUSR1 with tgkill, one at a time,
//!   waiting until the handler ran before the next: the handler overwrites every one of those
//!   registers with garbage and returns, so sigreturn must restore them. More threads than cores
//!   (both processes below run at once) give preemption and thread switches.
//! * One worker first forks with a raw system call, registers loaded: the child checks them in
//!   asm and exits 0 if they are intact.
//! * On x86_64 the handler also checks that it starts with MXCSR 0x1f80 and x87 control word
//!   0x37f, the init FP state Linux gives every handler (arch/x86/kernel/signal.c
//!   `handle_signal` calls `fpu__clear_user_states`). aarch64 keeps the interrupted FP state
//!   for the handler (arch/arm64/kernel/signal.c `setup_return` resets only SME and FPMR
//!   state), so there is nothing to check there.
//! * The same runs at the same time in a forked child process (other patterns), which reports
//!   by its exit status only, so that the output stays deterministic.
//! * With an argument `avx` (x86_64 with AVX; the gate `fptorture_avx`) the upper halves of ymm0-15
//!   are loaded, checked and clobbered too, and a handler must start with them zero (Linux's
//!   init state); `fptorture DIR avx` is the reproducer for AVX state across signals and fork.
//!
//! A changed register prints its name and the expected and found values and the program fails.
//! Every count is fixed (signals per worker, handler runs); only the number of loop iterations
//! (at least [`MIN_SPIN`] or [`MIN_SYS`], then until the main thread says stop) varies, and it is
//! not printed. Differential: the same lines natively and under the user-mode kernel, then
//! UM-FPTORTURE-OK.

use std::cell::Cell;
#[cfg(target_arch = "x86_64")]
use std::mem::offset_of;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use umt::{check_eq, say};

/// Worker threads per process.
const WORKERS: usize = 4;
/// SIGUSR1 sent to each worker (each one handled before the next is sent).
const SIGNALS: u64 = 40;
/// Minimum checks of a spinning worker before it looks at the stop flag.
const MIN_SPIN: u64 = 200_000;
/// Minimum checks of a worker that makes system calls between checks.
const MIN_SYS: u64 = 2_000;
/// Worker modes: raw sched_yield after every check; raw nanosleep after every 8th.
const MODE_YIELD: u64 = 1;
const MODE_SLEEP: u64 = 2;
const MODES: [u64; WORKERS] = [0, 0, MODE_YIELD, MODE_YIELD | MODE_SLEEP];
/// x86_64, with the `avx` argument: the upper halves of ymm0-15 too.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const MODE_AVX: u64 = 4;
const KINDS: [&str; WORKERS] = [
    "spinning",
    "spinning",
    "sched_yield",
    "sched_yield+nanosleep",
];
/// The worker that first forks with its registers loaded.
const FORKER: usize = 3;
/// The nanosleep of MODE_SLEEP workers.
const SLEEP_NS: i64 = 20_000;
/// How long the main thread waits for a worker to start or to run its handler.
const WAIT_NS: u64 = 30_000_000_000;

/// Register image size in u64s: xmm0-15 (32), st0-st3 (4 x 16 bytes: 10 used), one control word
/// (MXCSR bits 0-31, x87 control word bits 32-47, x87 status word & 0x38ff bits 48-63), and with
/// `avx` the upper halves of ymm0-15 (32; zero and unchecked without it).
#[cfg(target_arch = "x86_64")]
const N: usize = 73;
/// Register image size in u64s: v0-v31 (64), FPCR, FPSR.
#[cfg(target_arch = "aarch64")]
const N: usize = 66;

/// x86_64: the x87 status word bits compared: exception flags, stack fault, error summary, TOP.
#[cfg(target_arch = "x86_64")]
const FSW_MASK: u16 = 0x38ff;
/// x86_64: status word after loading 4 values into an empty stack: TOP = 4, no flags.
#[cfg(target_arch = "x86_64")]
const FSW_LOADED: u16 = 4 << 11;
/// x86_64: MXCSR and x87 control word of the init FP state (what a handler starts with).
#[cfg(target_arch = "x86_64")]
const MXCSR_INIT: u32 = 0x1f80;
#[cfg(target_arch = "x86_64")]
const FCW_INIT: u16 = 0x037f;
/// x86_64: what the handler loads. Every exception masked, round toward zero, flush to zero,
/// all sticky flags but denormals-are-zero (no worker masks every exception, so none has these).
#[cfg(target_arch = "x86_64")]
const GARBAGE_MXCSR: u32 = 0xffbf;
/// x86_64: every exception masked, 64-bit precision, round toward zero.
#[cfg(target_arch = "x86_64")]
const GARBAGE_FCW: u16 = 0x0f7f;
/// aarch64: AHP, DN, FZ, round toward zero (a combination no worker uses).
#[cfg(target_arch = "aarch64")]
const GARBAGE_FPCR: u64 = 0x07c0_0000;
/// aarch64: QC, IDC and every cumulative exception flag.
#[cfg(target_arch = "aarch64")]
const GARBAGE_FPSR: u64 = 0x0800_009f;

/// What a worker's asm works on. `want` is loaded, `init` is read back right after loading,
/// `seen` is read back at every check and compared with `init`.
#[repr(C, align(64))]
struct Frame {
    want: [u64; N],
    init: [u64; N],
    seen: [u64; N],
    /// The nanosleep request.
    ts: [i64; 2],
    /// Checks done (incremented by the asm loop).
    count: u64,
    /// x86_64: MXCSR restored when the asm block ends.
    dflt: u32,
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO64: AtomicU64 = AtomicU64::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const ZERO32: AtomicU32 = AtomicU32::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const ZEROI: AtomicI32 = AtomicI32::new(0);

/// Handler runs per worker.
static HANDLED: [AtomicU64; WORKERS] = [ZERO64; WORKERS];
/// Set by a worker's asm once its registers are loaded and read back.
static STARTED: [AtomicU32; WORKERS] = [ZERO32; WORKERS];
/// Worker thread ids.
static TIDS: [AtomicI32; WORKERS] = [ZEROI; WORKERS];
/// Set by the main thread after the last signal was handled.
static STOP: AtomicU32 = AtomicU32::new(0);
/// Handler runs on a thread that is not a worker.
static STRAY: AtomicU64 = AtomicU64::new(0);
/// x86_64: the first non-init (MXCSR << 16 | FCW) a handler started with, with bit 63 set.
static ENTRY_BAD: AtomicU64 = AtomicU64::new(0);
/// x86_64 with `avx`: a handler started with nonzero ymm upper halves (Linux: zero).
static ENTRY_YMM_BAD: AtomicU64 = AtomicU64::new(0);
/// MODE_AVX when the `avx` argument was given (the handler clobbers the ymm upper halves too).
static AVX: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The worker index of this thread (`usize::MAX`: not a worker).
    static SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// splitmix64: the patterns and the garbage.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn gettid() -> i32 {
    // SAFETY: gettid has no arguments.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

// ---------------------------------------------------------------------------------------------
// x86_64

/// MXCSR of worker key `k`: per-thread rounding mode, FZ, DAZ and sticky flags; one exception
/// unmasked (not one whose flag is set; no FP arithmetic runs while it is loaded anyway).
#[cfg(target_arch = "x86_64")]
fn mxcsr_for(k: u64) -> u32 {
    let unmasked = 1u32 << (k % 6);
    let flags = ((k * 11 + 1) & 0x3f) as u32 & !unmasked;
    let masks = 0x3f & !unmasked;
    let daz = ((k >> 1) & 1) as u32;
    let rc = (k & 3) as u32;
    let fz = ((k >> 2) & 1) as u32;
    flags | daz << 6 | masks << 7 | rc << 13 | fz << 15
}

/// x87 control word of worker key `k`: one exception unmasked (loading and storing 80-bit
/// values raises none), per-thread precision and rounding control. Bit 6 reads as 1.
#[cfg(target_arch = "x86_64")]
fn fcw_for(k: u64) -> u16 {
    let masks = 0x3f & !(1u16 << ((k + 3) % 6));
    let pc = [0u16, 2, 3][(k % 3) as usize];
    let rc = ((k + 1) & 3) as u16;
    0x40 | masks | pc << 8 | rc << 10
}

#[cfg(target_arch = "x86_64")]
fn want_for(k: u64) -> [u64; N] {
    let mut w = [0u64; N];
    for (i, v) in w[..32].iter_mut().enumerate() {
        *v = mix(k << 32 | i as u64);
    }
    for j in 0..4 {
        // A normal 80-bit value: explicit integer bit, exponent near the bias, either sign.
        let m = mix(k << 32 | (100 + j) as u64);
        w[32 + 2 * j] = m | 1 << 63;
        w[33 + 2 * j] = ((m >> 56) & 1) << 15 | (0x3fff - 64 + (m >> 57));
    }
    w[40] = mxcsr_for(k) as u64 | (fcw_for(k) as u64) << 32 | (FSW_LOADED as u64) << 48;
    for (i, v) in w[41..].iter_mut().enumerate() {
        *v = mix(k << 32 | (200 + i) as u64);
    }
    w
}

/// Register names and values of an image, for messages.
#[cfg(target_arch = "x86_64")]
fn regs_of(a: &[u64; N]) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for r in 0..16 {
        v.push((
            format!("xmm{r}"),
            format!("{:016x}_{:016x}", a[2 * r + 1], a[2 * r]),
        ));
    }
    for j in 0..4 {
        v.push((
            format!("st{j}"),
            format!("{:04x}_{:016x}", a[33 + 2 * j], a[32 + 2 * j]),
        ));
    }
    v.push(("MXCSR".into(), format!("{:#06x}", a[40] as u32)));
    v.push((
        "x87 control word".into(),
        format!("{:#06x}", (a[40] >> 32) as u16),
    ));
    v.push((
        "x87 status word (TOP, flags)".into(),
        format!("{:#06x}", (a[40] >> 48) as u16),
    ));
    for r in 0..16 {
        v.push((
            format!("ymm{r} upper half"),
            format!("{:016x}_{:016x}", a[42 + 2 * r], a[41 + 2 * r]),
        ));
    }
    v
}

/// Stores every checked register into the image at `{f} + {$o}` (clobbers rax).
#[cfg(target_arch = "x86_64")]
macro_rules! x86_store {
    ($o:literal) => {
        concat!(
            "movdqu [{f} + {",
            $o,
            "} + 0], xmm0\n",
            "movdqu [{f} + {",
            $o,
            "} + 16], xmm1\n",
            "movdqu [{f} + {",
            $o,
            "} + 32], xmm2\n",
            "movdqu [{f} + {",
            $o,
            "} + 48], xmm3\n",
            "movdqu [{f} + {",
            $o,
            "} + 64], xmm4\n",
            "movdqu [{f} + {",
            $o,
            "} + 80], xmm5\n",
            "movdqu [{f} + {",
            $o,
            "} + 96], xmm6\n",
            "movdqu [{f} + {",
            $o,
            "} + 112], xmm7\n",
            "movdqu [{f} + {",
            $o,
            "} + 128], xmm8\n",
            "movdqu [{f} + {",
            $o,
            "} + 144], xmm9\n",
            "movdqu [{f} + {",
            $o,
            "} + 160], xmm10\n",
            "movdqu [{f} + {",
            $o,
            "} + 176], xmm11\n",
            "movdqu [{f} + {",
            $o,
            "} + 192], xmm12\n",
            "movdqu [{f} + {",
            $o,
            "} + 208], xmm13\n",
            "movdqu [{f} + {",
            $o,
            "} + 224], xmm14\n",
            "movdqu [{f} + {",
            $o,
            "} + 240], xmm15\n",
            // fld st(i) + fstp: store st(i) without changing the stack.
            "fld st(0)\n",
            "fstp tbyte ptr [{f} + {",
            $o,
            "} + 256]\n",
            "fld st(1)\n",
            "fstp tbyte ptr [{f} + {",
            $o,
            "} + 272]\n",
            "fld st(2)\n",
            "fstp tbyte ptr [{f} + {",
            $o,
            "} + 288]\n",
            "fld st(3)\n",
            "fstp tbyte ptr [{f} + {",
            $o,
            "} + 304]\n",
            "stmxcsr dword ptr [{f} + {",
            $o,
            "} + 320]\n",
            "fnstcw word ptr [{f} + {",
            $o,
            "} + 324]\n",
            "fnstsw ax\n",
            "and eax, {fswm}\n",
            "mov word ptr [{f} + {",
            $o,
            "} + 326], ax\n",
            "test {mode}, {avx}\n",
            "jz 12f\n",
            "vextractf128 [{f} + {",
            $o,
            "} + 328], ymm0, 1\n",
            "vextractf128 [{f} + {",
            $o,
            "} + 344], ymm1, 1\n",
            "vextractf128 [{f} + {",
            $o,
            "} + 360], ymm2, 1\n",
            "vextractf128 [{f} + {",
            $o,
            "} + 376], ymm3, 1\n",
            "vextractf128 [{f} + {",
            $o,
            "} + 392], ymm4, 1\n",
            "vextractf128 [{f} + {",
            $o,
            "} + 408], ymm5, 1\n",
            "vextractf128 [{f} + {",
            $o,
            "} + 424], ymm6, 1\n",
            "vextractf128 [{f} + {",
            $o,
            "} + 440], ymm7, 1\n",
            "vextractf128 [{f} + {",
            $o,
            "} + 456], ymm8, 1\n",
            "vextractf128 [{f} + {",
            $o,
            "} + 472], ymm9, 1\n",
            "vextractf128 [{f} + {",
            $o,
            "} + 488], ymm10, 1\n",
            "vextractf128 [{f} + {",
            $o,
            "} + 504], ymm11, 1\n",
            "vextractf128 [{f} + {",
            $o,
            "} + 520], ymm12, 1\n",
            "vextractf128 [{f} + {",
            $o,
            "} + 536], ymm13, 1\n",
            "vextractf128 [{f} + {",
            $o,
            "} + 552], ymm14, 1\n",
            "vextractf128 [{f} + {",
            $o,
            "} + 568], ymm15, 1\n",
            "12:\n",
        )
    };
}

/// Loads every checked register from `want` (MXCSR, x87 control word, st3..st0, xmm0-15).
#[cfg(target_arch = "x86_64")]
macro_rules! x86_load {
    () => {
        concat!(
            "ldmxcsr dword ptr [{f} + {w} + 320]\n",
            "fninit\n",
            "fldcw word ptr [{f} + {w} + 324]\n",
            "fld tbyte ptr [{f} + {w} + 304]\n",
            "fld tbyte ptr [{f} + {w} + 288]\n",
            "fld tbyte ptr [{f} + {w} + 272]\n",
            "fld tbyte ptr [{f} + {w} + 256]\n",
            "movdqu xmm0, [{f} + {w} + 0]\n",
            "movdqu xmm1, [{f} + {w} + 16]\n",
            "movdqu xmm2, [{f} + {w} + 32]\n",
            "movdqu xmm3, [{f} + {w} + 48]\n",
            "movdqu xmm4, [{f} + {w} + 64]\n",
            "movdqu xmm5, [{f} + {w} + 80]\n",
            "movdqu xmm6, [{f} + {w} + 96]\n",
            "movdqu xmm7, [{f} + {w} + 112]\n",
            "movdqu xmm8, [{f} + {w} + 128]\n",
            "movdqu xmm9, [{f} + {w} + 144]\n",
            "movdqu xmm10, [{f} + {w} + 160]\n",
            "movdqu xmm11, [{f} + {w} + 176]\n",
            "movdqu xmm12, [{f} + {w} + 192]\n",
            "movdqu xmm13, [{f} + {w} + 208]\n",
            "movdqu xmm14, [{f} + {w} + 224]\n",
            "movdqu xmm15, [{f} + {w} + 240]\n",
            // With avx, the upper halves (after the legacy-SSE loads, which keep them).
            "test {mode}, {avx}\n",
            "jz 13f\n",
            "vinsertf128 ymm0, ymm0, [{f} + {w} + 328], 1\n",
            "vinsertf128 ymm1, ymm1, [{f} + {w} + 344], 1\n",
            "vinsertf128 ymm2, ymm2, [{f} + {w} + 360], 1\n",
            "vinsertf128 ymm3, ymm3, [{f} + {w} + 376], 1\n",
            "vinsertf128 ymm4, ymm4, [{f} + {w} + 392], 1\n",
            "vinsertf128 ymm5, ymm5, [{f} + {w} + 408], 1\n",
            "vinsertf128 ymm6, ymm6, [{f} + {w} + 424], 1\n",
            "vinsertf128 ymm7, ymm7, [{f} + {w} + 440], 1\n",
            "vinsertf128 ymm8, ymm8, [{f} + {w} + 456], 1\n",
            "vinsertf128 ymm9, ymm9, [{f} + {w} + 472], 1\n",
            "vinsertf128 ymm10, ymm10, [{f} + {w} + 488], 1\n",
            "vinsertf128 ymm11, ymm11, [{f} + {w} + 504], 1\n",
            "vinsertf128 ymm12, ymm12, [{f} + {w} + 520], 1\n",
            "vinsertf128 ymm13, ymm13, [{f} + {w} + 536], 1\n",
            "vinsertf128 ymm14, ymm14, [{f} + {w} + 552], 1\n",
            "vinsertf128 ymm15, ymm15, [{f} + {w} + 568], 1\n",
            "13:\n",
        )
    };
}

/// Compares `seen` with `init` (N u64s), jumping to `8f` on a difference (clobbers rax, rdx).
#[cfg(target_arch = "x86_64")]
macro_rules! x86_compare {
    () => {
        concat!(
            "xor edx, edx\n",
            "3:\n",
            "mov rax, [{f} + {s} + rdx*8]\n",
            "cmp rax, [{f} + {i} + rdx*8]\n",
            "jne 8f\n",
            "inc edx\n",
            "cmp edx, {n}\n",
            "jb 3b\n",
        )
    };
}

/// The worker's check loop: load, read back into `init`, set `started`, then store into `seen`
/// and compare with `init` until at least `min` checks ran and `stop` is set. Returns 0, or 1
/// when a check found a difference (then `seen` holds what was found).
#[cfg(target_arch = "x86_64")]
fn run_checks(fr: &mut Frame, mode: u64, min: u64, started: &AtomicU32, stop: &AtomicU32) -> u64 {
    let res: u64;
    // SAFETY: reads and writes only the frame (live, exclusively borrowed) and the two atomics
    // (u32 stores/loads through their pointers); the raw sched_yield and nanosleep calls (rdi
    // points at the frame's timespec) clobber rax, rcx, r11, declared with rdx, rdi, rsi; the
    // vector and x87 registers are declared clobbered, and the block ends with fninit and the
    // default MXCSR, so the compiled code around it finds the ABI's FP state.
    unsafe {
        std::arch::asm!(
            x86_load!(),
            x86_store!("i"),
            "mov dword ptr [{started}], 1",
            "2:",
            x86_store!("s"),
            x86_compare!(),
            "test {mode}, {yld}",
            "jz 4f",
            "mov eax, {sys_yield}",
            "syscall",
            "4:",
            "test {mode}, {slp}",
            "jz 5f",
            "test {it}, 7",
            "jnz 5f",
            "mov eax, {sys_nano}",
            "lea rdi, [{f} + {ts}]",
            "xor esi, esi",
            "syscall",
            "5:",
            "inc qword ptr [{f} + {cnt}]",
            "test {it}, {it}",
            "jz 6f",
            "dec {it}",
            "jmp 2b",
            "6:",
            "cmp dword ptr [{stop}], 0",
            "je 2b",
            "xor eax, eax",
            "jmp 7f",
            "8:",
            "mov eax, 1",
            "7:",
            "fninit",
            "ldmxcsr dword ptr [{f} + {dm}]",
            "test {mode}, {avx}",
            "jz 14f",
            "vzeroupper",
            "14:",
            f = in(reg) fr as *mut Frame,
            started = in(reg) started.as_ptr(),
            stop = in(reg) stop.as_ptr(),
            mode = in(reg) mode,
            it = inout(reg) min => _,
            w = const offset_of!(Frame, want),
            i = const offset_of!(Frame, init),
            s = const offset_of!(Frame, seen),
            ts = const offset_of!(Frame, ts),
            cnt = const offset_of!(Frame, count),
            dm = const offset_of!(Frame, dflt),
            n = const N,
            fswm = const FSW_MASK,
            yld = const MODE_YIELD,
            avx = const MODE_AVX,
            slp = const MODE_SLEEP,
            sys_yield = const libc::SYS_sched_yield,
            sys_nano = const libc::SYS_nanosleep,
            out("rax") res, out("rcx") _, out("rdx") _, out("rdi") _, out("rsi") _, out("r11") _,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
            out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
            out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
            options(nostack),
        );
    }
    res
}

/// Loads the registers, forks with a raw fork(2), and both sides read them back into `seen` and
/// compare with `want`. The child never leaves the asm: it exits (exit_group) with 0 when they
/// match, 1 when not. Returns (fork's result, 0 or 1 for the parent's comparison).
#[cfg(target_arch = "x86_64")]
fn fork_check(fr: &mut Frame, mode: u64) -> (i64, u64) {
    let pid: i64;
    let res: u64;
    // SAFETY: as run_checks; the child runs only this asm (its own copy of the frame) and ends
    // with exit_group, so it never returns into code of a process that had other threads.
    unsafe {
        std::arch::asm!(
            x86_load!(),
            "mov eax, {sys_fork}",
            "syscall",
            "mov rdi, rax",
            x86_store!("s"),
            x86_compare!(),
            "xor eax, eax",
            "jmp 7f",
            "8:",
            "mov eax, 1",
            "7:",
            "test rdi, rdi",
            "jnz 9f",
            "mov edi, eax",
            "mov eax, {sys_exit_group}",
            "syscall",
            "9:",
            "mov rsi, rax",
            "fninit",
            "ldmxcsr dword ptr [{f} + {dm}]",
            "test {mode}, {avx}",
            "jz 14f",
            "vzeroupper",
            "14:",
            f = in(reg) fr as *mut Frame,
            mode = in(reg) mode,
            avx = const MODE_AVX,
            w = const offset_of!(Frame, want),
            i = const offset_of!(Frame, want),
            s = const offset_of!(Frame, seen),
            dm = const offset_of!(Frame, dflt),
            n = const N,
            fswm = const FSW_MASK,
            sys_fork = const libc::SYS_fork,
            sys_exit_group = const libc::SYS_exit_group,
            out("rax") _, out("rcx") _, out("rdx") _, out("rdi") pid, out("rsi") res, out("r11") _,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
            out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
            out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
            options(nostack),
        );
    }
    (pid, res)
}

/// MXCSR and x87 control word right now.
#[cfg(target_arch = "x86_64")]
fn fp_control() -> (u32, u16) {
    let mut mx = 0u32;
    let mut cw = 0u16;
    // SAFETY: stores into the two locals only.
    unsafe {
        std::arch::asm!(
            "stmxcsr dword ptr [{m}]",
            "fnstcw word ptr [{c}]",
            m = in(reg) &mut mx,
            c = in(reg) &mut cw,
            options(nostack),
        );
    }
    (mx, cw)
}

/// The OR of the upper halves of ymm0-15 right now (needs AVX).
#[cfg(target_arch = "x86_64")]
fn ymm_upper_or() -> u64 {
    let mut up = [0u64; 32];
    // SAFETY: stores into the local array only (256 bytes); the caller checked for AVX.
    unsafe {
        std::arch::asm!(
            "vextractf128 [{u}], ymm0, 1", "vextractf128 [{u} + 16], ymm1, 1",
            "vextractf128 [{u} + 32], ymm2, 1", "vextractf128 [{u} + 48], ymm3, 1",
            "vextractf128 [{u} + 64], ymm4, 1", "vextractf128 [{u} + 80], ymm5, 1",
            "vextractf128 [{u} + 96], ymm6, 1", "vextractf128 [{u} + 112], ymm7, 1",
            "vextractf128 [{u} + 128], ymm8, 1", "vextractf128 [{u} + 144], ymm9, 1",
            "vextractf128 [{u} + 160], ymm10, 1", "vextractf128 [{u} + 176], ymm11, 1",
            "vextractf128 [{u} + 192], ymm12, 1", "vextractf128 [{u} + 208], ymm13, 1",
            "vextractf128 [{u} + 224], ymm14, 1", "vextractf128 [{u} + 240], ymm15, 1",
            u = in(reg) up.as_mut_ptr(),
            options(nostack),
        );
    }
    up.iter().fold(0, |a, b| a | b)
}

/// Checks the FP state a handler starts with (Linux: the init state).
#[cfg(target_arch = "x86_64")]
fn check_handler_entry() {
    let (mx, cw) = fp_control();
    if mx != MXCSR_INIT || cw != FCW_INIT {
        let _ = ENTRY_BAD.compare_exchange(
            0,
            1 << 63 | (mx as u64) << 16 | cw as u64,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
    }
    if AVX.load(Ordering::SeqCst) != 0 && ymm_upper_or() != 0 {
        ENTRY_YMM_BAD.store(1, Ordering::SeqCst);
    }
}

/// Overwrites every checked register with garbage (for the handler: sigreturn restores them);
/// with `avx` the ymm upper halves too (from `g[32..]`).
#[cfg(target_arch = "x86_64")]
fn clobber(g: &[u64; 64]) {
    let mx = GARBAGE_MXCSR;
    let cw = GARBAGE_FCW;
    // SAFETY: reads the garbage and the two locals; writes only the declared vector and x87
    // registers and MXCSR/FCW. It leaves a full x87 stack and a garbage MXCSR on purpose: it is
    // the last thing the handler does, and the handler's return (sigreturn) restores them.
    unsafe {
        std::arch::asm!(
            "fninit",
            "fldcw word ptr [{cw}]",
            "fld1", "fldpi", "fldz", "fldl2e", "fldlg2", "fldln2", "fldl2t", "fld1",
            // 1/0: a (masked) divide-by-zero flag in the status word.
            "fdiv st(0), st(5)",
            "ldmxcsr dword ptr [{mx}]",
            "movdqu xmm0, [{g}]", "movdqu xmm1, [{g} + 16]", "movdqu xmm2, [{g} + 32]",
            "movdqu xmm3, [{g} + 48]", "movdqu xmm4, [{g} + 64]", "movdqu xmm5, [{g} + 80]",
            "movdqu xmm6, [{g} + 96]", "movdqu xmm7, [{g} + 112]", "movdqu xmm8, [{g} + 128]",
            "movdqu xmm9, [{g} + 144]", "movdqu xmm10, [{g} + 160]", "movdqu xmm11, [{g} + 176]",
            "movdqu xmm12, [{g} + 192]", "movdqu xmm13, [{g} + 208]", "movdqu xmm14, [{g} + 224]",
            "movdqu xmm15, [{g} + 240]",
            "test {avx}, {avx}",
            "jz 2f",
            "vinsertf128 ymm0, ymm0, [{g} + 256], 1", "vinsertf128 ymm1, ymm1, [{g} + 272], 1",
            "vinsertf128 ymm2, ymm2, [{g} + 288], 1", "vinsertf128 ymm3, ymm3, [{g} + 304], 1",
            "vinsertf128 ymm4, ymm4, [{g} + 320], 1", "vinsertf128 ymm5, ymm5, [{g} + 336], 1",
            "vinsertf128 ymm6, ymm6, [{g} + 352], 1", "vinsertf128 ymm7, ymm7, [{g} + 368], 1",
            "vinsertf128 ymm8, ymm8, [{g} + 384], 1", "vinsertf128 ymm9, ymm9, [{g} + 400], 1",
            "vinsertf128 ymm10, ymm10, [{g} + 416], 1", "vinsertf128 ymm11, ymm11, [{g} + 432], 1",
            "vinsertf128 ymm12, ymm12, [{g} + 448], 1", "vinsertf128 ymm13, ymm13, [{g} + 464], 1",
            "vinsertf128 ymm14, ymm14, [{g} + 480], 1", "vinsertf128 ymm15, ymm15, [{g} + 496], 1",
            "2:",
            g = in(reg) g.as_ptr(),
            cw = in(reg) &cw,
            mx = in(reg) &mx,
            avx = in(reg) AVX.load(Ordering::SeqCst),
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
            out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
            out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
            options(nostack),
        );
    }
}

#[cfg(target_arch = "x86_64")]
const WHAT: &str = "xmm0-15, MXCSR, x87 control and status words, st0-st3";

// ---------------------------------------------------------------------------------------------
// aarch64

/// FPCR of worker key `k`: per-thread rounding mode, FZ, DN, AHP (never the garbage's
/// combination: RMode 3 with FZ, DN and AHP all set). No trap enables.
#[cfg(target_arch = "aarch64")]
fn fpcr_for(k: u64) -> u64 {
    (k & 3) << 22 | ((k >> 2) & 1) << 24 | ((k >> 1) & 1) << 25 | (!k & 1) << 26
}

/// FPSR of worker key `k`: some cumulative exception flags, IDC, QC.
#[cfg(target_arch = "aarch64")]
fn fpsr_for(k: u64) -> u64 {
    ((k * 11 + 1) & 0x1f) | (k & 1) << 7 | ((k >> 1) & 1) << 27
}

#[cfg(target_arch = "aarch64")]
fn want_for(k: u64) -> [u64; N] {
    let mut w = [0u64; N];
    for (i, v) in w[..64].iter_mut().enumerate() {
        *v = mix(k << 32 | i as u64);
    }
    w[64] = fpcr_for(k);
    w[65] = fpsr_for(k);
    w
}

#[cfg(target_arch = "aarch64")]
fn regs_of(a: &[u64; N]) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for r in 0..32 {
        v.push((
            format!("v{r}"),
            format!("{:016x}_{:016x}", a[2 * r + 1], a[2 * r]),
        ));
    }
    v.push(("FPCR".into(), format!("{:#010x}", a[64])));
    v.push(("FPSR".into(), format!("{:#010x}", a[65])));
    v
}

/// Stores v0-v31, FPCR and FPSR at `{$o}` (clobbers `{t}`).
#[cfg(target_arch = "aarch64")]
macro_rules! a64_store {
    ($o:literal) => {
        concat!(
            "stp q0, q1, [{",
            $o,
            "}, #0]\n",
            "stp q2, q3, [{",
            $o,
            "}, #32]\n",
            "stp q4, q5, [{",
            $o,
            "}, #64]\n",
            "stp q6, q7, [{",
            $o,
            "}, #96]\n",
            "stp q8, q9, [{",
            $o,
            "}, #128]\n",
            "stp q10, q11, [{",
            $o,
            "}, #160]\n",
            "stp q12, q13, [{",
            $o,
            "}, #192]\n",
            "stp q14, q15, [{",
            $o,
            "}, #224]\n",
            "stp q16, q17, [{",
            $o,
            "}, #256]\n",
            "stp q18, q19, [{",
            $o,
            "}, #288]\n",
            "stp q20, q21, [{",
            $o,
            "}, #320]\n",
            "stp q22, q23, [{",
            $o,
            "}, #352]\n",
            "stp q24, q25, [{",
            $o,
            "}, #384]\n",
            "stp q26, q27, [{",
            $o,
            "}, #416]\n",
            "stp q28, q29, [{",
            $o,
            "}, #448]\n",
            "stp q30, q31, [{",
            $o,
            "}, #480]\n",
            "mrs {t}, fpcr\n",
            "str {t}, [{",
            $o,
            "}, #512]\n",
            "mrs {t}, fpsr\n",
            "str {t}, [{",
            $o,
            "}, #520]\n",
        )
    };
}

/// Loads FPCR, FPSR and v0-v31 from `{w}` (clobbers `{t}`).
#[cfg(target_arch = "aarch64")]
macro_rules! a64_load {
    () => {
        concat!(
            "ldr {t}, [{w}, #512]\n",
            "msr fpcr, {t}\n",
            "ldr {t}, [{w}, #520]\n",
            "msr fpsr, {t}\n",
            "ldp q0, q1, [{w}, #0]\n",
            "ldp q2, q3, [{w}, #32]\n",
            "ldp q4, q5, [{w}, #64]\n",
            "ldp q6, q7, [{w}, #96]\n",
            "ldp q8, q9, [{w}, #128]\n",
            "ldp q10, q11, [{w}, #160]\n",
            "ldp q12, q13, [{w}, #192]\n",
            "ldp q14, q15, [{w}, #224]\n",
            "ldp q16, q17, [{w}, #256]\n",
            "ldp q18, q19, [{w}, #288]\n",
            "ldp q20, q21, [{w}, #320]\n",
            "ldp q22, q23, [{w}, #352]\n",
            "ldp q24, q25, [{w}, #384]\n",
            "ldp q26, q27, [{w}, #416]\n",
            "ldp q28, q29, [{w}, #448]\n",
            "ldp q30, q31, [{w}, #480]\n",
        )
    };
}

/// Compares `{s}` with `{i}` (N u64s), branching to `8f` on a difference.
#[cfg(target_arch = "aarch64")]
macro_rules! a64_compare {
    () => {
        concat!(
            "mov {k}, #0\n",
            "3:\n",
            "ldr {t}, [{s}, {k}, lsl #3]\n",
            "ldr {u}, [{i}, {k}, lsl #3]\n",
            "cmp {t}, {u}\n",
            "b.ne 8f\n",
            "add {k}, {k}, #1\n",
            "cmp {k}, #{n}\n",
            "b.lo 3b\n",
        )
    };
}

/// See the x86_64 version.
#[cfg(target_arch = "aarch64")]
fn run_checks(fr: &mut Frame, mode: u64, min: u64, started: &AtomicU32, stop: &AtomicU32) -> u64 {
    let res: u64;
    // SAFETY: reads and writes only the frame (live, exclusively borrowed) and the two atomics;
    // the raw sched_yield and nanosleep calls use x8, x0 and x1, declared clobbered; the vector
    // registers are declared clobbered and FPCR/FPSR are zeroed (the defaults) at the end.
    unsafe {
        std::arch::asm!(
            a64_load!(),
            a64_store!("i"),
            "mov {t:w}, #1",
            "str {t:w}, [{started}]",
            "2:",
            a64_store!("s"),
            a64_compare!(),
            "tbz {mode}, #0, 4f",
            "mov x8, #{sys_yield}",
            "svc #0",
            "4:",
            "tbz {mode}, #1, 5f",
            "tst {it}, #7",
            "b.ne 5f",
            "mov x8, #{sys_nano}",
            "mov x0, {ts}",
            "mov x1, #0",
            "svc #0",
            "5:",
            "ldr {t}, [{cnt}]",
            "add {t}, {t}, #1",
            "str {t}, [{cnt}]",
            "cbz {it}, 6f",
            "sub {it}, {it}, #1",
            "b 2b",
            "6:",
            "ldr {t:w}, [{stop}]",
            "cbz {t:w}, 2b",
            "mov {r}, #0",
            "b 7f",
            "8:",
            "mov {r}, #1",
            "7:",
            "msr fpcr, xzr",
            "msr fpsr, xzr",
            w = in(reg) fr.want.as_ptr(),
            i = in(reg) fr.init.as_mut_ptr(),
            s = in(reg) fr.seen.as_mut_ptr(),
            ts = in(reg) fr.ts.as_ptr(),
            cnt = in(reg) &mut fr.count,
            started = in(reg) started.as_ptr(),
            stop = in(reg) stop.as_ptr(),
            mode = in(reg) mode,
            it = inout(reg) min => _,
            t = out(reg) _,
            u = out(reg) _,
            k = out(reg) _,
            r = out(reg) res,
            n = const N,
            sys_yield = const libc::SYS_sched_yield,
            sys_nano = const libc::SYS_nanosleep,
            out("x0") _, out("x1") _, out("x8") _,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _, out("v4") _, out("v5") _,
            out("v6") _, out("v7") _, out("v8") _, out("v9") _, out("v10") _, out("v11") _,
            out("v12") _, out("v13") _, out("v14") _, out("v15") _, out("v16") _, out("v17") _,
            out("v18") _, out("v19") _, out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _, out("v28") _, out("v29") _,
            out("v30") _, out("v31") _,
            options(nostack),
        );
    }
    res
}

/// See the x86_64 version (fork is clone(SIGCHLD, 0, 0, 0, 0) here).
#[cfg(target_arch = "aarch64")]
fn fork_check(fr: &mut Frame, _mode: u64) -> (i64, u64) {
    let pid: i64;
    let res: u64;
    // SAFETY: as run_checks; the child runs only this asm (its own copy of the frame) and ends
    // with exit_group, so it never returns into code of a process that had other threads.
    unsafe {
        std::arch::asm!(
            a64_load!(),
            "mov x8, #{sys_clone}",
            "mov x0, #{sigchld}",
            "mov x1, #0",
            "mov x2, #0",
            "mov x3, #0",
            "mov x4, #0",
            "svc #0",
            "mov {p}, x0",
            a64_store!("s"),
            a64_compare!(),
            "mov {r}, #0",
            "b 7f",
            "8:",
            "mov {r}, #1",
            "7:",
            "cbnz {p}, 9f",
            "mov x0, {r}",
            "mov x8, #{sys_exit_group}",
            "svc #0",
            "9:",
            "msr fpcr, xzr",
            "msr fpsr, xzr",
            w = in(reg) fr.want.as_ptr(),
            i = in(reg) fr.want.as_ptr(),
            s = in(reg) fr.seen.as_mut_ptr(),
            t = out(reg) _,
            u = out(reg) _,
            k = out(reg) _,
            p = out(reg) pid,
            r = out(reg) res,
            n = const N,
            sigchld = const libc::SIGCHLD,
            sys_clone = const libc::SYS_clone,
            sys_exit_group = const libc::SYS_exit_group,
            out("x0") _, out("x1") _, out("x2") _, out("x3") _, out("x4") _, out("x8") _,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _, out("v4") _, out("v5") _,
            out("v6") _, out("v7") _, out("v8") _, out("v9") _, out("v10") _, out("v11") _,
            out("v12") _, out("v13") _, out("v14") _, out("v15") _, out("v16") _, out("v17") _,
            out("v18") _, out("v19") _, out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _, out("v28") _, out("v29") _,
            out("v30") _, out("v31") _,
            options(nostack),
        );
    }
    (pid, res)
}

/// aarch64 handlers keep the interrupted FP state: nothing to check.
#[cfg(target_arch = "aarch64")]
fn check_handler_entry() {}

/// Overwrites v0-v31, FPCR and FPSR with garbage (sigreturn restores them).
#[cfg(target_arch = "aarch64")]
fn clobber(g: &[u64; 64]) {
    // SAFETY: reads the garbage; writes only the declared vector registers and FPCR/FPSR, which
    // it leaves as garbage on purpose: it is the last thing the handler does, and the handler's
    // return (sigreturn) restores them.
    unsafe {
        std::arch::asm!(
            "ldp q0, q1, [{g}, #0]", "ldp q2, q3, [{g}, #32]", "ldp q4, q5, [{g}, #64]",
            "ldp q6, q7, [{g}, #96]", "ldp q8, q9, [{g}, #128]", "ldp q10, q11, [{g}, #160]",
            "ldp q12, q13, [{g}, #192]", "ldp q14, q15, [{g}, #224]", "ldp q16, q17, [{g}, #256]",
            "ldp q18, q19, [{g}, #288]", "ldp q20, q21, [{g}, #320]", "ldp q22, q23, [{g}, #352]",
            "ldp q24, q25, [{g}, #384]", "ldp q26, q27, [{g}, #416]", "ldp q28, q29, [{g}, #448]",
            "ldp q30, q31, [{g}, #480]",
            "msr fpcr, {gc}",
            "msr fpsr, {gs}",
            g = in(reg) g.as_ptr(),
            gc = in(reg) GARBAGE_FPCR,
            gs = in(reg) GARBAGE_FPSR,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _, out("v4") _, out("v5") _,
            out("v6") _, out("v7") _, out("v8") _, out("v9") _, out("v10") _, out("v11") _,
            out("v12") _, out("v13") _, out("v14") _, out("v15") _, out("v16") _, out("v17") _,
            out("v18") _, out("v19") _, out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _, out("v28") _, out("v29") _,
            out("v30") _, out("v31") _,
            options(nostack),
        );
    }
}

#[cfg(target_arch = "aarch64")]
const WHAT: &str = "v0-v31, FPCR, FPSR";

// ---------------------------------------------------------------------------------------------

/// SIGUSR1: count the run for this worker, then clobber every checked register.
extern "C" fn on_usr1(_sig: i32) {
    check_handler_entry();
    let slot = SLOT.with(Cell::get);
    let n = if slot < WORKERS {
        HANDLED[slot].fetch_add(1, Ordering::SeqCst) + 1
    } else {
        STRAY.fetch_add(1, Ordering::SeqCst);
        0
    };
    let mut g = [0u64; 64];
    for (i, v) in g.iter_mut().enumerate() {
        *v = mix(0xdead_beef_0000_0000 ^ (slot as u64) << 24 ^ n << 8 ^ i as u64);
    }
    clobber(&g);
}

/// The registers that differ between `want` and `found`, as `name: want W, found F` lines.
fn differences(want: &[u64; N], found: &[u64; N]) -> String {
    regs_of(want)
        .into_iter()
        .zip(regs_of(found))
        .filter(|(a, b)| a.1 != b.1)
        .map(|(a, b)| format!("\n  {}: expected {}, found {}", a.0, a.1, b.1))
        .collect()
}

/// One worker thread of process `role` (0 parent, 1 child): load, check until stopped.
fn worker(role: u64, who: &str, w: usize) {
    SLOT.with(|s| s.set(w));
    TIDS[w].store(gettid(), Ordering::SeqCst);
    let k = role * WORKERS as u64 + w as u64;
    let mut fr = Box::new(Frame {
        want: want_for(k),
        init: [0; N],
        seen: [0; N],
        ts: [0, SLEEP_NS],
        count: 0,
        dflt: 0x1f80,
    });
    let name = format!("{who} thread {w} ({})", KINDS[w]);
    let avx = AVX.load(Ordering::SeqCst);
    let mode = MODES[w] | avx;
    #[cfg(target_arch = "x86_64")]
    if avx == 0 {
        // Nothing loads or checks the ymm upper halves.
        fr.want[41..].fill(0);
    }
    if w == FORKER {
        let (pid, res) = fork_check(&mut fr, mode);
        if pid < 0 {
            umt::fail(format!("{name}: raw fork: {}", umt::ename(-pid as i32)));
        }
        if res != 0 {
            umt::fail(format!(
                "{name}: registers changed across a raw fork (in the parent):{}",
                differences(&fr.want, &fr.seen)
            ));
        }
        let st = umt::waitpid(pid as i32, 0);
        check_eq(
            umt::describe_status(st).as_str(),
            "exited 0",
            &format!("{name}: the child of a raw fork found its registers intact"),
        );
        fr.seen = [0; N];
    }
    let min = if MODES[w] == 0 { MIN_SPIN } else { MIN_SYS };
    let res = run_checks(&mut fr, mode, min, &STARTED[w], &STOP);
    if fr.init != fr.want {
        umt::fail(format!(
            "{name}: registers read back wrong right after loading them:{}",
            differences(&fr.want, &fr.init)
        ));
    }
    if res != 0 {
        umt::fail(format!(
            "{name}: registers changed after {} checks and {} handler runs:{}",
            fr.count,
            HANDLED[w].load(Ordering::SeqCst),
            differences(&fr.init, &fr.seen)
        ));
    }
}

/// Waits (polling with 20 us sleeps) until `cond`, failing with `what` after [`WAIT_NS`].
fn wait_for(cond: impl Fn() -> bool, what: impl Fn() -> String) {
    let deadline = umt::now_ns() + WAIT_NS;
    let ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 20_000,
    };
    while !cond() {
        if umt::now_ns() > deadline {
            umt::fail(what());
        }
        // SAFETY: ts is a valid timespec; a null remainder is allowed.
        unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
    }
}

/// Runs the workers of process `role` and signals them; fails on any difference.
fn torture(role: u64) {
    let who = if role == 0 { "parent" } else { "child" };
    let handles: Vec<_> = (0..WORKERS)
        .map(|w| std::thread::spawn(move || worker(role, who, w)))
        .collect();
    // SAFETY: getpid has no arguments.
    let pid = unsafe { libc::getpid() };
    for round in 0..SIGNALS {
        for w in 0..WORKERS {
            wait_for(
                || STARTED[w].load(Ordering::SeqCst) != 0,
                || format!("{who} thread {w} did not start"),
            );
            let tid = TIDS[w].load(Ordering::SeqCst);
            // SAFETY: tgkill takes plain integers.
            let r = unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, libc::SIGUSR1) };
            umt::ok(r, &format!("tgkill({who} thread {w}, SIGUSR1)"));
            wait_for(
                || HANDLED[w].load(Ordering::SeqCst) > round,
                || {
                    format!(
                        "{who} thread {w}: signal {} of {SIGNALS} not handled within {} s \
                         ({} handler runs)",
                        round + 1,
                        WAIT_NS / 1_000_000_000,
                        HANDLED[w].load(Ordering::SeqCst)
                    )
                },
            );
        }
    }
    STOP.store(1, Ordering::SeqCst);
    for h in handles {
        if h.join().is_err() {
            umt::fail(format!("{who}: a worker thread panicked"));
        }
    }
    for (w, h) in HANDLED.iter().enumerate() {
        check_eq(
            h.load(Ordering::SeqCst),
            SIGNALS,
            &format!("{who} thread {w}: handler runs"),
        );
    }
    check_eq(
        STRAY.load(Ordering::SeqCst),
        0,
        &format!("{who}: handler runs on other threads"),
    );
    let bad = ENTRY_BAD.load(Ordering::SeqCst);
    if bad != 0 {
        umt::fail(format!(
            "{who}: a handler started with MXCSR {:#06x} and x87 control word {:#06x}, not the \
             init FP state (0x1f80, 0x037f) Linux gives every handler",
            (bad >> 16) as u32,
            bad as u16
        ));
    }
    if ENTRY_YMM_BAD.load(Ordering::SeqCst) != 0 {
        umt::fail(format!(
            "{who}: a handler started with nonzero ymm upper halves, not the init FP state \
             (zero) Linux gives every handler"
        ));
    }
}

fn main() {
    umt::init("fptorture");
    // argv[1] is the gate's work directory (unused); an argument `avx` adds the ymm upper halves.
    if std::env::args().skip(1).any(|a| a == "avx") {
        #[cfg(target_arch = "x86_64")]
        {
            if !std::arch::is_x86_feature_detected!("avx") {
                umt::fail("avx: this CPU (or its OS) has no AVX");
            }
            AVX.store(MODE_AVX, Ordering::SeqCst);
            say(format!("checking {WHAT}, ymm0-15 upper halves"));
        }
        #[cfg(not(target_arch = "x86_64"))]
        umt::fail("avx: x86_64 only");
    } else {
        say(format!("checking {WHAT}"));
    }
    umt::set_handler(libc::SIGUSR1, on_usr1 as *const () as usize, 0, false);
    // Fork while single-threaded: the child runs the same with other patterns and reports by
    // its exit status (its FAIL line, if any, goes to the same stdout).
    let child = umt::fork();
    if child == 0 {
        torture(1);
        umt::exit_now(0);
    }
    torture(0);
    say(format!(
        "{WORKERS} threads ({}) took {SIGNALS} clobbering signals each: registers intact",
        KINDS.join(", ")
    ));
    say(format!(
        "thread {FORKER}'s raw fork: the child found its registers intact"
    ));
    #[cfg(target_arch = "x86_64")]
    say(if AVX.load(Ordering::SeqCst) != 0 {
        "every handler started with the init MXCSR, x87 control word and ymm upper halves"
    } else {
        "every handler started with the init MXCSR and x87 control word"
    });
    let st = umt::waitpid(child, 0);
    check_eq(
        umt::describe_status(st).as_str(),
        "exited 0",
        "the forked process doing the same",
    );
    say("a forked process did the same at the same time: exited 0");
    umt::done("fptorture");
}
