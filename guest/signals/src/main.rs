//! Guest test `signals`: signal delivery to handlers.
//!
//! * SA_SIGINFO: kill() gives si_code SI_USER and si_pid = sender; sigqueue() gives SI_QUEUE and
//!   the value; tgkill() gives SI_TKILL; a fault in a child gives SEGV_MAPERR and si_addr.
//! * The FP/SIMD registers (xmm0-15 and MXCSR on x86_64, v0-v31 and FPCR on aarch64), loaded with
//!   known values, survive a handler that clobbers all of them.
//! * sigaltstack: an SA_ONSTACK handler runs on the alternate stack and sees SS_ONSTACK.
//! * A read from an empty pipe is interrupted (EINTR) by a handler without SA_RESTART and
//!   restarted (returns the data) with SA_RESTART.
//! * sigsuspend returns EINTR after the handler ran; sigprocmask blocks a signal, it stays pending
//!   (sigpending) and runs when unblocked; standard signals coalesce, real-time ones queue.
//! * The signal being handled is blocked inside its handler and unblocked after sigreturn.
//!
//! Differential: prints the same lines natively and under the user-mode kernel, then
//! UM-SIGNALS-OK. Nothing here sends a default-action signal to the program itself (it may be
//! init, which ignores those).

use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use umt::{check, check_eq, expect_err, ok, say};

/// si_code of a fault on an unmapped address (asm-generic/siginfo.h).
const SEGV_MAPERR: i32 = 1;

static COUNT: AtomicUsize = AtomicUsize::new(0);
static CODE: AtomicI32 = AtomicI32::new(0);
static PID: AtomicI32 = AtomicI32::new(0);
static VALUE: AtomicU64 = AtomicU64::new(0);
static SIGNO: AtomicI32 = AtomicI32::new(0);
static BLOCKED_INSIDE: AtomicI32 = AtomicI32::new(-1);
static ON_ALT: AtomicI32 = AtomicI32::new(-1);
static ALT_FLAGS: AtomicI32 = AtomicI32::new(-1);
static ALT_LO: AtomicUsize = AtomicUsize::new(0);
static ALT_HI: AtomicUsize = AtomicUsize::new(0);
static RT_ORDER: AtomicU64 = AtomicU64::new(0);

fn getpid() -> i32 {
    // SAFETY: getpid has no arguments.
    unsafe { libc::getpid() }
}

fn gettid() -> i32 {
    // SAFETY: gettid has no arguments.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

fn raise_kill(sig: i32) {
    // SAFETY: kill takes plain integers.
    ok(unsafe { libc::kill(getpid(), sig) } as i64, "kill(self)");
}

extern "C" fn info_handler(sig: i32, info: *mut libc::siginfo_t, _uc: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
    let info = unsafe { &*info };
    SIGNO.store(sig, Ordering::SeqCst);
    CODE.store(info.si_code, Ordering::SeqCst);
    // SAFETY: si_pid/si_value are valid to read for SI_USER/SI_QUEUE/SI_TKILL siginfos.
    unsafe {
        PID.store(info.si_pid(), Ordering::SeqCst);
        VALUE.store(info.si_value().sival_ptr as u64, Ordering::SeqCst);
    }
    // Is this signal blocked inside its own handler (it must be, without SA_NODEFER)?
    let mut cur = umt::sigset(&[]);
    // SAFETY: a null new set only reads the mask into cur.
    unsafe {
        libc::sigprocmask(libc::SIG_BLOCK, std::ptr::null(), &mut cur);
        BLOCKED_INSIDE.store(libc::sigismember(&cur, sig), Ordering::SeqCst);
    }
    COUNT.fetch_add(1, Ordering::SeqCst);
}

extern "C" fn count_handler(_sig: i32) {
    COUNT.fetch_add(1, Ordering::SeqCst);
}

extern "C" fn rt_handler(_sig: i32, info: *mut libc::siginfo_t, _uc: *mut libc::c_void) {
    // SAFETY: valid siginfo from the kernel; sival_ptr was set by sigqueue.
    let v = unsafe { (*info).si_value().sival_ptr as u64 };
    // Record the order of the queued values: 4 bits each.
    let n = COUNT.fetch_add(1, Ordering::SeqCst);
    RT_ORDER.fetch_or((v & 0xf) << (4 * n), Ordering::SeqCst);
}

fn siginfo_tests() {
    umt::set_handler(libc::SIGUSR1, info_handler as *const () as usize, 0, true);
    COUNT.store(0, Ordering::SeqCst);
    raise_kill(libc::SIGUSR1);
    check_eq(
        COUNT.load(Ordering::SeqCst),
        1,
        "handler runs once for kill(self)",
    );
    check_eq(
        SIGNO.load(Ordering::SeqCst),
        libc::SIGUSR1,
        "handler's signo",
    );
    check_eq(
        CODE.load(Ordering::SeqCst),
        libc::SI_USER,
        "si_code after kill",
    );
    check_eq(PID.load(Ordering::SeqCst), getpid(), "si_pid after kill");
    check_eq(
        BLOCKED_INSIDE.load(Ordering::SeqCst),
        1,
        "SIGUSR1 blocked inside its handler",
    );
    let mut cur = umt::sigset(&[]);
    // SAFETY: null new set: read only.
    unsafe { libc::sigprocmask(libc::SIG_BLOCK, std::ptr::null(), &mut cur) };
    // SAFETY: cur is a valid set.
    check_eq(
        unsafe { libc::sigismember(&cur, libc::SIGUSR1) },
        0,
        "SIGUSR1 unblocked after sigreturn",
    );
    say(
        "kill: SA_SIGINFO handler got SIGUSR1 si_code=SI_USER si_pid=self, signal blocked inside, restored after",
    );

    let val = libc::sigval {
        sival_ptr: 0x5eed as *mut libc::c_void,
    };
    // SAFETY: sigqueue takes plain values.
    ok(
        unsafe { libc::sigqueue(getpid(), libc::SIGUSR1, val) } as i64,
        "sigqueue",
    );
    check_eq(
        COUNT.load(Ordering::SeqCst),
        2,
        "handler count after sigqueue",
    );
    check_eq(
        CODE.load(Ordering::SeqCst),
        libc::SI_QUEUE,
        "si_code after sigqueue",
    );
    check_eq(
        VALUE.load(Ordering::SeqCst),
        0x5eed,
        "si_value after sigqueue",
    );
    check_eq(
        PID.load(Ordering::SeqCst),
        getpid(),
        "si_pid after sigqueue",
    );
    say("sigqueue: si_code=SI_QUEUE si_value=0x5eed");

    // SAFETY: tgkill takes plain integers.
    ok(
        unsafe { libc::syscall(libc::SYS_tgkill, getpid(), gettid(), libc::SIGUSR1) },
        "tgkill",
    );
    check_eq(
        COUNT.load(Ordering::SeqCst),
        3,
        "handler count after tgkill",
    );
    check_eq(
        CODE.load(Ordering::SeqCst),
        libc::SI_TKILL,
        "si_code after tgkill",
    );
    say("tgkill: si_code=SI_TKILL");

    // A fault: in a child (the handler reports and exits, as returning would fault again).
    let pid = umt::fork();
    if pid == 0 {
        umt::set_handler(libc::SIGSEGV, segv_handler as *const () as usize, 0, true);
        let p = 16usize as *const u8;
        // SAFETY: deliberately faulting read of an unmapped low address.
        let v = unsafe { std::ptr::read_volatile(p) };
        umt::exit_now(v as i32 + 100);
    }
    let st = umt::waitpid(pid, 0);
    check_eq(
        umt::describe_status(st),
        "exited 0".into(),
        "child whose SIGSEGV handler checks si_code=SEGV_MAPERR si_addr=16 (1: wrong code, 2: wrong addr)",
    );
    say("fault: SIGSEGV handler got si_code=SEGV_MAPERR si_addr=16");
}

extern "C" fn segv_handler(_sig: i32, info: *mut libc::siginfo_t, _uc: *mut libc::c_void) {
    // SAFETY: valid siginfo from the kernel for a fault.
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    let rc = if code != SEGV_MAPERR {
        1
    } else if addr != 16 {
        2
    } else {
        0
    };
    umt::exit_now(rc);
}

extern "C" fn clobber_handler(_sig: i32) {
    COUNT.fetch_add(1, Ordering::SeqCst);
    clobber_fp();
}

#[cfg(target_arch = "x86_64")]
fn clobber_fp() {
    // SAFETY: only writes the declared vector registers and MXCSR (restored by the kernel's
    // sigreturn, which is what is being tested).
    unsafe {
        let mx: u32 = 0x1f80;
        std::arch::asm!(
            "pcmpeqd xmm0, xmm0", "pcmpeqd xmm1, xmm1", "pcmpeqd xmm2, xmm2", "pcmpeqd xmm3, xmm3",
            "pcmpeqd xmm4, xmm4", "pcmpeqd xmm5, xmm5", "pcmpeqd xmm6, xmm6", "pcmpeqd xmm7, xmm7",
            "pcmpeqd xmm8, xmm8", "pcmpeqd xmm9, xmm9", "pcmpeqd xmm10, xmm10", "pcmpeqd xmm11, xmm11",
            "pcmpeqd xmm12, xmm12", "pcmpeqd xmm13, xmm13", "pcmpeqd xmm14, xmm14", "pcmpeqd xmm15, xmm15",
            "ldmxcsr [{m}]",
            m = in(reg) &mx,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
        );
    }
}

/// Loads the vector registers from `vals`, sends SIGUSR2 to itself with a raw syscall (the handler
/// runs on the way back), stores them into `out`. Returns the FP control/status word after.
#[cfg(target_arch = "x86_64")]
fn fp_roundtrip(vals: &[u64; 64], out: &mut [u64; 64]) -> u32 {
    let pid = getpid() as u64;
    let mx_in: u32 = 0x7f80; // all exceptions masked, round toward zero
    let mut mx_out = [0u32; 2];
    // SAFETY: reads vals, writes out and mx_out (all live); kill(2) via syscall clobbers rax, rcx,
    // r11; the vector registers are declared clobbered.
    unsafe {
        std::arch::asm!(
            "ldmxcsr [{mi}]",
            "movdqu xmm0, [{v}]", "movdqu xmm1, [{v}+16]", "movdqu xmm2, [{v}+32]", "movdqu xmm3, [{v}+48]",
            "movdqu xmm4, [{v}+64]", "movdqu xmm5, [{v}+80]", "movdqu xmm6, [{v}+96]", "movdqu xmm7, [{v}+112]",
            "movdqu xmm8, [{v}+128]", "movdqu xmm9, [{v}+144]", "movdqu xmm10, [{v}+160]", "movdqu xmm11, [{v}+176]",
            "movdqu xmm12, [{v}+192]", "movdqu xmm13, [{v}+208]", "movdqu xmm14, [{v}+224]", "movdqu xmm15, [{v}+240]",
            "syscall",
            "movdqu [{o}], xmm0", "movdqu [{o}+16], xmm1", "movdqu [{o}+32], xmm2", "movdqu [{o}+48], xmm3",
            "movdqu [{o}+64], xmm4", "movdqu [{o}+80], xmm5", "movdqu [{o}+96], xmm6", "movdqu [{o}+112], xmm7",
            "movdqu [{o}+128], xmm8", "movdqu [{o}+144], xmm9", "movdqu [{o}+160], xmm10", "movdqu [{o}+176], xmm11",
            "movdqu [{o}+192], xmm12", "movdqu [{o}+208], xmm13", "movdqu [{o}+224], xmm14", "movdqu [{o}+240], xmm15",
            "stmxcsr [{mo}]",
            "mov eax, 0x1f80",
            "mov [{mo}+4], eax",
            "ldmxcsr [{mo}+4]",
            v = in(reg) vals.as_ptr(),
            o = in(reg) out.as_mut_ptr(),
            mi = in(reg) &mx_in,
            mo = in(reg) mx_out.as_mut_ptr(),
            inout("rax") libc::SYS_kill => _,
            in("rdi") pid,
            in("rsi") libc::SIGUSR2 as u64,
            out("rcx") _, out("r11") _,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
        );
    }
    mx_out[0]
}

#[cfg(target_arch = "aarch64")]
fn clobber_fp() {
    // SAFETY: only writes the declared vector registers and FPCR (restored by sigreturn).
    unsafe {
        std::arch::asm!(
            "movi v0.16b, #0xff", "movi v1.16b, #0xff", "movi v2.16b, #0xff", "movi v3.16b, #0xff",
            "movi v4.16b, #0xff", "movi v5.16b, #0xff", "movi v6.16b, #0xff", "movi v7.16b, #0xff",
            "movi v8.16b, #0xff", "movi v9.16b, #0xff", "movi v10.16b, #0xff", "movi v11.16b, #0xff",
            "movi v12.16b, #0xff", "movi v13.16b, #0xff", "movi v14.16b, #0xff", "movi v15.16b, #0xff",
            "movi v16.16b, #0xff", "movi v17.16b, #0xff", "movi v18.16b, #0xff", "movi v19.16b, #0xff",
            "movi v20.16b, #0xff", "movi v21.16b, #0xff", "movi v22.16b, #0xff", "movi v23.16b, #0xff",
            "movi v24.16b, #0xff", "movi v25.16b, #0xff", "movi v26.16b, #0xff", "movi v27.16b, #0xff",
            "movi v28.16b, #0xff", "movi v29.16b, #0xff", "movi v30.16b, #0xff", "movi v31.16b, #0xff",
            "msr fpcr, xzr",
            out("v0") _, out("v1") _, out("v2") _, out("v3") _, out("v4") _, out("v5") _,
            out("v6") _, out("v7") _, out("v8") _, out("v9") _, out("v10") _, out("v11") _,
            out("v12") _, out("v13") _, out("v14") _, out("v15") _, out("v16") _, out("v17") _,
            out("v18") _, out("v19") _, out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _, out("v28") _, out("v29") _,
            out("v30") _, out("v31") _,
        );
    }
}

#[cfg(target_arch = "aarch64")]
fn fp_roundtrip(vals: &[u64; 64], out: &mut [u64; 64]) -> u32 {
    let pid = getpid() as u64;
    let fpcr_in: u64 = 3 << 22; // round toward zero
    let fpcr_out: u64;
    // SAFETY: reads vals, writes out (both live, 512 bytes); kill(2) via svc; the vector registers
    // are declared clobbered.
    unsafe {
        std::arch::asm!(
            "msr fpcr, {fi}",
            "ldp q0, q1, [{v}, #0]", "ldp q2, q3, [{v}, #32]", "ldp q4, q5, [{v}, #64]", "ldp q6, q7, [{v}, #96]",
            "ldp q8, q9, [{v}, #128]", "ldp q10, q11, [{v}, #160]", "ldp q12, q13, [{v}, #192]", "ldp q14, q15, [{v}, #224]",
            "ldp q16, q17, [{v}, #256]", "ldp q18, q19, [{v}, #288]", "ldp q20, q21, [{v}, #320]", "ldp q22, q23, [{v}, #352]",
            "ldp q24, q25, [{v}, #384]", "ldp q26, q27, [{v}, #416]", "ldp q28, q29, [{v}, #448]", "ldp q30, q31, [{v}, #480]",
            "svc #0",
            "stp q0, q1, [{o}, #0]", "stp q2, q3, [{o}, #32]", "stp q4, q5, [{o}, #64]", "stp q6, q7, [{o}, #96]",
            "stp q8, q9, [{o}, #128]", "stp q10, q11, [{o}, #160]", "stp q12, q13, [{o}, #192]", "stp q14, q15, [{o}, #224]",
            "stp q16, q17, [{o}, #256]", "stp q18, q19, [{o}, #288]", "stp q20, q21, [{o}, #320]", "stp q22, q23, [{o}, #352]",
            "stp q24, q25, [{o}, #384]", "stp q26, q27, [{o}, #416]", "stp q28, q29, [{o}, #448]", "stp q30, q31, [{o}, #480]",
            "mrs {fo}, fpcr",
            "msr fpcr, xzr",
            v = in(reg) vals.as_ptr(),
            o = in(reg) out.as_mut_ptr(),
            fi = in(reg) fpcr_in,
            fo = out(reg) fpcr_out,
            in("x8") libc::SYS_kill,
            inout("x0") pid => _,
            in("x1") libc::SIGUSR2 as u64,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _, out("v4") _, out("v5") _,
            out("v6") _, out("v7") _, out("v8") _, out("v9") _, out("v10") _, out("v11") _,
            out("v12") _, out("v13") _, out("v14") _, out("v15") _, out("v16") _, out("v17") _,
            out("v18") _, out("v19") _, out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _, out("v28") _, out("v29") _,
            out("v30") _, out("v31") _,
        );
    }
    (fpcr_out >> 22 & 3) as u32
}

fn fp_tests() {
    umt::set_handler(
        libc::SIGUSR2,
        clobber_handler as *const () as usize,
        0,
        false,
    );
    let mut vals = [0u64; 64];
    for (i, v) in vals.iter_mut().enumerate() {
        *v = 0x0102_0304_0506_0708u64.wrapping_mul(i as u64 + 1) ^ 0xa5a5_0000_5a5a_0000;
    }
    let mut out = [0u64; 64];
    COUNT.store(0, Ordering::SeqCst);
    let ctl = fp_roundtrip(&vals, &mut out);
    check_eq(
        COUNT.load(Ordering::SeqCst),
        1,
        "the clobbering handler ran during the raw kill syscall",
    );
    #[cfg(target_arch = "x86_64")]
    let (nregs, ctl_want, name) = (16, 0x7f80, "xmm0-15 and MXCSR");
    #[cfg(target_arch = "aarch64")]
    let (nregs, ctl_want, name) = (32, 3, "v0-v31 and FPCR");
    for r in 0..nregs {
        if out[2 * r..2 * r + 2] != vals[2 * r..2 * r + 2] {
            umt::fail(format!(
                "vector register {r} changed across a signal handler: {:#x}:{:#x} became {:#x}:{:#x}",
                vals[2 * r],
                vals[2 * r + 1],
                out[2 * r],
                out[2 * r + 1]
            ));
        }
    }
    check_eq(ctl, ctl_want, "FP control register after the handler");
    say(format!("fp: {name} survive a handler that clobbers them"));
}

extern "C" fn alt_handler(_sig: i32) {
    let local = 0u8;
    let here = &local as *const u8 as usize;
    let inside = here >= ALT_LO.load(Ordering::SeqCst) && here < ALT_HI.load(Ordering::SeqCst);
    ON_ALT.store(inside as i32, Ordering::SeqCst);
    // SAFETY: stack_t is plain data; a null new stack only queries.
    let mut cur: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::sigaltstack(std::ptr::null(), &mut cur) };
    ALT_FLAGS.store(cur.ss_flags, Ordering::SeqCst);
    COUNT.fetch_add(1, Ordering::SeqCst);
}

fn altstack_tests() {
    let size = 256 * 1024;
    // SAFETY: a fresh private anonymous mapping; checked below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    check(p != libc::MAP_FAILED, "mmap for the alternate stack");
    ALT_LO.store(p as usize, Ordering::SeqCst);
    ALT_HI.store(p as usize + size, Ordering::SeqCst);
    let ss = libc::stack_t {
        ss_sp: p,
        ss_flags: 0,
        ss_size: size,
    };
    // SAFETY: ss describes the live mapping above; null old.
    ok(
        unsafe { libc::sigaltstack(&ss, std::ptr::null_mut()) } as i64,
        "sigaltstack",
    );
    // SAFETY: zeroed stack_t, query only.
    let mut cur: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    ok(
        unsafe { libc::sigaltstack(std::ptr::null(), &mut cur) } as i64,
        "sigaltstack query",
    );
    check_eq(cur.ss_size, size, "sigaltstack query: ss_size");
    check_eq(
        cur.ss_flags,
        0,
        "sigaltstack query outside a handler: ss_flags",
    );
    let small = libc::stack_t {
        ss_sp: p,
        ss_flags: 0,
        ss_size: 512,
    };
    // SAFETY: valid struct; the kernel must refuse the size.
    expect_err(
        unsafe { libc::sigaltstack(&small, std::ptr::null_mut()) } as i64,
        libc::ENOMEM,
        "sigaltstack smaller than MINSIGSTKSZ",
    );

    umt::set_handler(
        libc::SIGUSR2,
        alt_handler as *const () as usize,
        libc::SA_ONSTACK,
        false,
    );
    COUNT.store(0, Ordering::SeqCst);
    raise_kill(libc::SIGUSR2);
    check_eq(COUNT.load(Ordering::SeqCst), 1, "SA_ONSTACK handler ran");
    check_eq(
        ON_ALT.load(Ordering::SeqCst),
        1,
        "SA_ONSTACK handler's locals are on the alternate stack",
    );
    check_eq(
        ALT_FLAGS.load(Ordering::SeqCst),
        libc::SS_ONSTACK,
        "sigaltstack inside the handler: ss_flags",
    );

    // Without SA_ONSTACK the handler runs on the normal stack.
    umt::set_handler(libc::SIGUSR2, alt_handler as *const () as usize, 0, false);
    raise_kill(libc::SIGUSR2);
    check_eq(
        ON_ALT.load(Ordering::SeqCst),
        0,
        "handler without SA_ONSTACK runs on the normal stack",
    );
    let off = libc::stack_t {
        ss_sp: std::ptr::null_mut(),
        ss_flags: libc::SS_DISABLE,
        ss_size: 0,
    };
    // SAFETY: valid struct.
    ok(
        unsafe { libc::sigaltstack(&off, std::ptr::null_mut()) } as i64,
        "sigaltstack SS_DISABLE",
    );
    say("sigaltstack: SA_ONSTACK handler on the alternate stack with SS_ONSTACK; others not");
}

/// A thread that, after `delay_ms`, sends SIGUSR1 to thread `tid`, then after another `delay_ms`
/// writes one byte to `wfd` (if >= 0).
fn poke_later(tid: i32, delay_ms: u64, wfd: i32) -> std::thread::JoinHandle<()> {
    let pid = getpid();
    std::thread::spawn(move || {
        umt::sleep_ms(delay_ms);
        // SAFETY: plain integers.
        unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, libc::SIGUSR1) };
        if wfd >= 0 {
            umt::sleep_ms(delay_ms);
            umt::write_all(wfd, b"x", "write to the pipe");
        }
    })
}

fn restart_tests() {
    let (r, w) = umt::pipe2(libc::O_CLOEXEC);
    let me = gettid();
    let mut buf = [0u8; 8];

    umt::set_handler(libc::SIGUSR1, count_handler as *const () as usize, 0, false);
    COUNT.store(0, Ordering::SeqCst);
    let h = poke_later(me, 50, w);
    let n = umt::read_raw(r, &mut buf);
    let e = umt::errno();
    check(
        n == -1 && e == libc::EINTR,
        format!(
            "read from an empty pipe interrupted by a handler without SA_RESTART: got {n} ({}), want -1 EINTR",
            umt::ename(e)
        ),
    );
    check_eq(COUNT.load(Ordering::SeqCst), 1, "handler count");
    h.join().ok();
    check_eq(
        umt::read_raw(r, &mut buf),
        1,
        "reading the byte written afterwards",
    );
    say("read without SA_RESTART: EINTR");

    umt::set_handler(
        libc::SIGUSR1,
        count_handler as *const () as usize,
        libc::SA_RESTART,
        false,
    );
    COUNT.store(0, Ordering::SeqCst);
    let h = poke_later(me, 50, w);
    let n = umt::read_raw(r, &mut buf);
    let e = umt::errno();
    check(
        n == 1 && buf[0] == b'x',
        format!(
            "read from an empty pipe with an SA_RESTART handler: got {n} ({}), want 1 byte 'x'",
            if n < 0 { umt::ename(e) } else { "-".into() }
        ),
    );
    check_eq(COUNT.load(Ordering::SeqCst), 1, "handler count");
    h.join().ok();
    say("read with SA_RESTART: restarted, got the data");
    umt::close(r);
    umt::close(w);
}

fn suspend_and_mask_tests() {
    let me = gettid();
    umt::set_handler(libc::SIGUSR1, count_handler as *const () as usize, 0, false);
    let old = umt::sigprocmask(libc::SIG_BLOCK, &[libc::SIGUSR1]);
    COUNT.store(0, Ordering::SeqCst);
    let h = poke_later(me, 30, -1);
    let empty = umt::sigset(&[]);
    // SAFETY: valid set.
    let r = unsafe { libc::sigsuspend(&empty) };
    expect_err(r as i64, libc::EINTR, "sigsuspend");
    check_eq(
        COUNT.load(Ordering::SeqCst),
        1,
        "handler ran inside sigsuspend",
    );
    h.join().ok();
    let mut cur = umt::sigset(&[]);
    // SAFETY: query only.
    unsafe { libc::sigprocmask(libc::SIG_BLOCK, std::ptr::null(), &mut cur) };
    // SAFETY: valid set.
    check_eq(
        unsafe { libc::sigismember(&cur, libc::SIGUSR1) },
        1,
        "mask restored after sigsuspend (SIGUSR1 blocked again)",
    );
    say("sigsuspend: EINTR after the handler, mask restored");

    // Blocked: stays pending, coalesces, runs once when unblocked.
    COUNT.store(0, Ordering::SeqCst);
    raise_kill(libc::SIGUSR1);
    raise_kill(libc::SIGUSR1);
    check_eq(
        COUNT.load(Ordering::SeqCst),
        0,
        "handler of a blocked signal did not run",
    );
    let mut pend = umt::sigset(&[]);
    // SAFETY: valid set.
    ok(unsafe { libc::sigpending(&mut pend) } as i64, "sigpending");
    // SAFETY: valid set.
    check_eq(
        unsafe { libc::sigismember(&pend, libc::SIGUSR1) },
        1,
        "SIGUSR1 in sigpending",
    );
    umt::sigprocmask(libc::SIG_UNBLOCK, &[libc::SIGUSR1]);
    check_eq(
        COUNT.load(Ordering::SeqCst),
        1,
        "a standard signal sent twice while blocked is delivered once on unblock",
    );
    say("sigprocmask: blocked signal pending, delivered once on unblock");

    // Real-time signals queue, in order.
    let rt = libc::SIGRTMIN();
    umt::set_handler(rt, rt_handler as *const () as usize, 0, true);
    umt::sigprocmask(libc::SIG_BLOCK, &[rt]);
    COUNT.store(0, Ordering::SeqCst);
    RT_ORDER.store(0, Ordering::SeqCst);
    for v in 1..=3usize {
        let val = libc::sigval {
            sival_ptr: v as *mut libc::c_void,
        };
        // SAFETY: plain values.
        ok(
            unsafe { libc::sigqueue(getpid(), rt, val) } as i64,
            "sigqueue(SIGRTMIN)",
        );
    }
    umt::sigprocmask(libc::SIG_UNBLOCK, &[rt]);
    check_eq(
        COUNT.load(Ordering::SeqCst),
        3,
        "a real-time signal queued 3 times is delivered 3 times",
    );
    check_eq(
        RT_ORDER.load(Ordering::SeqCst),
        0x321,
        "real-time signal values in order (1,2,3)",
    );
    say("real-time signals: queued 3, delivered 3 in order");

    // sigtimedwait takes a pending blocked signal without running the handler.
    umt::sigprocmask(libc::SIG_BLOCK, &[libc::SIGUSR2]);
    umt::set_handler(libc::SIGUSR2, count_handler as *const () as usize, 0, false);
    COUNT.store(0, Ordering::SeqCst);
    raise_kill(libc::SIGUSR2);
    let set = umt::sigset(&[libc::SIGUSR2]);
    // SAFETY: zeroed siginfo for the kernel to fill.
    let mut si: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let ts = libc::timespec {
        tv_sec: 1,
        tv_nsec: 0,
    };
    // SAFETY: valid set, siginfo and timespec.
    let got = unsafe { libc::sigtimedwait(&set, &mut si, &ts) };
    check_eq(got, libc::SIGUSR2, "sigtimedwait result");
    check_eq(si.si_code, libc::SI_USER, "sigtimedwait si_code");
    check_eq(
        COUNT.load(Ordering::SeqCst),
        0,
        "handler did not run for a signal taken by sigtimedwait",
    );
    let ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 20_000_000,
    };
    // SAFETY: as above.
    let got = unsafe { libc::sigtimedwait(&set, &mut si, &ts) };
    expect_err(
        got as i64,
        libc::EAGAIN,
        "sigtimedwait with nothing pending and a 20 ms timeout",
    );
    say("sigtimedwait: took the pending signal; EAGAIN on timeout");

    // SAFETY: old is the mask saved above.
    unsafe { libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
}

fn main() {
    umt::init("signals");
    siginfo_tests();
    fp_tests();
    altstack_tests();
    restart_tests();
    suspend_and_mask_tests();
    umt::done("signals");
}
