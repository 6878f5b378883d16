//! The stub's seccomp-engine layout and filter, the same on every arch: the per-thread slots
//! of the second shared area (handoff futex, what the handler reports, the ops it runs, its
//! alternate signal stack), the setup block a self-setting-up stub finds in its data area, and
//! the classic-BPF filter the stub installs (`stub_filter`, with a tiny interpreter,
//! `run_filter`, for tests). The arch crates re-export all of it from their `stub` modules,
//! beside the arch-specific stub code that uses these offsets.
//!
//! Offsets are bytes from the slot's (or the data area's) start; words are little-endian u64
//! unless a comment says otherwise.

/// Bytes per op in the ops format (number, six arguments, result): as the arch stubs' `OP_SIZE`.
pub const OP_SIZE: usize = 64;
/// Size of the data area (as the arch stubs' `DATA_SIZE`).
pub const DATA_SIZE: u64 = 0x1_0000;

// Each guest thread of a stub process in the seccomp engine owns one `SLOT_SIZE` slot of a
// second shared memfd mapped at `SLOTS_OFFSET`: the handoff futex word, what the stub's signal
// handler reports, the host calls the kernel queues, and the alternate signal stack on which the
// handler runs, so the signal frame (registers, FP state) is in memory the kernel shares. Slots
// are `SLOT_SIZE`-aligned: the handler finds its slot by rounding its stack pointer down.

/// Offset of the first slot from the stub base.
pub const SLOTS_OFFSET: u64 = 0x2_0000;
/// Bytes per slot (a power of two).
pub const SLOT_SIZE: u64 = 0x1_0000;
/// Slots per stub process: the most guest threads one address space can have in the seccomp
/// engine.
pub const MAX_SLOTS: usize = 256;
/// Size of the whole stub region: code, data area, slots.
pub const STUB_REGION: u64 = SLOTS_OFFSET + SLOT_SIZE * MAX_SLOTS as u64;

/// Slot word: the handoff futex (low 32 bits). Bit [`OWNER_KERNEL`]: the kernel owns the
/// thread (the stub waits in its handler); clear: the stub owns it. Bit [`WAITER`]: whoever
/// waits for ownership has parked in `FUTEX_WAIT` and needs a `FUTEX_WAKE`.
pub const SLOT_FUTEX: usize = 0x00;
/// The handoff word's owner bit.
pub const OWNER_KERNEL: u32 = 1;
/// The handoff word's waiter bit.
pub const WAITER: u32 = 2;
/// The handoff word's hold bit, set with [`OWNER_KERNEL`] by a kernel thread that has queued
/// the thread's handback in the mapper's ring ([`MAPQ_HANDBACK`]): the stub keeps waiting (the
/// owner bit is still set), the kernel thread no longer counts the word as its own, and the
/// mapper's exchange to 0 releases the thread once the ops queued before it are in the host.
pub const HELD: u32 = 4;
/// Slot word: the host tid of the slot's thread while it lives (clone's CLONE_CHILD_SETTID /
/// CLEARTID word: the host clears it when the thread has exited, so the slot may be reused).
pub const SLOT_TID: usize = 0x30;
/// Slot word: why the stub handed the thread to the kernel ([`REASON_SIGNAL`]...).
pub const SLOT_REASON: usize = 0x40;
/// A host signal arrived (guest syscall, fault, kick); `SLOT_SIGNO`.. say which.
pub const REASON_SIGNAL: u64 = 1;
/// A queued host call failed; `SLOT_FAILED` is its index, the later ones did not run.
pub const REASON_OP_FAILED: u64 = 2;
/// The command the kernel asked for is done (`SLOT_CMD_RESULT`), or the ops ran.
pub const REASON_DONE: u64 = 3;
/// Slot word: the host signal number.
pub const SLOT_SIGNO: usize = 0x48;
/// Slot word: the stub address of the handler's siginfo.
pub const SLOT_SIGINFO: usize = 0x50;
/// Slot word: the stub address of the handler's ucontext.
pub const SLOT_UCONTEXT: usize = 0x58;
/// Slot word: how many ops to run before the command.
pub const SLOT_COUNT: usize = 0x60;
/// Slot word: the command ([`CMD_RESUME`]...).
pub const SLOT_CMD: usize = 0x68;
/// Return from the handler: the guest runs with the (edited) frame.
pub const CMD_RESUME: u64 = 0;
/// Create a host thread in this process on the slot at stub address `SLOT_CMD_ARG`.
pub const CMD_CLONE: u64 = 1;
/// End this host thread.
pub const CMD_EXIT: u64 = 2;
/// Run the ops, then hand back (`REASON_DONE`) without resuming the guest.
pub const CMD_OPS_ONLY: u64 = 3;
/// Slot word: the command's argument.
pub const SLOT_CMD_ARG: usize = 0x70;
/// Slot word: the command's result (clone: the new tid or -errno).
pub const SLOT_CMD_RESULT: usize = 0x78;
/// Slot word: how long the stub spins for the handoff before parking, in its clock's ticks
/// (x86_64: TSC; arm64: CNTVCT_EL0); 0 parks at once.
pub const SLOT_SPIN: usize = 0x80;
/// Slot word: index of the op that failed (with `REASON_OP_FAILED`).
pub const SLOT_FAILED: usize = 0x88;
/// Slot word: the guest's TLS register where the frame does not carry it (arm64 tpidr_el0,
/// saved by the handler on entry and restored on return).
pub const SLOT_TLS: usize = 0x90;
/// Slot: the first op (same format as the data area's).
pub const SLOT_OPS: usize = 0x100;
/// Ops per slot handoff.
pub const SLOT_MAX_OPS: usize = (0x1e00 - SLOT_OPS) / OP_SIZE;
/// Slot: the stack a new thread starts on (grows down from here), before its first trap.
pub const SLOT_BOOT_STACK: usize = 0x2000;
/// Slot: the alternate signal stack, from here to the end of the slot.
pub const SLOT_ALTSTACK: usize = 0x2000;

/// Data area: where setup puts the `struct sigaction`, the `stack_t`, a zero signal set and
/// the filter program for the calls it makes the stub run (seccomp engine).
pub const SETUP_SIGACTION: usize = 0x4000;
/// Data area: the `stack_t` for slot 0.
pub const SETUP_STACK: usize = 0x4040;
/// Data area: an empty signal set.
pub const SETUP_SIGSET: usize = 0x4080;
/// Data area: the `struct sock_fprog`.
pub const SETUP_FPROG: usize = 0x40c0;
/// Data area: the filter instructions (up to 256).
pub const SETUP_FILTER: usize = 0x4100;
/// Data area: how many setup calls a self-setting-up stub (seccomp engine) runs at its entry.
pub const SETUP_COUNT: usize = 0x5000;
/// Data area: 1 + the index of the setup call that failed (0: none did).
pub const SETUP_FAILED: usize = 0x5008;
/// Data area: the setup calls, in the ops format (their results written back).
pub const SETUP_OPS: usize = 0x5040;
/// The most setup calls.
pub const SETUP_MAX_OPS: usize = 32;

/// Data area: a full signal set (every signal blocked while the mapper is cloned: it keeps
/// that mask for life).
pub const SETUP_FULLSET: usize = 0x4088;

// The mapper (seccomp engine). One host thread per stub process that never runs guest code
// makes every change to the stub's address space. It takes its orders from the upper half of
// the data area, which the stub maps read-only ([`MAPQ_OFFSET`]..): a ring of ops in the ops
// format that the kernel appends to; it reports progress in the read-write status words below
// (for speed only: the guest can write them) and acknowledges each `ACK` op the kernel queues
// by writing 1 to the eventfd [`ACK_FD`] (the only progress report the guest cannot forge: its
// threads may not write to any fd).

/// Data area, read-write: how many queued ops the mapper has run (u64; its low half is the
/// futex word a kernel thread waits on).
pub const MAP_DONE: usize = 0x6000;
/// Data area, read-write: u32, non-zero while a kernel thread waits on `MAP_DONE` (the mapper
/// then wakes it).
pub const MAP_KWAIT: usize = 0x6008;
/// Data area, read-write: u32, non-zero while the mapper parks on `MAPQ_TAIL`.
pub const MAP_SLEEP: usize = 0x6010;
/// Data area, read-write: 1 + the sequence number of the op that failed in the mapper (it then
/// ends the stub process: a host mapping must not outlive its PTE); 0 while none has.
pub const MAP_FAILED: usize = 0x6018;
/// Data area, read-write: each queue entry's result (u64 per entry).
pub const MAP_RESULTS: usize = 0x6100;
/// Data area: the read-only part (from here to the end).
pub const MAPQ_OFFSET: usize = 0x8000;
/// Read-only: how many ops the kernel has queued (u64; its low half is the mapper's futex).
pub const MAPQ_TAIL: usize = 0x8000;
/// Read-only: the u64 1 that the mapper's acknowledgement writes to the eventfd.
pub const MAPQ_ONE: usize = 0x8008;
/// Read-only: how long the mapper spins for new work before parking, in spin-clock ticks.
pub const MAPQ_SPIN: usize = 0x8010;
/// Read-only: the mapper's own first call (its filter), in the ops format.
pub const MAPQ_SETUP: usize = 0x8040;
/// Read-only: the mapper filter's `struct sock_fprog`.
pub const MAPQ_FPROG: usize = 0x8080;
/// Read-only: the ring of queued ops (entry `seq % MAPQ_LEN`).
pub const MAPQ_OPS: usize = 0x8100;
/// Entries in the ring (a power of two).
pub const MAPQ_LEN: usize = 256;
/// A ring entry's number that is no syscall: hand the thread whose handoff word is at the stub
/// address in the entry's first argument back to the stub (exchange the word to 0, wake its
/// waiters if `WAITER` was set). Queued after a thread's host ops, it lets the thread run
/// guest code only once they are made, without a round trip through the kernel thread.
pub const MAPQ_HANDBACK: u64 = u64::MAX;
/// Read-only: the mapper filter's instructions (up to 256).
pub const MAPQ_FILTER: usize = MAPQ_OPS + MAPQ_LEN * OP_SIZE;
/// The stub's descriptor of the acknowledgement eventfd (after physical memory at 3 and the
/// two areas at 4 and 5); the stub's executable follows it at 7 until setup closes it.
pub const ACK_FD: u32 = 6;

/// One classic BPF instruction (`struct sock_filter`, linux/filter.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SockFilter {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

impl SockFilter {
    /// The 8 bytes the host reads.
    pub fn to_bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0..2].copy_from_slice(&self.code.to_le_bytes());
        b[2] = self.jt;
        b[3] = self.jf;
        b[4..8].copy_from_slice(&self.k.to_le_bytes());
        b
    }
}

const BPF_LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const BPF_JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const BPF_RET_K: u16 = 0x06; // BPF_RET | BPF_K
/// `SECCOMP_RET_KILL_PROCESS`.
pub const RET_KILL_PROCESS: u32 = 0x8000_0000;
/// `SECCOMP_RET_TRAP`.
pub const RET_TRAP: u32 = 0x0003_0000;
/// `SECCOMP_RET_ALLOW`.
pub const RET_ALLOW: u32 = 0x7fff_0000;

/// One allowed call of a filter: the number, and what its arguments must be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub nr: u32,
    pub checks: Vec<Check>,
}

/// A condition on one argument of an allowed call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// The low 32 bits of argument `i` are one of these (for arguments the host reads as
    /// `int` or `unsigned int`: Linux ignores the high half, so a guest gains nothing there).
    Low32In(usize, Vec<u32>),
    /// The whole 64-bit argument `i` lies in `[lo, hi)` (both in one 4 GiB window).
    Range(usize, u64, u64),
}

impl Rule {
    /// Allowed with any arguments.
    pub fn any(nr: u32) -> Rule {
        Rule { nr, checks: vec![] }
    }

    /// Allowed if every check holds.
    pub fn with(nr: u32, checks: Vec<Check>) -> Rule {
        Rule { nr, checks }
    }
}

const BPF_JA: u16 = 0x05; // BPF_JMP | BPF_JA

/// `struct seccomp_data` offset of the low half of argument `i` (the high half is at + 4).
fn arg_off(i: usize) -> u32 {
    assert!(i < 6);
    16 + 8 * i as u32
}

/// The code after the number is loaded into A: for each rule, "number equal? then its checks,
/// allow, else kill"; a number no rule names kills.
fn rules_code(rules: &[Rule]) -> Vec<SockFilter> {
    let ins = |code, jt, jf, k| SockFilter { code, jt, jf, k };
    let mut f = vec![ins(BPF_LD_W_ABS, 0, 0, 0)];
    for r in rules {
        // The block: checks (each failing jump goes to the block's kill), allow, kill.
        let mut b: Vec<SockFilter> = Vec::new();
        let mut to_kill: Vec<(usize, bool)> = Vec::new(); // (index, true: jf / false: JA k)
        for c in &r.checks {
            match c {
                Check::Low32In(i, vals) => {
                    assert!(!vals.is_empty());
                    b.push(ins(BPF_LD_W_ABS, 0, 0, arg_off(*i)));
                    let m = vals.len();
                    for (j, &v) in vals.iter().enumerate() {
                        // Equal: over the remaining compares and the jump to the kill.
                        b.push(ins(BPF_JEQ_K, (m - j) as u8, 0, v));
                    }
                    to_kill.push((b.len(), false));
                    b.push(ins(BPF_JA, 0, 0, 0));
                }
                Check::Range(i, lo, hi) => {
                    assert!(lo < hi && lo >> 32 == (hi - 1) >> 32 && (*hi as u32) > (*lo as u32));
                    b.push(ins(BPF_LD_W_ABS, 0, 0, arg_off(*i) + 4));
                    to_kill.push((b.len(), true));
                    b.push(ins(BPF_JEQ_K, 0, 0, (lo >> 32) as u32));
                    b.push(ins(BPF_LD_W_ABS, 0, 0, arg_off(*i)));
                    to_kill.push((b.len(), true));
                    b.push(ins(BPF_JGE_K, 0, 0, *lo as u32));
                    // At or past the end: kill (jt); below it: on (jf 0).
                    to_kill.push((b.len(), false));
                    b.push(ins(BPF_JGE_K, 0, 0, *hi as u32));
                }
            }
        }
        b.push(ins(BPF_RET_K, 0, 0, RET_ALLOW));
        let kill = b.len();
        b.push(ins(BPF_RET_K, 0, 0, RET_KILL_PROCESS));
        for (at, jf) in to_kill {
            let d = kill - (at + 1);
            let i = &mut b[at];
            if i.code == BPF_JA {
                i.k = d as u32;
            } else if jf {
                i.jf = u8::try_from(d).expect("filter block too long");
            } else {
                i.jt = u8::try_from(d).expect("filter block too long");
            }
        }
        f.push(ins(
            BPF_JEQ_K,
            0,
            u8::try_from(b.len()).expect("filter block too long"),
            r.nr,
        ));
        f.extend(b);
    }
    f.push(ins(BPF_RET_K, 0, 0, RET_KILL_PROCESS));
    f
}

/// The head of both filters: a call of a foreign `audit_arch` (x86_64's `int $0x80`, the
/// i386 ABI), like one from outside `[page, page + len)`, gets `outside`: the host never runs
/// it.
fn head(audit_arch: u32, page: u64, len: u64, outside: u32) -> Vec<SockFilter> {
    let ins = |code, jt, jf, k| SockFilter { code, jt, jf, k };
    assert!(page % len == 0 && (page as u32).checked_add(len as u32).is_some());
    vec![
        ins(BPF_LD_W_ABS, 0, 0, 4),
        ins(BPF_JEQ_K, 1, 0, audit_arch),
        ins(BPF_RET_K, 0, 0, outside),
        // ip high half
        ins(BPF_LD_W_ABS, 0, 0, 12),
        ins(BPF_JEQ_K, 1, 0, (page >> 32) as u32),
        ins(BPF_RET_K, 0, 0, outside),
        // ip low half in [page, page + len)
        ins(BPF_LD_W_ABS, 0, 0, 8),
        ins(BPF_JGE_K, 1, 0, page as u32),
        ins(BPF_RET_K, 0, 0, outside),
        ins(BPF_JGE_K, 0, 1, (page + len) as u32),
        ins(BPF_RET_K, 0, 0, outside),
    ]
}

/// The filter of the stub's application threads, the threads that run guest code (linux/
/// seccomp.h `struct seccomp_data`: nr at 0, arch at 4, instruction_pointer at 8, args from
/// 16): a call of a foreign `audit_arch` (wherever made) or made from outside
/// `[page, page + len)` (the stub's first code page) traps (SIGSYS to the stub's handler:
/// every guest syscall; the kernel answers a foreign one as a #GP); from inside it,
/// the calls `rules` allow run and anything else kills the process. A guest can jump to any
/// syscall instruction of that page with registers of its choosing, so every rule must be
/// harmless with hostile arguments (ARCHITECTURE.md, "The seccomp engine").
pub fn stub_filter(audit_arch: u32, page: u64, len: u64, rules: &[Rule]) -> Vec<SockFilter> {
    assert!(rules.len() < 40);
    let mut f = head(audit_arch, page, len, RET_TRAP);
    f.extend(rules_code(rules));
    f
}

/// The filter of the stub's mapper thread, which never runs guest code: only `rules`, only
/// from `[page, page + len)`; anything else kills the process.
pub fn mapper_filter(audit_arch: u32, page: u64, len: u64, rules: &[Rule]) -> Vec<SockFilter> {
    let mut f = head(audit_arch, page, len, RET_KILL_PROCESS);
    f.extend(rules_code(rules));
    f
}

/// Runs `filter` on one `seccomp_data` (for tests: a tiny classic-BPF interpreter covering the
/// instructions the filters use).
pub fn run_filter(filter: &[SockFilter], nr: u32, arch: u32, ip: u64, args: [u64; 6]) -> u32 {
    let mut a: u32 = 0;
    let mut pc = 0usize;
    loop {
        let i = filter[pc];
        pc += 1;
        match i.code {
            BPF_LD_W_ABS => {
                a = match i.k {
                    0 => nr,
                    4 => arch,
                    8 => ip as u32,
                    12 => (ip >> 32) as u32,
                    k @ 16..=63 if k % 4 == 0 => {
                        let w = args[(k as usize - 16) / 8];
                        if k % 8 == 0 {
                            w as u32
                        } else {
                            (w >> 32) as u32
                        }
                    }
                    _ => return RET_KILL_PROCESS,
                }
            }
            BPF_JEQ_K => pc += usize::from(if a == i.k { i.jt } else { i.jf }),
            BPF_JGE_K => pc += usize::from(if a >= i.k { i.jt } else { i.jf }),
            BPF_JA => pc += i.k as usize,
            BPF_RET_K => return i.k,
            _ => return RET_KILL_PROCESS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots() {
        const { assert!(SLOT_SIZE.is_power_of_two() && SLOTS_OFFSET % SLOT_SIZE == 0) };
        const { assert!(SLOT_OPS + SLOT_MAX_OPS * OP_SIZE <= 0x1e00) };
        const { assert!(SLOT_ALTSTACK as u64 + 0x8000 <= SLOT_SIZE) };
        const { assert!(SETUP_FILTER + 8 * 256 <= SETUP_COUNT) };
        const { assert!(SETUP_OPS + SETUP_MAX_OPS * OP_SIZE <= MAP_DONE) };
        const { assert!(MAP_RESULTS + MAPQ_LEN * 8 <= MAPQ_OFFSET) };
        const { assert!(MAPQ_FILTER + 8 * 256 <= DATA_SIZE as usize) };
        const { assert!(MAPQ_LEN.is_power_of_two()) };
    }

    #[test]
    fn filter_traps_guest_calls_and_allows_only_listed_stub_calls() {
        let page = 0x7f80_0000_0000u64;
        let arch = 0xc000_003e;
        let slots = (page + 0x2_0000, page + 0x102_0000);
        let f = stub_filter(
            arch,
            page,
            0x1000,
            &[
                Rule::any(15),
                Rule::with(
                    202,
                    vec![
                        Check::Low32In(1, vec![0, 1]),
                        Check::Range(0, slots.0, slots.1),
                    ],
                ),
                Rule::with(56, vec![Check::Low32In(0, vec![0x3d0f00])]),
            ],
        );
        let z = [0u64; 6];
        // From the guest (anywhere outside the stub page): trap, whatever the number.
        for ip in [
            0x40_1000,
            page - 4,
            page + 0x1000,
            page + 0x1_0000,
            u64::MAX - 3,
        ] {
            assert_eq!(run_filter(&f, 202, arch, ip, z), RET_TRAP, "{ip:#x}");
            assert_eq!(run_filter(&f, 59, arch, ip, z), RET_TRAP, "{ip:#x}");
        }
        let ip = page + 0x10;
        // From the stub page: the rules decide, the rest kills.
        assert_eq!(run_filter(&f, 15, arch, page + 0xffe, [7; 6]), RET_ALLOW);
        assert_eq!(run_filter(&f, 59, arch, ip, z), RET_KILL_PROCESS);
        let fx = |a0: u64, a1: u64| run_filter(&f, 202, arch, ip, [a0, a1, 0, 0, 0, 0]);
        assert_eq!(fx(slots.0, 0), RET_ALLOW);
        assert_eq!(fx(slots.0 + 0x30, 1), RET_ALLOW);
        assert_eq!(fx(slots.1 - 4, 1 | 0xdead_0000_0000), RET_ALLOW);
        assert_eq!(fx(slots.0, 3), RET_KILL_PROCESS); // FUTEX_REQUEUE
        assert_eq!(fx(slots.0, 0x80), RET_KILL_PROCESS); // FUTEX_PRIVATE_FLAG | WAIT
        assert_eq!(fx(slots.0 - 4, 0), RET_KILL_PROCESS);
        assert_eq!(fx(slots.1, 0), RET_KILL_PROCESS);
        assert_eq!(fx(slots.0 + (1 << 32), 0), RET_KILL_PROCESS);
        assert_eq!(fx(0x40_0000, 1), RET_KILL_PROCESS);
        let cl = |a0: u64| run_filter(&f, 56, arch, ip, [a0, 0, 0, 0, 0, 0]);
        assert_eq!(cl(0x3d0f00), RET_ALLOW);
        assert_eq!(cl(0x3d0f00 & !0x100), RET_KILL_PROCESS); // without CLONE_VM: a fork
        assert_eq!(cl(0x11), RET_KILL_PROCESS);
        // A foreign audit arch (i386 = 0x4000_0003) traps, from the stub page too (the host
        // never runs it; the kernel answers it as a #GP).
        assert_eq!(run_filter(&f, 202, 0x4000_0003, 0x40_1000, z), RET_TRAP);
        assert_eq!(run_filter(&f, 202, 0x4000_0003, ip, z), RET_TRAP);
        // The mapper's filter kills outside its page too.
        let m = mapper_filter(
            arch,
            page,
            0x1000,
            &[Rule::with(9, vec![Check::Low32In(4, vec![3])])],
        );
        assert_eq!(run_filter(&m, 9, arch, ip, [0, 0, 0, 0, 3, 0]), RET_ALLOW);
        assert_eq!(
            run_filter(&m, 9, arch, ip, [0, 0, 0, 0, 4, 0]),
            RET_KILL_PROCESS
        );
        assert_eq!(
            run_filter(&m, 9, arch, 0x40_1000, [0, 0, 0, 0, 3, 0]),
            RET_KILL_PROCESS
        );
        assert_eq!(run_filter(&m, 11, arch, ip, z), RET_KILL_PROCESS);
        assert_eq!(
            SockFilter {
                code: 0x15,
                jt: 1,
                jf: 2,
                k: 0x0102_0304
            }
            .to_bytes(),
            [0x15, 0, 1, 2, 4, 3, 2, 1]
        );
    }
}
