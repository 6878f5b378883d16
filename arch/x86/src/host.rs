//! What only an x86_64 host can do: the stub's machine code, and the ptrace glue that reads and
//! writes x86 registers and makes a stub run host syscalls for the kernel.

use crate::regs::{REGS_SIZE, Regs, idx};
use crate::stub;
use std::io;
use um_os_linux::ptrace::{
    self, Event, NT_PRFPREG, NT_PRSTATUS, NT_X86_XSTATE, Resume, Stop, Stopped,
};

// The stub code. Position-independent (it finds its data area rip-relative), copied verbatim
// into the stub executable. Entry points are offsets from `um_x86_stub_start`.
//
// entry:   stop ourselves (kill(getpid(), SIGSTOP)) so the kernel can seize us; never resumed
//          at this point (the kernel redirects rip), but pause() forever just in case.
// syscall: one host syscall with the registers the kernel set, then int3 -> SIGTRAP stop.
// batch:   run the ops queued in the data area in order, each result into its op; int3.
core::arch::global_asm!(
    ".pushsection .text.um_x86_stub, \"ax\"",
    ".p2align 12",
    ".globl um_x86_stub_start",
    "um_x86_stub_start:",
    ".globl um_x86_stub_entry",
    "um_x86_stub_entry:",
    "    cmp qword ptr [rsp], 2", // argc 2: set ourselves up (seccomp engine), below
    "    je 60f",
    "    mov eax, 39",          // getpid
    "    syscall",
    "    mov edi, eax",
    "    mov esi, 19",          // SIGSTOP
    "    mov eax, 62",          // kill
    "    syscall",
    "2:  mov eax, 34",          // pause
    "    syscall",
    "    jmp 2b",
    // Self-setup (seccomp engine): map the data area (fd 4), run the setup calls the kernel
    // wrote there (the last installs the seccomp filter), then trap from the second page: the
    // first handoff. A failing call leaves 1 + its index in SETUP_FAILED and ends the process.
    "60: lea rbx, [rip + um_x86_stub_start]",
    "    lea rdi, [rbx + {data}]",
    "    mov esi, {data_size}",
    "    mov edx, 3",           // PROT_READ | PROT_WRITE
    "    mov r10d, 0x11",       // MAP_SHARED | MAP_FIXED
    "    mov r8d, 4",
    "    xor r9d, r9d",
    "    mov eax, 9",           // mmap
    "    syscall",
    "    cmp rax, -4095",
    "    jae 68f",
    "    lea r15, [rbx + {data}]",
    "    mov r12, [r15 + {setup_count}]",
    "    lea r13, [r15 + {setup_ops}]",
    "    xor r14d, r14d",
    "61: cmp r14, r12",
    "    jae 63f",
    "    mov rax, [r13]",
    "    mov rdi, [r13 + 8]",
    "    mov rsi, [r13 + 16]",
    "    mov rdx, [r13 + 24]",
    "    mov r10, [r13 + 32]",
    "    mov r8,  [r13 + 40]",
    "    mov r9,  [r13 + 48]",
    "    syscall",
    // The clone among the setup calls makes the mapper: the child (rax 0) goes its own way.
    "    test rax, rax",
    "    jnz 64f",
    "    cmp qword ptr [r13], 56",
    "    je 70f",
    "64: mov [r13 + 56], rax",
    "    cmp rax, -4095",
    "    jae 62f",
    "    add r13, {opsize}",
    "    inc r14",
    "    jmp 61b",
    "62: inc r14",
    "    mov [r15 + {setup_failed}], r14",
    "68: mov edi, 1",
    "    mov eax, 231",         // exit_group (the filter may kill instead: the same end)
    "    syscall",
    "    ud2",
    "63: lea rsp, [rbx + {boot_sp}]",
    "    jmp um_x86_stub_trap",
    // The mapper: a thread that never runs guest code, with every signal blocked and no stack
    // (registers only). Its orders come from the read-only part of the data area (r15): first
    // its own filter, then forever the ops the kernel appends to the ring; r12 is how many it
    // has run. An entry is a host call, or a handback (MAPQ_HANDBACK: exchange the handoff word
    // it names to 0, waking its waiters), which releases a thread once the ops before it are
    // made. A failed call (but mprotect's ENOMEM: no host mapping there) ends the process: a
    // host mapping must not outlive its PTE. After each entry it publishes the count
    // (MAP_DONE); once the ring is drained it wakes a kernel thread that waits for it, spins
    // for MAPQ_SPIN ticks, then parks on the ring's tail.
    "70: lea r13, [r15 + {mapq_setup}]",
    "    mov rax, [r13]",
    "    mov rdi, [r13 + 8]",
    "    mov rsi, [r13 + 16]",
    "    mov rdx, [r13 + 24]",
    "    mov r10, [r13 + 32]",
    "    mov r8,  [r13 + 40]",
    "    mov r9,  [r13 + 48]",
    "    syscall",
    "    cmp rax, -4095",
    "    jae 68b",
    "    xor r12d, r12d",
    "    xor ebp, ebp",         // 1: a handback woke a parked thread since the ring drained
    "71: mov rax, [r15 + {mapq_tail}]",
    "    cmp r12, rax",
    "    je 74f",
    "    mov r13, r12",
    "    and r13, {mapq_mask}",
    "    shl r13, 6",
    "    lea r13, [r15 + r13 + {mapq_ops}]",
    "    mov rax, [r13]",
    "    cmp rax, -1",          // MAPQ_HANDBACK
    "    je 80f",
    "    mov rdi, [r13 + 8]",
    "    mov rsi, [r13 + 16]",
    "    mov rdx, [r13 + 24]",
    "    mov r10, [r13 + 32]",
    "    mov r8,  [r13 + 40]",
    "    mov r9,  [r13 + 48]",
    "    syscall",
    "    cmp rax, -4095",
    "    jae 85f",
    "72: mov r13, r12",
    "    and r13, {mapq_mask}",
    "    mov [r15 + r13 * 8 + {map_results}], rax",
    "    inc r12",
    "    mov [r15 + {map_done}], r12",
    "    jmp 71b",
    // Drained: wake a kernel thread that waits on MAP_DONE.
    "74: mfence",               // the store of MAP_DONE before the load of MAP_KWAIT
    "    cmp dword ptr [r15 + {map_kwait}], 0",
    "    je 75f",
    "    mov dword ptr [r15 + {map_kwait}], 0",
    "    lea rdi, [r15 + {map_done}]",
    "    mov esi, 1",           // FUTEX_WAKE, every waiter
    "    mov edx, 0x7fffffff",
    "    mov eax, 202",
    "    syscall",
    "    jmp 71b",
    // Handback: the word's address is the kernel's (read-only ring); the xchg is a full
    // barrier, so the ops above are made before the thread can run.
    "80: mov rdi, [r13 + 8]",
    "    xor eax, eax",
    "    xchg [rdi], eax",
    "    test eax, {waiter}",
    "    jz 81f",
    "    mov esi, 1",           // FUTEX_WAKE, every waiter (the stub and its kernel thread)
    "    mov edx, 0x7fffffff",
    "    mov eax, 202",
    "    syscall",
    "    mov ebp, 1",
    "81: xor eax, eax",
    "    jmp 72b",
    // A failed call: mprotect's ENOMEM is fine, anything else ends the process.
    "85: cmp qword ptr [r13], 10", // mprotect
    "    jne 86f",
    "    cmp rax, -12",         // ENOMEM
    "    je 72b",
    "86: mov r13, r12",
    "    and r13, {mapq_mask}",
    "    mov [r15 + r13 * 8 + {map_results}], rax",
    "    lea rax, [r12 + 1]",
    "    mov [r15 + {map_failed}], rax",
    "    mov edi, 1",
    "    mov eax, 231",         // exit_group
    "    syscall",
    "    ud2",
    // Drained. If a handback just woke a parked thread, park at once: that thread wants this
    // CPU (the host puts a woken thread near its waker), and the next order comes only after
    // it has run and trapped. Else spin for MAPQ_SPIN ticks first.
    "75: test ebp, ebp",
    "    jz 79f",
    "    xor ebp, ebp",
    "    jmp 77f",
    "79: mov r14, [r15 + {mapq_spin}]",
    "    test r14, r14",
    "    jz 77f",
    "    rdtsc",
    "    shl rdx, 32",
    "    or rax, rdx",
    "    add r14, rax",
    "76: mov rax, [r15 + {mapq_tail}]",
    "    cmp r12, rax",
    "    jne 71b",
    "    pause",
    "    rdtsc",
    "    shl rdx, 32",
    "    or rax, rdx",
    "    cmp rax, r14",
    "    jb 76b",
    // Park: MAP_SLEEP, then the tail once more, then FUTEX_WAIT on the tail being what we saw
    // (the kernel stores the tail, then reads MAP_SLEEP: one of us sees the other).
    "77: mov dword ptr [r15 + {map_sleep}], 1",
    "    mfence",
    "    mov rax, [r15 + {mapq_tail}]",
    "    cmp r12, rax",
    "    jne 78f",
    "    lea rdi, [r15 + {mapq_tail}]",
    "    xor esi, esi",         // FUTEX_WAIT
    "    mov edx, r12d",
    "    xor r10d, r10d",
    "    mov eax, 202",
    "    syscall",
    "78: mov dword ptr [r15 + {map_sleep}], 0",
    "    jmp 71b",
    ".globl um_x86_stub_syscall",
    "um_x86_stub_syscall:",
    "    syscall",
    "    int3",
    ".globl um_x86_stub_clone",
    "um_x86_stub_clone:",
    "    syscall",
    "    test rax, rax",
    "    jnz 7f",
    "6:  mov eax, 34",          // the new thread: pause until its serving thread seizes it
    "    syscall",
    "    jmp 6b",
    "7:  int3",
    ".globl um_x86_stub_batch",
    "um_x86_stub_batch:",
    "    lea rbx, [rip + um_x86_stub_start]",
    "    add rbx, {data}",
    "    mov r12, [rbx + {count}]",
    "    lea r13, [rbx + {ops}]",
    "    xor r14, r14",
    "3:  cmp r14, r12",
    "    jae 5f",
    "    mov rax, [r13]",
    "    mov rdi, [r13 + 8]",
    "    mov rsi, [r13 + 16]",
    "    mov rdx, [r13 + 24]",
    "    mov r10, [r13 + 32]",
    "    mov r8,  [r13 + 40]",
    "    mov r9,  [r13 + 48]",
    "    syscall",
    "    mov [r13 + 56], rax",
    "    add r13, {opsize}",
    "    inc r14",
    "    jmp 3b",
    "5:  int3",
    // ---- seccomp engine ----
    // The restorer of the stub's signal handler: back to the (edited) frame.
    ".globl um_x86_stub_restorer",
    "um_x86_stub_restorer:",
    "    mov eax, 15",          // rt_sigreturn
    "    syscall",
    "    ud2",
    // The handler of every host signal the stub takes (SIGSYS for guest syscalls, SIGSEGV and
    // the other synchronous signals, the kick), on the alternate stack inside this thread's
    // slot, with every signal blocked. rdi = signo, rsi = siginfo, rdx = ucontext.
    ".globl um_x86_stub_handler",
    "um_x86_stub_handler:",
    "    mov rbx, rsp",
    "    and rbx, {slot_mask}",  // the slot: the stack pointer rounded down
    "    mov [rbx + {signo}], rdi",
    "    mov [rbx + {siginfo}], rsi",
    "    mov [rbx + {uctx}], rdx",
    "    mov qword ptr [rbx + {reason}], {r_signal}",
    // Hand the thread to the kernel: the xchg (a full barrier on x86) publishes every store
    // above before the owner bit; a FUTEX_WAKE only if the kernel had parked (WAITER).
    "10: mov eax, {owner_kernel}",
    "    xchg [rbx + {futex}], eax",
    "    test eax, {waiter}",
    "    jz 11f",
    "    lea rdi, [rbx + {futex}]",
    "    mov esi, 1",           // FUTEX_WAKE (shared: the kernel maps the slot too)
    "    mov edx, 1",
    "    mov eax, 202",         // futex
    "    syscall",
    // Wait until the kernel hands the thread back: spin for SLOT_SPIN TSC ticks, then park.
    "11: mov r12, [rbx + {spin}]",
    "    test r12, r12",
    "    jz 13f",
    "    rdtsc",
    "    shl rdx, 32",
    "    or rax, rdx",
    "    add r12, rax",
    "12: mov eax, [rbx + {futex}]",
    "    test eax, {owner_kernel}",
    "    jz 20f",
    "    pause",
    "    rdtsc",
    "    shl rdx, 32",
    "    or rax, rdx",
    "    cmp rax, r12",
    "    jb 12b",
    // Park: set WAITER while the kernel still owns the thread, then FUTEX_WAIT on exactly that
    // value (a handback between the two makes the wait return EAGAIN: nothing is lost).
    "13: mov eax, [rbx + {futex}]",
    "    test eax, {owner_kernel}",
    "    jz 20f",
    "    mov ecx, eax",
    "    or ecx, {waiter}",
    "    lock cmpxchg [rbx + {futex}], ecx",
    "    jnz 13b",
    "    lea rdi, [rbx + {futex}]",
    "    xor esi, esi",         // FUTEX_WAIT
    "    mov edx, ecx",
    "    xor r10d, r10d",
    "    mov eax, 202",
    "    syscall",
    "    jmp 13b",
    // Ours again (the load of the futex word is ordered before the loads below: x86 TSO).
    // Run the queued host calls; the first failure is reported and stops the rest.
    "20: mov r12, [rbx + {slot_count}]",
    "    lea r13, [rbx + {slot_ops}]",
    "    xor r14d, r14d",
    "21: cmp r14, r12",
    "    jae 23f",
    "    mov rax, [r13]",
    "    mov rdi, [r13 + 8]",
    "    mov rsi, [r13 + 16]",
    "    mov rdx, [r13 + 24]",
    "    mov r10, [r13 + 32]",
    "    mov r8,  [r13 + 40]",
    "    mov r9,  [r13 + 48]",
    "    syscall",
    "    mov [r13 + 56], rax",
    "    cmp rax, -4095",
    "    jae 22f",
    "    add r13, {opsize}",
    "    inc r14",
    "    jmp 21b",
    "22: mov [rbx + {failed}], r14",
    "    mov qword ptr [rbx + {slot_count}], 0",
    "    mov qword ptr [rbx + {reason}], {r_failed}",
    "    jmp 10b",
    "23: mov qword ptr [rbx + {slot_count}], 0",
    "    mov rax, [rbx + {cmd}]",
    "    test rax, rax",
    "    jz 30f",
    "    cmp rax, {cmd_clone}",
    "    je 40f",
    "    cmp rax, {cmd_ops}",
    "    je 24f",
    // CMD_EXIT: this host thread ends (its CLONE_CHILD_CLEARTID word tells the kernel).
    "    xor edi, edi",
    "    mov eax, 60",          // exit
    "    syscall",
    "    ud2",
    "24: mov qword ptr [rbx + {cmd}], 0",
    "    mov qword ptr [rbx + {reason}], {r_done}",
    "    jmp 10b",
    "30: ret",                 // to the restorer
    // CMD_CLONE: a new host thread on the slot at SLOT_CMD_ARG.
    "40: mov qword ptr [rbx + {cmd}], 0",
    "    mov rdi, {clone_flags}",
    "    mov rsi, [rbx + {cmd_arg}]",
    "    lea r10, [rsi + {tid}]",  // child_tid: CLONE_CHILD_SETTID/CLEARTID word
    "    add rsi, {boot_stack}",
    "    xor edx, edx",
    "    xor r8d, r8d",
    "    mov eax, 56",          // clone
    "    syscall",
    "    test rax, rax",
    "    jz 50f",
    "    mov [rbx + {cmd_result}], rax",
    "    mov qword ptr [rbx + {reason}], {r_done}",
    "    jmp 10b",
    // The new thread: its alternate stack, every signal unblocked (it inherited the handler's
    // full mask), then a trapped syscall hands it to its kernel thread.
    "50: mov rbx, rsp",
    "    and rbx, {slot_mask}",
    "    sub rsp, 32",
    "    lea rax, [rbx + {altstack}]",
    "    mov [rsp], rax",
    "    mov qword ptr [rsp + 8], 0",
    "    mov qword ptr [rsp + 16], {altstack_size}",
    "    mov rdi, rsp",
    "    xor esi, esi",
    "    mov eax, 131",         // sigaltstack
    "    syscall",
    "    mov qword ptr [rsp], 0",
    "    mov edi, 2",           // SIG_SETMASK
    "    mov rsi, rsp",
    "    xor edx, edx",
    "    mov r10d, 8",
    "    mov eax, 14",          // rt_sigprocmask
    "    syscall",
    "    jmp um_x86_stub_trap",
    // The second code page: outside the filter's stub page, so a syscall here traps like a
    // guest's. A thread starts its life in the seccomp engine by jumping here.
    ".p2align 12",
    ".globl um_x86_stub_trap",
    "um_x86_stub_trap:",
    "    mov eax, 39",          // getpid: any number; the kernel replaces the frame
    "    syscall",
    "    ud2",
    ".globl um_x86_stub_end",
    "um_x86_stub_end:",
    ".popsection",
    data = const stub::DATA_OFFSET,
    data_size = const stub::DATA_SIZE,
    setup_count = const stub::SETUP_COUNT,
    setup_ops = const stub::SETUP_OPS,
    setup_failed = const stub::SETUP_FAILED,
    boot_sp = const stub::SLOTS_OFFSET as usize + stub::SLOT_BOOT_STACK,
    count = const stub::COUNT,
    ops = const stub::OPS,
    opsize = const stub::OP_SIZE,
    slot_mask = const (!(stub::SLOT_SIZE - 1)) as i64,
    signo = const stub::SLOT_SIGNO,
    siginfo = const stub::SLOT_SIGINFO,
    uctx = const stub::SLOT_UCONTEXT,
    reason = const stub::SLOT_REASON,
    r_signal = const stub::REASON_SIGNAL,
    r_failed = const stub::REASON_OP_FAILED,
    r_done = const stub::REASON_DONE,
    owner_kernel = const stub::OWNER_KERNEL,
    waiter = const stub::WAITER,
    futex = const stub::SLOT_FUTEX,
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
    clone_flags = const CLONE_THREAD_FLAGS,
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

// The mapper compares an entry's number with -1, and mprotect and ENOMEM are spelt out there.
const _: () = assert!(stub::MAPQ_HANDBACK == u64::MAX);

/// clone flags of a stub thread in the seccomp engine: a thread of the stub process whose tid
/// word in its slot the host sets and clears (CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID).
pub const CLONE_THREAD_FLAGS: u64 = (libc::CLONE_VM
    | libc::CLONE_FS
    | libc::CLONE_FILES
    | libc::CLONE_SIGHAND
    | libc::CLONE_THREAD
    | libc::CLONE_SYSVSEM
    | libc::CLONE_CHILD_SETTID
    | libc::CLONE_CHILD_CLEARTID) as u64;

unsafe extern "C" {
    static um_x86_stub_start: u8;
    static um_x86_stub_end: u8;
    static um_x86_stub_entry: u8;
    static um_x86_stub_syscall: u8;
    static um_x86_stub_batch: u8;
    static um_x86_stub_clone: u8;
    static um_x86_stub_restorer: u8;
    static um_x86_stub_handler: u8;
    static um_x86_stub_trap: u8;
}

fn addr(sym: &u8) -> usize {
    sym as *const u8 as usize
}

/// Ticks of the stub's spin clock (the TSC) per microsecond, measured against the host's
/// monotonic clock over a few milliseconds (the TSC rate is not architecturally known).
pub fn spin_ticks_per_us() -> u64 {
    // SAFETY: RDTSC has no preconditions on x86_64 (user mode may read the TSC unless the
    // host set CR4.TSD, which Linux does not for processes that did not ask for it).
    let tsc = || unsafe { core::arch::x86_64::_rdtsc() };
    let t0 = std::time::Instant::now();
    let c0 = tsc();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let c1 = tsc();
    let us = t0.elapsed().as_micros().max(1) as u64;
    (c1.wrapping_sub(c0) / us).max(1)
}

/// Whether this arch's stub has the seccomp engine's signal handler (x86_64: yes).
pub const SECCOMP_STUB: bool = true;

/// x86_64 does not keep the guest's TLS in the slot: the FS base is set by an `arch_prctl` op
/// when it changes (`crate::...` the kernel's `set_tls_call`).
pub const TLS_IN_SLOT: bool = false;

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
    /// Offset of the thread-creating gadget (clone; the new thread parks in pause()).
    pub clone: u64,
    /// Seccomp engine: offset of the signal handler.
    pub handler: u64,
    /// Seccomp engine: offset of the handler's restorer (rt_sigreturn).
    pub restorer: u64,
    /// Seccomp engine: offset of the trapping syscall a thread starts with (second page).
    pub trap: u64,
}

/// The stub code of this kernel binary.
pub fn stub_code() -> StubCode {
    // SAFETY: the symbols are defined by the global_asm block above, in one section, start
    // before end; we only take their addresses and read the bytes between them, which are
    // immutable code.
    unsafe {
        let start = addr(&um_x86_stub_start);
        let end = addr(&um_x86_stub_end);
        StubCode {
            code: std::slice::from_raw_parts(start as *const u8, end - start),
            entry: (addr(&um_x86_stub_entry) - start) as u64,
            syscall: (addr(&um_x86_stub_syscall) - start) as u64,
            batch: (addr(&um_x86_stub_batch) - start) as u64,
            clone: (addr(&um_x86_stub_clone) - start) as u64,
            handler: (addr(&um_x86_stub_handler) - start) as u64,
            restorer: (addr(&um_x86_stub_restorer) - start) as u64,
            trap: (addr(&um_x86_stub_trap) - start) as u64,
        }
    }
}

/// Reads the general registers of a stopped tracee.
/// Whether the registers at a syscall-entry stop are what the `syscall` instruction leaves:
/// the return address in rcx and the flags in r11 (Intel SDM, SYSCALL; the host's
/// entry_SYSCALL_64 saves them as they are). `int $0x80` leaves the caller's rcx and r11, so
/// a stop where they differ came another way (or the guest forged them, which matters only
/// where the host runs something for the call: the fallbacks always ask the host).
pub fn entered_by_syscall(r: &Regs) -> bool {
    r.w[idx::RCX] == r.w[idx::RIP] && r.w[idx::R11] == r.w[idx::EFLAGS]
}

/// The registers of an `int $0x80` stop as the CPU's #GP on that instruction would leave
/// them: the instruction pointer back over the 2-byte instruction, rax the caller's (the
/// host's entry code put -ENOSYS there; the number is in orig_rax), and no syscall in
/// progress (orig_rax -1, so no restart logic applies).
pub fn back_over_int80(r: &mut Regs) {
    r.w[idx::RIP] = r.w[idx::RIP].wrapping_sub(2);
    r.w[idx::RAX] = r.w[idx::ORIG_RAX];
    r.w[idx::ORIG_RAX] = u64::MAX;
}

pub fn get_regs(t: &Stopped) -> io::Result<Regs> {
    let mut b = [0u8; REGS_SIZE];
    let n = t.get_regset(NT_PRSTATUS, &mut b)?;
    if n != REGS_SIZE {
        return Err(io::Error::other(format!("NT_PRSTATUS gave {n} bytes")));
    }
    Ok(Regs::from_bytes(&b))
}

/// Writes the general registers of a stopped tracee.
pub fn set_regs(t: &Stopped, r: &Regs) -> io::Result<()> {
    t.set_regset(NT_PRSTATUS, &r.to_bytes())
}

/// The FP state of a fresh program (Linux `fpstate_init`): FCW 0x37f, MXCSR 0x1f80, all
/// registers zero, all tags empty.
pub fn initial_fpregs() -> [u8; FPREGS_SIZE] {
    let mut b = [0u8; FPREGS_SIZE];
    b[0..2].copy_from_slice(&0x37fu16.to_le_bytes());
    b[24..28].copy_from_slice(&0x1f80u32.to_le_bytes());
    b[28..32].copy_from_slice(&0xffffu32.to_le_bytes()); // MXCSR_MASK
    b
}

/// Size of `user_fpregs_struct` (the FXSAVE area), the `NT_PRFPREG` regset.
pub const FPREGS_SIZE: usize = 512;

/// Room for the largest XSAVE buffer a host can have (AMX tiles included: about 11 KiB).
const XSTATE_MAX: usize = 64 << 10;

/// Reads the FP state as the FP image (see `signal`): the XSAVE buffer (`NT_X86_XSTATE`, all
/// of `fpu_user_cfg.max_size`, with the host's `sw_reserved` description), or the FXSAVE area
/// (`NT_PRFPREG`) where the host has no XSAVE.
pub fn get_fpregs(t: &Stopped) -> io::Result<Vec<u8>> {
    let mut b = vec![0u8; XSTATE_MAX];
    match t.get_regset(NT_X86_XSTATE, &mut b) {
        Ok(n) if n > FPREGS_SIZE + 64 => {
            b.truncate(n);
            // ptrace puts XCR0 in sw_usable_bytes (asm/user.h `USER_XSTATE_XCR0_WORD`); the FP
            // image carries a signal frame's description there instead (`_fpx_sw_bytes`).
            let xcr0 = u64::from_le_bytes(b[464..472].try_into().unwrap_or([0; 8]));
            sw_bytes_for_frame(&mut b, xcr0);
            Ok(b)
        }
        _ => {
            let mut b = vec![0u8; FPREGS_SIZE];
            t.get_regset(NT_PRFPREG, &mut b)?;
            Ok(b)
        }
    }
}

/// Writes the signal-frame description of an XSAVE image of `b.len()` bytes with features
/// `xfeatures` into its `sw_reserved` (Linux `save_sw_bytes`: magic1, extended_size =
/// size + magic2, xfeatures, xstate_size).
fn sw_bytes_for_frame(b: &mut [u8], xfeatures: u64) {
    let n = b.len() as u32;
    b[464..512].fill(0);
    b[464..468].copy_from_slice(&crate::signal::FP_XSTATE_MAGIC1.to_le_bytes());
    b[468..472].copy_from_slice(&(n + 4).to_le_bytes());
    b[472..480].copy_from_slice(&xfeatures.to_le_bytes());
    b[480..484].copy_from_slice(&n.to_le_bytes());
}

/// Writes an FP image: an XSAVE buffer through `NT_X86_XSTATE` (the host checks its header
/// and MXCSR, EINVAL if bad), a 512-byte one through `NT_PRFPREG`.
pub fn set_fpregs(t: &Stopped, b: &[u8]) -> io::Result<()> {
    if b.len() > FPREGS_SIZE + 64 {
        // Back to ptrace's layout: XCR0 in the first sw_usable word, the rest zero.
        let mut img = b.to_vec();
        let xfeatures = img[472..480].to_vec();
        img[464..512].fill(0);
        img[464..472].copy_from_slice(&xfeatures);
        t.set_regset(NT_X86_XSTATE, &img)
    } else if b.len() == FPREGS_SIZE {
        t.set_regset(NT_PRFPREG, b)
    } else {
        Err(io::Error::from_raw_os_error(libc::EINVAL))
    }
}

/// Runs until the stub's next `int3` and returns it stopped there. Any other stop is an error
/// (the stub died or misbehaved).
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
                // A kick while the stub works for the kernel: the kernel checks for pending
                // guest signals before it resumes the guest anyway.
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

/// Makes the stopped stub run one host syscall; returns the stub stopped again and the raw
/// result. Clobbers the registers: callers restore the guest's afterwards.
pub fn stub_syscall(
    t: Stopped,
    base: u64,
    template: &Regs,
    nr: u64,
    args: [u64; 6],
) -> io::Result<(Stopped, i64)> {
    let code = stub_code();
    let mut r = *template;
    r.w[idx::RAX] = nr;
    r.w[idx::RDI] = args[0];
    r.w[idx::RSI] = args[1];
    r.w[idx::RDX] = args[2];
    r.w[idx::R10] = args[3];
    r.w[idx::R8] = args[4];
    r.w[idx::R9] = args[5];
    r.w[idx::RIP] = base + code.syscall;
    r.w[idx::ORIG_RAX] = u64::MAX;
    set_regs(&t, &r)?;
    let t = run_to_trap(t)?;
    let ret = get_regs(&t)?.w[idx::RAX] as i64;
    Ok((t, ret))
}

/// Makes the stopped stub thread create a new host thread in its process (CLONE_VM|CLONE_THREAD
/// and friends); the new thread parks in pause() until its own serving thread seizes it.
/// Returns the stub stopped again and the new thread's host tid (or -errno).
pub fn stub_clone_thread(t: Stopped, base: u64, template: &Regs) -> io::Result<(Stopped, i64)> {
    let code = stub_code();
    let flags = (libc::CLONE_VM
        | libc::CLONE_FS
        | libc::CLONE_FILES
        | libc::CLONE_SIGHAND
        | libc::CLONE_THREAD
        | libc::CLONE_SYSVSEM) as u64;
    let mut r = *template;
    r.w[idx::RAX] = libc::SYS_clone as u64;
    r.w[idx::RDI] = flags;
    r.w[idx::RSI] = 0; // same stack: the new thread never touches it
    r.w[idx::RDX] = 0;
    r.w[idx::R10] = 0;
    r.w[idx::R8] = 0;
    r.w[idx::RIP] = base + code.clone;
    r.w[idx::ORIG_RAX] = u64::MAX;
    set_regs(&t, &r)?;
    let t = run_to_trap(t)?;
    let ret = get_regs(&t)?.w[idx::RAX] as i64;
    Ok((t, ret))
}

/// Makes the stopped stub run the ops queued in its data area; returns it stopped again.
pub fn stub_batch(t: Stopped, base: u64, template: &Regs) -> io::Result<Stopped> {
    let code = stub_code();
    let mut r = *template;
    r.w[idx::RIP] = base + code.batch;
    r.w[idx::ORIG_RAX] = u64::MAX;
    set_regs(&t, &r)?;
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

/// Probes one interception mode: a child's getppid() must return what the tracer says (4242)
/// instead of what the host would. Ok(false) when the host refuses or the answer is wrong.
pub fn probe_intercept(mode: ProbeMode) -> io::Result<bool> {
    // SAFETY: fork; the child makes only raw syscalls and exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: raw syscalls in the child of fork.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            libc::raise(libc::SIGSTOP);
            let r = libc::syscall(libc::SYS_getppid);
            libc::_exit(if r == 4242 { 0 } else { 1 });
        }
    }
    let how = if mode == ProbeMode::Sysemu {
        Resume::Sysemu
    } else {
        Resume::Syscall
    };
    let result = (|| -> io::Result<bool> {
        let mut status = 0;
        // SAFETY: waitpid into a local.
        unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
        let t = ptrace::seize(pid, 0)?;
        let mut ev = match t.resume(how, 0) {
            Ok(r) => r.wait()?,
            Err(_) => return Ok(false),
        };
        // Skip stops until the syscall stop (the group-stop may be reported first).
        loop {
            match ev {
                Event::Stopped(s) if s.stop() == Stop::Syscall => {
                    let mut r = get_regs(&s)?;
                    if r.syscall_nr() != libc::SYS_getppid as u64 {
                        return Ok(false);
                    }
                    let s = if mode == ProbeMode::Sysemu {
                        s
                    } else {
                        r.set_syscall_nr(if mode == ProbeMode::Cancel {
                            u64::MAX
                        } else {
                            libc::SYS_getppid as u64
                        });
                        set_regs(&s, &r)?;
                        match s.resume(Resume::Syscall, 0)?.wait()? {
                            Event::Stopped(e) if e.stop() == Stop::Syscall => e,
                            _ => return Ok(false),
                        }
                    };
                    let mut r = get_regs(&s)?;
                    r.set_return(4242);
                    set_regs(&s, &r)?;
                    return match s.resume(Resume::Cont, 0)?.wait()? {
                        Event::Exited(0) => Ok(true),
                        _ => Ok(false),
                    };
                }
                Event::Stopped(s) => ev = s.resume(how, 0)?.wait()?,
                _ => return Ok(false),
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
        // Everything but the trap trampoline fits the first page (the filter's stub page);
        // the trampoline starts the second.
        assert_eq!(c.trap, 0x1000);
        assert!(c.code.len() < 0x1100);
        assert!(c.handler < 0x1000 && c.restorer < 0x1000);
        assert_eq!(c.entry, 0);
        assert!(c.syscall < c.batch && (c.batch as usize) < c.code.len());
        // `syscall; int3` at the gadget.
        let s = c.syscall as usize;
        assert_eq!(&c.code[s..s + 3], &[0x0f, 0x05, 0xcc]);
    }

    #[test]
    fn every_interception_mode_answers_here() {
        for m in [ProbeMode::Sysemu, ProbeMode::Cancel, ProbeMode::Substitute] {
            assert!(probe_intercept(m).unwrap(), "{m:?}");
        }
    }
}
