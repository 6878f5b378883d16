//! What only an arm64 host can do: the stub's machine code, and the ptrace glue that reads and
//! writes arm64 registers and makes a stub run host syscalls for the kernel.
//!
//! **Registers.** A guest thread's state is four regsets: `NT_PRSTATUS` (x0-x30, sp, pc,
//! pstate), `NT_ARM_SYSTEM_CALL` (the syscall number: writing x8 at a stop does not redirect a
//! call), `NT_ARM_TLS` (tpidr_el0) and `NT_PRFPREG` (FP/SIMD). [`get_regs`] reads the first three
//! and sets `orig_x0` from x0; [`set_regs`] writes `NT_PRSTATUS` and `NT_ARM_TLS`, never the
//! syscall number: that is written once, by [`syscall_stop`], at the entry stop where it means
//! something (rewriting it elsewhere corrupted in-flight calls in the C port).
//!
//! **x7 at syscall stops.** At a syscall stop arm64 reports x7 as the stop direction (0 entry,
//! 1 exit) and throws away writes to it (`report_syscall` in arch/arm64/kernel/ptrace.c saves
//! x7, reports, and restores it). x7 is no syscall argument but it is live across `svc` (libc
//! wrappers tell the compiler only x0 changes), so a kernel that builds a signal frame, copies
//! registers for fork/clone, or restores registers after making the stub run host calls, from
//! registers read at a syscall stop, hands the guest a wrong x7. So, like the C port, the
//! engine never stays at a syscall stop: [`syscall_stop`] resumes the thread with
//! `PTRACE_SINGLESTEP`, which from a syscall stop is a *pseudo-step*: the host reports syscall
//! exit as a SIGTRAP stop (`ptrace_report_syscall_exit(regs, 1)`) with x7 already restored and
//! before any user instruction runs. There every register is real and writable; the kernel
//! answers the call there and the SIGTRAP is suppressed when it resumes. Under
//! `PTRACE_SYSEMU` the call was skipped at entry; under `PTRACE_SYSCALL` (nosysemu/nocancel)
//! the number is first replaced by -1 or getppid and the step replaces the run to the exit
//! stop. One extra stop per syscall in SYSEMU mode is the price of a correct x7.
//!
//! **PAC.** Every stub disables its pointer-authentication keys
//! (`prctl(PR_PAC_SET_ENABLED_KEYS, APIA|APIB|APDA|APDB, 0)`) in its entry code, before the
//! kernel ever runs guest code in it: a guest fork makes a new stub by exec, exec gives fresh
//! keys, and code built with return-address signing would return through `autiasp` with the
//! wrong key (fatal with FEAT_FPAC, as on qemu `-cpu max`). With the keys disabled the PAC
//! instructions are NOPs in every stub. On hosts without PAC the prctl fails and is ignored.

use crate::regs::{PC, REGS_SIZE, Regs};
use crate::signal::{FPSTATE_SIZE, image_to_regset, regset_to_image};
use crate::stub;
use std::io;
use um_os_linux::ptrace::{
    self, Event, NT_ARM_SYSTEM_CALL, NT_ARM_TLS, NT_PRFPREG, NT_PRSTATUS, Resume, Stop, Stopped,
};

// The stub code. Position-independent (it finds its data area pc-relative), copied verbatim
// into the stub executable. Entry points are offsets from `um_arm64_stub_start`. asm-generic
// numbers: prctl 167, getpid 172, kill 129, ppoll 73.
//
// entry:   disable the PAC keys, stop ourselves (kill(getpid(), SIGSTOP)) so the kernel can
//          seize us; never resumed here (the kernel redirects pc), but park forever anyway:
//          arm64 has no pause(), so ppoll(NULL, 0, NULL, NULL) in a loop.
// syscall: one host syscall with the registers the kernel set, then brk #0 -> SIGTRAP stop.
// clone:   clone(); the parent traps, the new thread parks in ppoll until it is seized.
// batch:   run the ops queued in the data area in order, each result into its op; brk #0.
core::arch::global_asm!(
    ".pushsection .text.um_arm64_stub, \"ax\"",
    ".p2align 12",
    ".globl um_arm64_stub_start",
    "um_arm64_stub_start:",
    ".globl um_arm64_stub_entry",
    "um_arm64_stub_entry:",
    "    mov x0, #60",          // PR_PAC_SET_ENABLED_KEYS
    "    mov x1, #15",          // APIA | APIB | APDA | APDB
    "    mov x2, #0",           // ... all disabled
    "    mov x3, #0",
    "    mov x4, #0",
    "    mov x8, #167",         // prctl
    "    svc #0",
    "    ldr x9, [sp]",         // argc 2: set ourselves up (seccomp engine), below
    "    cmp x9, #2",
    "    b.eq 60f",
    "    mov x8, #172",         // getpid
    "    svc #0",
    "    mov x1, #19",          // SIGSTOP
    "    mov x8, #129",         // kill
    "    svc #0",
    "2:  mov x0, #0",
    "    mov x1, #0",
    "    mov x2, #0",
    "    mov x3, #0",
    "    mov x4, #0",
    "    mov x8, #73",          // ppoll
    "    svc #0",
    "    b 2b",
    // Self-setup (seccomp engine), as in the x86_64 stub: map the data area (fd 4), run the
    // setup calls written there (the last installs the filter), trap from the second page.
    "60: adr x19, um_arm64_stub_start",
    "    mov x9, #{data}",
    "    add x20, x19, x9",
    "    mov x0, x20",
    "    mov x1, #{data_size}",
    "    mov x2, #3",           // PROT_READ | PROT_WRITE
    "    mov x3, #0x11",        // MAP_SHARED | MAP_FIXED
    "    mov x4, #4",
    "    mov x5, #0",
    "    mov x8, #222",         // mmap
    "    svc #0",
    "    cmn x0, #4095",
    "    b.hs 68f",
    "    mov x9, #{setup_count}",
    "    ldr x21, [x20, x9]",
    "    mov x9, #{setup_ops}",
    "    add x22, x20, x9",
    "    mov x23, #0",
    "61: cmp x23, x21",
    "    b.hs 63f",
    "    ldr x8, [x22]",
    "    ldp x0, x1, [x22, #8]",
    "    ldp x2, x3, [x22, #24]",
    "    ldp x4, x5, [x22, #40]",
    "    svc #0",
    // The clone among the setup calls makes the mapper: the child (x0 0) goes its own way.
    "    cbnz x0, 64f",
    "    ldr x9, [x22]",
    "    cmp x9, #220",         // clone
    "    b.eq 70f",
    "64: str x0, [x22, #{result}]",
    "    cmn x0, #4095",
    "    b.hs 62f",
    "    add x22, x22, #{opsize}",
    "    add x23, x23, #1",
    "    b 61b",
    "62: add x23, x23, #1",
    "    mov x9, #{setup_failed}",
    "    str x23, [x20, x9]",
    "68: mov x0, #1",
    "    mov x8, #94",          // exit_group (the filter may kill instead: the same end)
    "    svc #0",
    "    brk #0",
    "63: mov x9, #{slots_off}",
    "    add x9, x9, #{boot_stack}",
    "    add x9, x19, x9",
    "    mov sp, x9",
    "    b um_arm64_stub_trap",
    // The mapper, as on x86_64: no guest code, every signal blocked, no stack. x20: the data
    // area; x23: entries run. Orders from the read-only ring (a host call, or a handback:
    // MAPQ_HANDBACK), a failed call (but mprotect's ENOMEM) ends the process, progress in
    // MAP_DONE (release); once drained, the kernel woken if it waits (MAP_KWAIT), a bounded
    // spin (CNTVCT_EL0), then a park on the tail.
    "70: mov x9, #{mapq_setup}",
    "    add x22, x20, x9",
    "    ldr x8, [x22]",
    "    ldp x0, x1, [x22, #8]",
    "    ldp x2, x3, [x22, #24]",
    "    ldp x4, x5, [x22, #40]",
    "    svc #0",
    "    cmn x0, #4095",
    "    b.hs 68b",
    "    mov x23, #0",
    "    mov x21, #0",          // 1: a handback woke a parked thread since the ring drained
    "    mov x9, #{mapq_tail}",
    "    add x24, x20, x9",     // &MAPQ_TAIL
    "    mov x9, #{map_done}",
    "    add x25, x20, x9",     // &MAP_DONE
    "    mov x9, #{map_kwait}",
    "    add x26, x20, x9",     // &MAP_KWAIT
    "    mov x9, #{map_sleep}",
    "    add x27, x20, x9",     // &MAP_SLEEP
    "71: ldar x10, [x24]",     // the tail before the entries it publishes
    "    cmp x23, x10",
    "    b.eq 74f",
    "    and x11, x23, #{mapq_mask}",
    "    lsl x11, x11, #6",
    "    mov x9, #{mapq_ops}",
    "    add x11, x11, x9",
    "    add x22, x20, x11",
    "    ldr x8, [x22]",
    "    cmn x8, #1",           // MAPQ_HANDBACK
    "    b.eq 80f",
    "    ldp x0, x1, [x22, #8]",
    "    ldp x2, x3, [x22, #24]",
    "    ldp x4, x5, [x22, #40]",
    "    svc #0",
    "    cmn x0, #4095",
    "    b.hs 85f",
    "72: and x11, x23, #{mapq_mask}",
    "    lsl x11, x11, #3",
    "    mov x9, #{map_results}",
    "    add x11, x11, x9",
    "    str x0, [x20, x11]",
    "    add x23, x23, #1",
    "    stlr x23, [x25]",      // the result before the count
    "    b 71b",
    // Drained: wake a kernel thread that waits on MAP_DONE.
    "74: dmb ish",              // the count before the look at MAP_KWAIT
    "    ldar w10, [x26]",
    "    cbz w10, 75f",
    "    str wzr, [x26]",
    "    mov x0, x25",
    "    mov x1, #1",           // FUTEX_WAKE, every waiter
    "    mov w2, #0x7fffffff",
    "    mov x8, #98",
    "    svc #0",
    "    b 71b",
    // Handback: exchange the word the (read-only) entry names to 0 with release semantics, so
    // the ops above are made before the thread can run; wake its waiters if it had any.
    "80: ldr x0, [x22, #8]",
    "81: ldaxr w10, [x0]",
    "    stlxr w11, wzr, [x0]",
    "    cbnz w11, 81b",
    "    tbz w10, #1, 82f",     // WAITER
    "    mov x1, #1",           // FUTEX_WAKE, every waiter (the stub and its kernel thread)
    "    mov w2, #0x7fffffff",
    "    mov x8, #98",
    "    svc #0",
    "    mov x21, #1",
    "82: mov x0, #0",
    "    b 72b",
    // A failed call: mprotect's ENOMEM is fine, anything else ends the process.
    "85: ldr x9, [x22]",
    "    cmp x9, #226",         // mprotect
    "    b.ne 86f",
    "    cmn x0, #12",          // -ENOMEM
    "    b.eq 72b",
    "86: and x11, x23, #{mapq_mask}",
    "    lsl x11, x11, #3",
    "    mov x9, #{map_results}",
    "    add x11, x11, x9",
    "    str x0, [x20, x11]",
    "    add x10, x23, #1",
    "    mov x9, #{map_failed}",
    "    str x10, [x20, x9]",
    "    mov x0, #1",
    "    mov x8, #94",          // exit_group
    "    svc #0",
    "    brk #0",
    // Drained: park at once if a handback just woke a parked thread (it wants this CPU),
    // else spin first.
    "75: cbz x21, 79f",
    "    mov x21, #0",
    "    b 77f",
    "79: mov x9, #{mapq_spin}",
    "    ldr x28, [x20, x9]",
    "    cbz x28, 77f",
    "    mrs x10, cntvct_el0",
    "    add x28, x28, x10",
    "76: ldar x10, [x24]",
    "    cmp x23, x10",
    "    b.ne 71b",
    "    yield",
    "    mrs x10, cntvct_el0",
    "    cmp x10, x28",
    "    b.lo 76b",
    "77: mov w10, #1",
    "    str w10, [x27]",
    "    dmb ish",              // MAP_SLEEP before the second look at the tail
    "    ldar x10, [x24]",
    "    cmp x23, x10",
    "    b.ne 78f",
    "    mov x0, x24",
    "    mov x1, #0",           // FUTEX_WAIT
    "    mov w2, w23",
    "    mov x3, #0",
    "    mov x8, #98",
    "    svc #0",
    "78: str wzr, [x27]",
    "    b 71b",
    ".globl um_arm64_stub_syscall",
    "um_arm64_stub_syscall:",
    "    svc #0",
    "    brk #0",
    ".globl um_arm64_stub_clone",
    "um_arm64_stub_clone:",
    "    svc #0",
    "    cbnz x0, 7f",
    "6:  mov x0, #0",           // the new thread: park until its serving thread seizes it
    "    mov x1, #0",
    "    mov x2, #0",
    "    mov x3, #0",
    "    mov x4, #0",
    "    mov x8, #73",          // ppoll
    "    svc #0",
    "    b 6b",
    "7:  brk #0",
    ".globl um_arm64_stub_batch",
    "um_arm64_stub_batch:",
    "    adr x19, um_arm64_stub_start",
    "    mov x9, #{data}",
    "    add x19, x19, x9",
    "    ldr x20, [x19, #{count}]",
    "    add x21, x19, #{ops}",
    "    mov x22, #0",
    "3:  cmp x22, x20",
    "    b.hs 5f",
    "    ldr x8, [x21]",
    "    ldp x0, x1, [x21, #8]",
    "    ldp x2, x3, [x21, #24]",
    "    ldp x4, x5, [x21, #40]",
    "    svc #0",
    "    str x0, [x21, #{result}]",
    "    add x21, x21, #{opsize}",
    "    add x22, x22, #1",
    "    b 3b",
    "5:  brk #0",
    // ---- seccomp engine (the same protocol as the x86_64 stub; see um_arch_x86::host) ----
    ".globl um_arm64_stub_restorer",
    "um_arm64_stub_restorer:",
    "    mov x8, #139",         // rt_sigreturn
    "    svc #0",
    "    brk #0",
    // The handler: x0 = signo, x1 = siginfo, x2 = ucontext, sp on the slot's alternate stack,
    // x30 = the restorer, every signal blocked. It saves and restores tpidr_el0 through the
    // slot (the guest sets it without a syscall, and the frame does not carry it).
    ".globl um_arm64_stub_handler",
    "um_arm64_stub_handler:",
    "    mov x19, sp",
    "    lsr x19, x19, #{slot_shift}",
    "    lsl x19, x19, #{slot_shift}",
    "    str x0, [x19, #{signo}]",
    "    str x1, [x19, #{siginfo}]",
    "    str x2, [x19, #{uctx}]",
    "    mrs x3, tpidr_el0",
    "    str x3, [x19, #{tls}]",
    "    mov x3, #{r_signal}",
    "    str x3, [x19, #{reason}]",
    // Hand over: an exchange with release (the slot's stores before it) and acquire.
    "10: ldaxr w3, [x19]",
    "    mov w4, #{owner_kernel}",
    "    stlxr w5, w4, [x19]",
    "    cbnz w5, 10b",
    "    tbz w3, #1, 11f",      // WAITER: the kernel parked, wake it
    "    mov x0, x19",
    "    mov x1, #1",           // FUTEX_WAKE (shared)
    "    mov x2, #1",
    "    mov x8, #98",          // futex
    "    svc #0",
    // Spin on CNTVCT_EL0 for SLOT_SPIN ticks, then park.
    "11: ldr x21, [x19, #{spin}]",
    "    cbz x21, 13f",
    "    mrs x22, cntvct_el0",
    "    add x21, x21, x22",
    "12: ldar w3, [x19]",
    "    tbz w3, #0, 20f",
    "    yield",
    "    mrs x22, cntvct_el0",
    "    cmp x22, x21",
    "    b.lo 12b",
    "13: ldaxr w3, [x19]",
    "    tbz w3, #0, 14f",
    "    orr w4, w3, #{waiter}",
    "    stlxr w5, w4, [x19]",
    "    cbnz w5, 13b",
    "    mov x0, x19",
    "    mov x1, #0",           // FUTEX_WAIT on exactly the value with WAITER
    "    mov w2, w4",
    "    mov x3, #0",
    "    mov x8, #98",
    "    svc #0",
    "    b 13b",
    "14: clrex",
    // Ours again: run the ops; the first failure is reported and stops the rest.
    "20: ldr x21, [x19, #{slot_count}]",
    "    add x22, x19, #{slot_ops}",
    "    mov x23, #0",
    "21: cmp x23, x21",
    "    b.hs 23f",
    "    ldr x8, [x22]",
    "    ldp x0, x1, [x22, #8]",
    "    ldp x2, x3, [x22, #24]",
    "    ldp x4, x5, [x22, #40]",
    "    svc #0",
    "    str x0, [x22, #{result}]",
    "    cmn x0, #4095",
    "    b.hs 22f",
    "    add x22, x22, #{opsize}",
    "    add x23, x23, #1",
    "    b 21b",
    "22: str x23, [x19, #{failed}]",
    "    str xzr, [x19, #{slot_count}]",
    "    mov x3, #{r_failed}",
    "    str x3, [x19, #{reason}]",
    "    b 10b",
    "23: str xzr, [x19, #{slot_count}]",
    "    ldr x3, [x19, #{cmd}]",
    "    cbz x3, 30f",
    "    cmp x3, #{cmd_clone}",
    "    b.eq 40f",
    "    cmp x3, #{cmd_ops}",
    "    b.eq 24f",
    "    mov x0, #0",           // CMD_EXIT
    "    mov x8, #93",          // exit
    "    svc #0",
    "    brk #0",
    "24: str xzr, [x19, #{cmd}]",
    "    mov x3, #{r_done}",
    "    str x3, [x19, #{reason}]",
    "    b 10b",
    "30: ldr x3, [x19, #{tls}]",
    "    msr tpidr_el0, x3",
    "    ret",                  // to the restorer (x30)
    // CMD_CLONE: clone(flags, stack, ptid, tls, ctid) onto the slot at SLOT_CMD_ARG.
    "40: str xzr, [x19, #{cmd}]",
    "    ldr x1, [x19, #{cmd_arg}]",
    "    add x4, x1, #{tid}",
    "    add x1, x1, #{boot_stack}",
    "    movz x0, #{flags_lo}",
    "    movk x0, #{flags_hi}, lsl #16",
    "    mov x2, #0",
    "    mov x3, #0",
    "    mov x8, #220",         // clone
    "    svc #0",
    "    cbz x0, 50f",
    "    str x0, [x19, #{cmd_result}]",
    "    mov x3, #{r_done}",
    "    str x3, [x19, #{reason}]",
    "    b 10b",
    "50: mov x19, sp",
    "    lsr x19, x19, #{slot_shift}",
    "    lsl x19, x19, #{slot_shift}",
    "    sub sp, sp, #32",
    "    add x0, x19, #{altstack}",
    "    str x0, [sp]",
    "    str xzr, [sp, #8]",
    "    mov x0, #{altstack_size}",
    "    str x0, [sp, #16]",
    "    mov x0, sp",
    "    mov x1, #0",
    "    mov x8, #132",         // sigaltstack
    "    svc #0",
    "    str xzr, [sp]",
    "    mov x0, #2",           // SIG_SETMASK
    "    mov x1, sp",
    "    mov x2, #0",
    "    mov x3, #8",
    "    mov x8, #135",         // rt_sigprocmask
    "    svc #0",
    "    b um_arm64_stub_trap",
    ".p2align 12",
    ".globl um_arm64_stub_trap",
    "um_arm64_stub_trap:",
    "    mov x8, #172",         // getpid: any number; the kernel replaces the frame
    "    svc #0",
    "    brk #0",
    ".globl um_arm64_stub_end",
    "um_arm64_stub_end:",
    ".popsection",
    data = const stub::DATA_OFFSET,
    data_size = const stub::DATA_SIZE,
    setup_count = const stub::SETUP_COUNT,
    setup_ops = const stub::SETUP_OPS,
    setup_failed = const stub::SETUP_FAILED,
    slots_off = const stub::SLOTS_OFFSET,
    count = const stub::COUNT,
    ops = const stub::OPS,
    opsize = const stub::OP_SIZE,
    result = const stub::RESULT_OFF,
    slot_shift = const stub::SLOT_SIZE.trailing_zeros(),
    signo = const stub::SLOT_SIGNO,
    siginfo = const stub::SLOT_SIGINFO,
    uctx = const stub::SLOT_UCONTEXT,
    tls = const stub::SLOT_TLS,
    reason = const stub::SLOT_REASON,
    r_signal = const stub::REASON_SIGNAL,
    r_failed = const stub::REASON_OP_FAILED,
    r_done = const stub::REASON_DONE,
    owner_kernel = const stub::OWNER_KERNEL,
    waiter = const stub::WAITER,
    spin = const stub::SLOT_SPIN,
    slot_ops = const stub::SLOT_OPS,
    slot_count = const stub::SLOT_COUNT,
    failed = const stub::SLOT_FAILED,
    cmd = const stub::SLOT_CMD,
    cmd_clone = const stub::CMD_CLONE,
    cmd_ops = const stub::CMD_OPS_ONLY,
    cmd_arg = const stub::SLOT_CMD_ARG,
    cmd_result = const stub::SLOT_CMD_RESULT,
    tid = const stub::SLOT_TID,
    boot_stack = const stub::SLOT_BOOT_STACK,
    altstack = const stub::SLOT_ALTSTACK,
    altstack_size = const stub::SLOT_SIZE as usize - stub::SLOT_ALTSTACK,
    flags_lo = const CLONE_THREAD_FLAGS & 0xffff,
    flags_hi = const CLONE_THREAD_FLAGS >> 16,
    mapq_setup = const stub::MAPQ_SETUP,
    mapq_tail = const stub::MAPQ_TAIL,
    mapq_mask = const stub::MAPQ_LEN - 1,
    mapq_ops = const stub::MAPQ_OPS,
    mapq_spin = const stub::MAPQ_SPIN,
    map_results = const stub::MAP_RESULTS,
    map_done = const stub::MAP_DONE,
    map_kwait = const stub::MAP_KWAIT,
    map_sleep = const stub::MAP_SLEEP,
    map_failed = const stub::MAP_FAILED,
);

// The mapper compares an entry's number with -1 (`cmn x8, #1`).
const _: () = assert!(stub::MAPQ_HANDBACK == u64::MAX);

/// clone flags of a stub thread in the seccomp engine (as on x86_64): a thread of the stub
/// process whose tid word in its slot the host sets and clears.
pub const CLONE_THREAD_FLAGS: u64 = (libc::CLONE_VM
    | libc::CLONE_FS
    | libc::CLONE_FILES
    | libc::CLONE_SIGHAND
    | libc::CLONE_THREAD
    | libc::CLONE_SYSVSEM
    | libc::CLONE_CHILD_SETTID
    | libc::CLONE_CHILD_CLEARTID) as u64;

unsafe extern "C" {
    static um_arm64_stub_start: u8;
    static um_arm64_stub_end: u8;
    static um_arm64_stub_entry: u8;
    static um_arm64_stub_syscall: u8;
    static um_arm64_stub_batch: u8;
    static um_arm64_stub_clone: u8;
    static um_arm64_stub_restorer: u8;
    static um_arm64_stub_handler: u8;
    static um_arm64_stub_trap: u8;
}

fn addr(sym: &u8) -> usize {
    sym as *const u8 as usize
}

/// The stub's machine code and the offsets of its entry points.
pub struct StubCode {
    /// The code bytes.
    pub code: &'static [u8],
    /// Offset of the exec entry.
    pub entry: u64,
    /// Offset of the single-syscall gadget.
    pub syscall: u64,
    /// Offset of the batch runner.
    pub batch: u64,
    /// Offset of the thread-creating gadget (clone; the new thread parks in ppoll()).
    pub clone: u64,
    /// Seccomp engine: offset of the signal handler.
    pub handler: u64,
    /// Seccomp engine: offset of the handler's restorer (rt_sigreturn).
    pub restorer: u64,
    /// Seccomp engine: offset of the trapping syscall a thread starts with (second page).
    pub trap: u64,
}

/// Ticks of the stub's spin clock (CNTVCT_EL0) per microsecond: CNTFRQ_EL0 / 10^6.
pub fn spin_ticks_per_us() -> u64 {
    let frq: u64;
    // SAFETY: reading CNTFRQ_EL0 is allowed at EL0 on Linux (CNTKCTL_EL1.EL0PCTEN/EL0VCTEN).
    unsafe { core::arch::asm!("mrs {}, cntfrq_el0", out(reg) frq) };
    (frq / 1_000_000).max(1)
}

/// Whether this arch's stub has the seccomp engine's signal handler (arm64: yes).
pub const SECCOMP_STUB: bool = true;

/// The seccomp engine keeps the guest's TLS register (tpidr_el0) in the slot: the handler
/// saves it on entry and restores it on return (`stub::SLOT_TLS`).
pub const TLS_IN_SLOT: bool = true;

/// The stub code of this kernel binary.
pub fn stub_code() -> StubCode {
    // SAFETY: the symbols are defined by the global_asm block above, in one section, start
    // before end; we only take their addresses and read the bytes between them, which are
    // immutable code.
    unsafe {
        let start = addr(&um_arm64_stub_start);
        let end = addr(&um_arm64_stub_end);
        StubCode {
            code: std::slice::from_raw_parts(start as *const u8, end - start),
            entry: (addr(&um_arm64_stub_entry) - start) as u64,
            syscall: (addr(&um_arm64_stub_syscall) - start) as u64,
            batch: (addr(&um_arm64_stub_batch) - start) as u64,
            clone: (addr(&um_arm64_stub_clone) - start) as u64,
            handler: (addr(&um_arm64_stub_handler) - start) as u64,
            restorer: (addr(&um_arm64_stub_restorer) - start) as u64,
            trap: (addr(&um_arm64_stub_trap) - start) as u64,
        }
    }
}

fn get_prstatus(t: &Stopped) -> io::Result<[u8; REGS_SIZE]> {
    let mut b = [0u8; REGS_SIZE];
    let n = t.get_regset(NT_PRSTATUS, &mut b)?;
    if n != REGS_SIZE {
        return Err(io::Error::other(format!("NT_PRSTATUS gave {n} bytes")));
    }
    Ok(b)
}

/// Reads the general registers, the syscall number and tpidr_el0 of a stopped tracee;
/// `orig_x0` is set from x0 (right at a syscall-entry stop). At a syscall stop x7 is the stop
/// direction, not the guest's: see [`syscall_stop`].
pub fn get_regs(t: &Stopped) -> io::Result<Regs> {
    let mut r = Regs::default();
    r.load_prstatus(&get_prstatus(t)?);
    r.orig_x0 = r.w[0];
    let mut nr = [0u8; 4];
    t.get_regset(NT_ARM_SYSTEM_CALL, &mut nr)?;
    r.syscallno = i32::from_le_bytes(nr) as i64 as u64;
    let mut tls = [0u8; 8];
    t.get_regset(NT_ARM_TLS, &mut tls)?;
    r.tls = u64::from_le_bytes(tls);
    Ok(r)
}

/// Writes the general registers and tpidr_el0 of a stopped tracee (not the syscall number:
/// see the module docs).
pub fn set_regs(t: &Stopped, r: &Regs) -> io::Result<()> {
    t.set_regset(NT_PRSTATUS, &r.prstatus())?;
    t.set_regset(NT_ARM_TLS, &r.tls.to_le_bytes())
}

fn set_syscall_nr(t: &Stopped, nr: u64) -> io::Result<()> {
    t.set_regset(NT_ARM_SYSTEM_CALL, &(nr as i32).to_le_bytes())
}

/// Leaves a syscall-entry stop for a stop where the guest's registers are all real and
/// writable (see the module docs), and returns it with the guest's registers as they were at
/// entry, with the real x7. `neutral`: `None` at a `PTRACE_SYSEMU` entry stop (the host skips
/// the call anyway); `Some(nr)` at a `PTRACE_SYSCALL` entry stop: the call is replaced by `nr`
/// (-1 to cancel it, getppid to substitute it) before the host runs it.
pub fn syscall_stop(s: Stopped, neutral: Option<u64>) -> io::Result<(Stopped, Regs)> {
    let mut regs = get_regs(&s)?;
    if let Some(nr) = neutral {
        if nr != regs.syscallno {
            set_syscall_nr(&s, nr)?;
        }
    }
    let mut running = s.resume(Resume::Step, 0)?;
    loop {
        match running.wait()? {
            Event::Stopped(e) => match e.stop() {
                Stop::Signal(libc::SIGTRAP) => {
                    // The pseudo-step: x7 is the guest's again. Everything else is taken from
                    // the entry stop (the host may have rewound pc for a "restart" if x0
                    // happened to look like -ERESTARTSYS; the kernel writes pc back anyway).
                    let b = get_prstatus(&e)?;
                    regs.w[7] = u64::from_le_bytes(b[56..64].try_into().unwrap_or([0; 8]));
                    return Ok((e, regs));
                }
                // Anything else before it (nothing is expected) is stepped past; a kick is
                // swallowed, as the kernel checks for pending guest signals before it resumes
                // the guest anyway.
                _ => running = e.resume(Resume::Step, 0)?,
            },
            Event::Exited(c) => return Err(io::Error::other(format!("stub exited ({c})"))),
            Event::Killed(sig) => {
                return Err(io::Error::other(format!("stub killed by signal {sig}")));
            }
        }
    }
}

/// Size of the kernel's FP image on arm64 (an `fpsimd_context` record; see
/// [`crate::signal`]), which is also the size of the `NT_PRFPREG` regset.
pub const FPREGS_SIZE: usize = FPSTATE_SIZE as usize;

/// The FP image of a fresh program: all zero, FPCR/FPSR zero.
pub fn initial_fpregs() -> [u8; FPREGS_SIZE] {
    crate::signal::initial_fp_image()
}

/// Reads the FP/SIMD registers as the FP image.
pub fn get_fpregs(t: &Stopped) -> io::Result<Vec<u8>> {
    let mut b = [0u8; FPREGS_SIZE];
    let n = t.get_regset(NT_PRFPREG, &mut b)?;
    if n < 520 {
        return Err(io::Error::other(format!("NT_PRFPREG gave {n} bytes")));
    }
    Ok(regset_to_image(&b).to_vec())
}

/// Writes the FP/SIMD registers from an FP image; an image whose header is not an
/// `fpsimd_context` is refused (`EINVAL`).
pub fn set_fpregs(t: &Stopped, b: &[u8]) -> io::Result<()> {
    let r = image_to_regset(b).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    t.set_regset(NT_PRFPREG, &r)
}

/// Runs until the stub's next `brk #0` and returns it stopped there. Any other stop is an
/// error (the stub died or misbehaved).
fn run_to_trap(t: Stopped) -> io::Result<Stopped> {
    let mut running = t.resume(Resume::Cont, 0)?;
    loop {
        match running.wait()? {
            Event::Stopped(s) => match s.stop() {
                Stop::Signal(libc::SIGTRAP) => return Ok(s),
                // The group-stop the stub put itself in (reported again after a resume under
                // PTRACE_SEIZE), and job-control signals: carry on.
                Stop::Event(..) | Stop::Signal(libc::SIGSTOP | libc::SIGCONT | libc::SIGTSTP) => {
                    running = s.resume(Resume::Cont, 0)?
                }
                // A kick while the stub works for the kernel: checked again before the guest
                // runs.
                Stop::Signal(ptrace::KICK_SIGNAL) => running = s.resume(Resume::Cont, 0)?,
                other => {
                    return Err(io::Error::other(format!(
                        "stub stopped unexpectedly: {other:?}"
                    )));
                }
            },
            Event::Exited(c) => return Err(io::Error::other(format!("stub exited ({c})"))),
            Event::Killed(sig) => {
                return Err(io::Error::other(format!("stub killed by signal {sig}")));
            }
        }
    }
}

/// Points the stopped stub at `entry` with x8 = `nr` and x0-x5 = `args` (general registers
/// only: the guest's tpidr_el0 stays in place).
fn prepare(t: &Stopped, template: &Regs, pc: u64, nr: u64, args: [u64; 6]) -> io::Result<()> {
    let mut r = *template;
    r.w[..6].copy_from_slice(&args);
    r.w[8] = nr;
    r.w[PC] = pc;
    t.set_regset(NT_PRSTATUS, &r.prstatus())
}

/// Makes the stopped stub run one host syscall; returns the stub stopped again and the raw
/// result. Clobbers the general registers: callers restore the guest's afterwards.
pub fn stub_syscall(
    t: Stopped,
    base: u64,
    template: &Regs,
    nr: u64,
    args: [u64; 6],
) -> io::Result<(Stopped, i64)> {
    prepare(&t, template, base + stub_code().syscall, nr, args)?;
    let t = run_to_trap(t)?;
    let ret = u64::from_le_bytes(get_prstatus(&t)?[0..8].try_into().unwrap_or([0; 8])) as i64;
    Ok((t, ret))
}

/// Makes the stopped stub thread create a new host thread in its process (CLONE_VM|CLONE_THREAD
/// and friends); the new thread parks in ppoll() until its own serving thread seizes it.
/// Returns the stub stopped again and the new thread's host tid (or -errno).
pub fn stub_clone_thread(t: Stopped, base: u64, template: &Regs) -> io::Result<(Stopped, i64)> {
    let flags = (libc::CLONE_VM
        | libc::CLONE_FS
        | libc::CLONE_FILES
        | libc::CLONE_SIGHAND
        | libc::CLONE_THREAD
        | libc::CLONE_SYSVSEM) as u64;
    // CLONE_BACKWARDS: clone(flags, newsp, parent_tid, tls, child_tid); newsp 0 = same stack
    // (the new thread never touches it).
    prepare(
        &t,
        template,
        base + stub_code().clone,
        libc::SYS_clone as u64,
        [flags, 0, 0, 0, 0, 0],
    )?;
    let t = run_to_trap(t)?;
    let ret = u64::from_le_bytes(get_prstatus(&t)?[0..8].try_into().unwrap_or([0; 8])) as i64;
    Ok((t, ret))
}

/// Makes the stopped stub run the ops queued in its data area; returns it stopped again.
pub fn stub_batch(t: Stopped, base: u64, template: &Regs) -> io::Result<Stopped> {
    prepare(&t, template, base + stub_code().batch, 0, [0; 6])?;
    run_to_trap(t)
}

/// A way of keeping a syscall from running on the host, to probe for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeMode {
    /// `PTRACE_SYSEMU`.
    Sysemu,
    /// `PTRACE_SYSCALL`, number set to -1 at entry.
    Cancel,
    /// `PTRACE_SYSCALL`, number replaced by getppid at entry.
    Substitute,
}

/// Probes one interception mode with the engine's own path ([`syscall_stop`]): a child's
/// getppid() must return what the tracer says (4242) instead of what the host would, and its
/// x7 (set to a marker before the call) must survive. Ok(false) when the host refuses or the
/// answer is wrong (the reason is logged at debug level).
pub fn probe_intercept(mode: ProbeMode) -> io::Result<bool> {
    match probe_detail(mode) {
        Ok(()) => Ok(true),
        Err(why) => {
            log::debug!("probe {mode:?}: {why}");
            Ok(false)
        }
    }
}

/// [`probe_intercept`] with the reason for a failure.
pub fn probe_detail(mode: ProbeMode) -> Result<(), String> {
    // SAFETY: fork; the child makes only raw syscalls and exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: {}", io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: raw syscalls in the child of fork; the asm block makes one getppid with x7
        // holding a marker and reports x0 and x7 after it; it touches no memory.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            // Not raise(): musl's makes rt_sigprocmask calls after the stop.
            libc::syscall(libc::SYS_kill, libc::getpid(), libc::SIGSTOP);
            let r: u64;
            let x7: u64;
            core::arch::asm!(
                "svc #0",
                inlateout("x8") libc::SYS_getppid as u64 => _,
                lateout("x0") r,
                inlateout("x7") 0x7777_u64 => x7,
                options(nostack),
            );
            libc::_exit(if r != 4242 {
                1
            } else if x7 != 0x7777 {
                2
            } else {
                0
            });
        }
    }
    let how = if mode == ProbeMode::Sysemu {
        Resume::Sysemu
    } else {
        Resume::Syscall
    };
    let e = |what: &str, err: io::Error| format!("{what}: {err}");
    let result = (|| -> Result<(), String> {
        let mut status = 0;
        // SAFETY: waitpid into a local.
        unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
        let t = ptrace::seize(pid, 0).map_err(|x| e("seize", x))?;
        let mut ev = t
            .resume(how, 0)
            .map_err(|x| e("resume", x))?
            .wait()
            .map_err(|x| e("wait", x))?;
        loop {
            match ev {
                Event::Stopped(s) if s.stop() == Stop::Syscall => {
                    let nr = get_regs(&s).map_err(|x| e("get_regs", x))?.syscall_nr();
                    if nr != libc::SYS_getppid as u64 {
                        return Err(format!("syscall stop for number {nr}"));
                    }
                    let neutral = match mode {
                        ProbeMode::Sysemu => None,
                        ProbeMode::Cancel => Some(u64::MAX),
                        ProbeMode::Substitute => Some(libc::SYS_getppid as u64),
                    };
                    let (s, mut r) = syscall_stop(s, neutral).map_err(|x| e("syscall_stop", x))?;
                    if r.w[7] != 0x7777 {
                        return Err(format!("x7 after the step is {:#x}", r.w[7]));
                    }
                    r.set_return(4242);
                    set_regs(&s, &r).map_err(|x| e("set_regs", x))?;
                    return match s.resume(Resume::Cont, 0).map_err(|x| e("cont", x))?.wait() {
                        Ok(Event::Exited(0)) => Ok(()),
                        Ok(Event::Exited(1)) => Err("getppid did not return 4242".into()),
                        Ok(Event::Exited(2)) => Err("x7 was not preserved".into()),
                        other => Err(format!("child ended with {other:?}")),
                    };
                }
                Event::Stopped(s) => {
                    ev = s
                        .resume(how, 0)
                        .map_err(|x| e("resume", x))?
                        .wait()
                        .map_err(|x| e("wait", x))?
                }
                other => return Err(format!("child ended with {other:?}")),
            }
        }
    })();
    // SAFETY: kill + reap our own child, whatever state it is in.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        let mut st = 0;
        libc::waitpid(pid, &mut st, libc::__WALL);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stub_code_is_small_and_ordered() {
        let c = stub_code();
        // Everything but the trap trampoline fits the first page (the seccomp filter's stub
        // page); the trampoline starts the second.
        assert_eq!(c.trap, 0x1000);
        assert!(c.code.len() < 0x1100);
        assert!(c.handler < 0x1000 && c.restorer < 0x1000);
        assert_eq!(c.entry, 0);
        assert!(c.syscall < c.clone && c.clone < c.batch && (c.batch as usize) < c.code.len());
        // `svc #0; brk #0` at the gadget.
        let s = c.syscall as usize;
        assert_eq!(
            &c.code[s..s + 8],
            &[0x01, 0x00, 0x00, 0xd4, 0x00, 0x00, 0x20, 0xd4]
        );
    }

    #[test]
    fn every_interception_mode_answers_here() {
        for m in [ProbeMode::Sysemu, ProbeMode::Cancel, ProbeMode::Substitute] {
            if let Err(why) = probe_detail(m) {
                panic!("{m:?}: {why}");
            }
        }
    }
}
