//! The seccomp engine: guest syscalls and faults arrive as host signals in the stub itself,
//! and the stub hands the thread to the kernel through a futex word in shared memory; no
//! ptrace stop, no context switch through a tracer (DESIGN.md, "The run loop").
//!
//! A stub process sets itself up from its data area (no ptrace: `setup_image`): a second
//! shared memfd of per-thread *slots* (`stub::SLOTS_OFFSET`), one signal handler for SIGSYS,
//! SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP and the kick signal, running on an alternate stack
//! inside the thread's slot, a *mapper* thread with its own filter, and a seccomp filter that
//! traps every syscall made outside the stub's first code page and allows only a few calls
//! that are harmless with any arguments from inside it (`stub::stub_filter`, `app_rules`).
//! Then it jumps to a trapping syscall on its second page: from here on, every event is the
//! handler writing its signal number and frame addresses into the slot and handing the thread
//! over. The kernel reads the frame (registers, FP state) from the shared slot, serves the
//! event, writes the registers back and hands the thread back; the handler runs the thread's
//! own calls (FS base, TSC mode) and returns into the edited frame (rt_sigreturn). Host
//! mapping changes go to the mapper's read-only ring (`SeccompProcess::queue`); a thread
//! handed back while the mapper is behind is released by the mapper itself after them
//! (`HELD`, `MAPQ_HANDBACK`), and frames they unmap are put once the mapper's eventfd has
//! acknowledged them (ARCHITECTURE.md, "The seccomp engine", "Isolation").
//!
//! The handoff word (`stub::SLOT_FUTEX`): bit `OWNER_KERNEL` set while the kernel owns the
//! thread; bit `WAITER` set by whichever side parked in `FUTEX_WAIT` waiting for ownership.
//! Handing over is one atomic exchange that writes the new owner and clears `WAITER`; the
//! side handing over issues `FUTEX_WAKE` only if the old value had `WAITER`. Waiting spins on
//! the word for a bounded *time* (`seccomp_spin=`), then sets `WAITER` with a compare-exchange
//! (only while the peer still owns the thread) and sleeps on exactly that value, so a handback
//! between the check and the sleep makes `FUTEX_WAIT` return at once: no wakeup is lost.
//! Ordering: the exchange is AcqRel (x86: `xchg`, a full barrier), so everything written to
//! the slot before handing over is visible to the side that sees the new owner with an
//! Acquire load.
//!
//! Neighbours: [`super::ptrace`] (shared stub code and setup injection), `crate::run` (the run
//! loop, engine-neutral through [`super::GuestThread`]), the arch crates (`stub` layout and
//! filter, `host` stub code, `ucontext` frame layout), `um_os_linux::shared` (the memfds and
//! futex calls).

use super::Event;
use crate::arch::Regs;
use crate::arch::native::host as arch;
use crate::arch::native::stub as layout;
use crate::arch::native::ucontext as uc;

/// The audit arch of the native ABI (include/uapi/linux/audit.h: EM_* | __AUDIT_ARCH_64BIT |
/// __AUDIT_ARCH_LE), which the stub's filter passes and a SIGSYS's `si_arch` shows.
fn native_audit_arch() -> u32 {
    u32::from(crate::arch::ELF_MACHINE) | 0x8000_0000 | 0x4000_0000
}
use crate::kernel::Kernel;
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use um_mm::{Gather, HostOp};
use um_os_linux::shared::{SharedPages, futex_wait, futex_wake};

fn nr(name: &str) -> u64 {
    crate::arch::syscalls::number(name)
        .map(u64::from)
        .unwrap_or(u64::MAX)
}

/// The calls the stub's application threads (the ones that run guest code) may make from the
/// stub's code page, with what their arguments must be. A guest can jump to any syscall
/// instruction there with registers of its choosing, so each must be harmless with hostile
/// arguments (ARCHITECTURE.md, "The seccomp engine", has the argument per call): nothing that
/// changes the address space or touches a descriptor.
fn app_rules(base: u64) -> Vec<layout::Rule> {
    use layout::{Check, Rule};
    let n = |name: &str| crate::arch::syscalls::number(name);
    let mut r = Vec::new();
    for name in ["rt_sigreturn", "exit", "rt_sigprocmask", "sigaltstack"] {
        r.extend(n(name).map(Rule::any));
    }
    // FUTEX_WAIT / FUTEX_WAKE (shared) on a word of the slots, nothing else.
    r.extend(n("futex").map(|nr| {
        Rule::with(
            nr,
            vec![
                Check::Low32In(1, vec![0, 1]),
                Check::Range(0, base + layout::SLOTS_OFFSET, base + layout::STUB_REGION),
            ],
        )
    }));
    // clone of a thread of this process only (flags are read as 32 bits: kernel/fork.c).
    r.extend(n("clone").map(|nr| {
        Rule::with(
            nr,
            vec![Check::Low32In(0, vec![arch::CLONE_THREAD_FLAGS as u32])],
        )
    }));
    // x86_64: the FS base (arch_prctl(ARCH_SET_FS)) and rdtsc control (prctl(PR_SET_TSC)).
    if let Some((nr, a)) = crate::arch::set_tls_call(0) {
        r.push(Rule::with(
            nr as u32,
            vec![Check::Low32In(0, vec![a[0] as u32])],
        ));
    }
    if let Some((nr, a)) = crate::arch::tsc_call(false) {
        r.push(Rule::with(
            nr as u32,
            vec![Check::Low32In(0, vec![a[0] as u32])],
        ));
    }
    r
}

/// The calls of the stub's mapper thread (it never runs guest code, so this is defence in
/// depth): mmap of physical memory only, munmap, mprotect, its futex waits and wakes (its
/// ring, the kernel's wait word, the handoff words it hands back), the acknowledgement write
/// to its eventfd, and exit_group.
fn mapper_rules() -> Vec<layout::Rule> {
    use layout::{Check, Rule};
    let n = |name: &str| crate::arch::syscalls::number(name);
    let mut r = Vec::new();
    let shared_fixed = (libc::MAP_SHARED | libc::MAP_FIXED) as u32;
    r.extend(n("mmap").map(|nr| {
        Rule::with(
            nr,
            vec![
                Check::Low32In(3, vec![shared_fixed]),
                Check::Low32In(4, vec![3]),
            ],
        )
    }));
    r.extend(n("munmap").map(Rule::any));
    r.extend(n("mprotect").map(Rule::any));
    r.extend(n("futex").map(|nr| Rule::with(nr, vec![Check::Low32In(1, vec![0, 1])])));
    r.extend(n("write").map(|nr| Rule::with(nr, vec![Check::Low32In(0, vec![layout::ACK_FD])])));
    // Its end when a host call fails (a host mapping must not outlive its PTE).
    r.extend(n("exit_group").map(Rule::any));
    r
}

/// How long the kernel waits on a parked handoff before it checks that the stub still lives.
const LIVENESS_PERIOD: Duration = Duration::from_millis(20);

/// Handoff tuning, from the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// How long either side spins for the handoff before parking.
    pub spin: Duration,
    /// The same bound in the stub's clock ticks (x86_64: TSC).
    pub spin_ticks: u64,
}

/// One stub process in the seccomp engine.
pub struct SeccompProcess {
    pid: libc::pid_t,
    base: u64,
    data: SharedPages,
    slots: SharedPages,
    /// The kernel's end of the mapper's acknowledgement eventfd.
    ack: std::os::fd::OwnedFd,
    /// The mapper's queue (appended to in the order the kernel queues host mapping changes).
    mapq: Mutex<MapQueue>,
    /// Which slots hold a live thread (slot 0, the first thread, is never reused: it was not
    /// made by clone, so no CLEARTID word says when it is gone).
    used: Mutex<Vec<bool>>,
    tuning: Tuning,
}

impl Drop for SeccompProcess {
    fn drop(&mut self) {
        // Reaped in the background: the exiting process's parent need not wait for the host
        // to tear the stub down.
        um_os_linux::stub::kill_and_reap_later(self.pid);
    }
}

/// The kernel's side of the mapper's ring (`stub::MAPQ_OPS`).
#[derive(Default)]
struct MapQueue {
    /// Entries queued so far (the ring's tail, as published in `MAPQ_TAIL` by `publish`).
    tail: u64,
    /// The tail last stored in `MAPQ_TAIL` (and checked for a parked mapper): a publish of
    /// the same tail again must not touch `MAP_SLEEP` (`publish_tail`).
    published: u64,
    /// Entries the mapper has provably run: up to the last acknowledged `ACK` op. Only entries
    /// before this are overwritten (the guest can forge `MAP_DONE`, not the eventfd).
    acked: u64,
    /// Where the queued `ACK` ops end, oldest first, not yet acknowledged.
    markers: VecDeque<u64>,
    /// The end of the last `ACK` op queued.
    last_marker: u64,
    /// Frames whose last host mappings the entries before the `ACK` op ending at `.0` remove:
    /// put once the eventfd has acknowledged that op (Linux's mmu_gather: freed after the
    /// flush), never on the guest-writable `MAP_DONE`.
    gathers: VecDeque<(u64, Gather)>,
    /// Frames of entries queued since the last `ACK` op: they go with the next one.
    unmarked: Gather,
}

/// How often (in ring entries) the kernel queues an `ACK` op.
const ACK_EVERY: u64 = (layout::MAPQ_LEN / 4) as u64;

/// Gathered frames after which the kernel queues an `ACK` op at once rather than waiting for
/// the next regular one (what a process may hold back from the allocator meanwhile).
const GATHER_FLUSH: usize = 64;

/// How long a kernel thread waits on the mapper before it wakes it regardless (the guest can
/// clear `MAP_SLEEP`) and checks that the stub still lives.
const MAPPER_PERIOD: Duration = Duration::from_millis(10);

impl SeccompProcess {
    fn lock_q(&self) -> std::sync::MutexGuard<'_, MapQueue> {
        self.mapq.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues the host mapping changes `ops` for the mapper (the application threads may not
    /// make them: ARCHITECTURE.md, "Isolation") and returns at once. `gather` holds the frames
    /// whose host mappings they remove: put once the mapper has acknowledged them. The ring is
    /// first in first out, so whatever is queued later (another batch, a thread's handback)
    /// runs after these.
    pub(crate) fn queue(&self, ops: &[HostOp], gather: Gather) -> io::Result<()> {
        if ops.is_empty() && gather.is_empty() {
            return Ok(());
        }
        let stub_end = self.base + layout::STUB_REGION;
        if ops.iter().any(|op| {
            let (a, l) = match *op {
                HostOp::Map { addr, len, .. }
                | HostOp::Unmap { addr, len }
                | HostOp::Protect { addr, len, .. } => (addr, len),
            };
            a.saturating_add(l) > self.base && a < stub_end
        }) {
            return Err(io::Error::other(format!(
                "host op over the stub region refused: {ops:?}"
            )));
        }
        let mut q = self.lock_q();
        for op in ops {
            self.push(&mut q, &super::ptrace::host_call(op))?;
        }
        q.unmarked.append(gather);
        if q.unmarked.len() >= GATHER_FLUSH {
            self.mark(&mut q)?;
        }
        self.publish(&mut q);
        if !q.gathers.is_empty() {
            self.poll_acks(&mut q)?;
        }
        Ok(())
    }

    /// Queues `ops` and waits until the mapper has acknowledged them through its eventfd (a
    /// fork's write-protect, before the child runs; a shootdown, before the caller frees
    /// the frames): what the guest cannot forge.
    pub(crate) fn map_ops(&self, ops: &[HostOp], gather: Gather) -> io::Result<()> {
        self.queue(ops, gather)?;
        self.sync()
    }

    /// Waits until the mapper has run every entry queued so far, as its eventfd says.
    pub(crate) fn sync(&self) -> io::Result<()> {
        let mut q = self.lock_q();
        if q.acked == q.tail {
            return Ok(());
        }
        if q.last_marker != q.tail {
            self.mark(&mut q)?;
        }
        let target = q.tail;
        self.publish(&mut q);
        while q.acked < target {
            self.collect_acks(&mut q)?;
        }
        Ok(())
    }

    /// Queues the handback of the thread whose handoff word is at stub address `word`: the
    /// mapper releases it once every entry before it has run.
    fn queue_handback(&self, word: u64) -> io::Result<()> {
        let mut q = self.lock_q();
        self.push(&mut q, &(layout::MAPQ_HANDBACK, [word, 0, 0, 0, 0, 0]))?;
        self.publish(&mut q);
        Ok(())
    }

    /// Whether the mapper may not have run everything queued (`MAP_DONE` is the guest's to
    /// forge: a wrong answer only lets its own thread run ahead of its own mappings, or makes
    /// it take the mapper's path for nothing; frames wait for the eventfd regardless).
    fn behind(&self) -> bool {
        let tail = self.lock_q().tail;
        self.data.load(layout::MAP_DONE) < tail
    }

    /// Wakes the mapper if it is parked, ahead of work about to be queued (only if it spins:
    /// else it would park again at once and need a second wakeup).
    fn prewake(&self) {
        if self.tuning.spin_ticks != 0 {
            wake_if_parked(&self.data);
        }
    }

    /// Puts the frames of gathers the eventfd has acknowledged, if any are waiting.
    fn reap_gathers(&self) -> io::Result<()> {
        let mut q = self.lock_q();
        if !q.gathers.is_empty() {
            self.poll_acks(&mut q)?;
        }
        Ok(())
    }

    /// The stub's host pid.
    pub(crate) fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Appends one entry to the ring (never over an entry the mapper has not provably run, and
    /// leaving room for the `ACK` op every `ACK_EVERY` entries); not yet published.
    fn push(&self, q: &mut MapQueue, call: &(u64, [u64; 6])) -> io::Result<()> {
        while q.tail + 2 - q.acked > layout::MAPQ_LEN as u64 {
            self.collect_acks(q)?;
        }
        self.put_op(q.tail, call);
        q.tail += 1;
        if q.tail - q.last_marker >= ACK_EVERY {
            self.mark(q)?;
        }
        Ok(())
    }

    /// Appends an `ACK` op (`write(ACK_FD, &MAPQ_ONE, 8)`), which takes the unmarked gather.
    fn mark(&self, q: &mut MapQueue) -> io::Result<()> {
        while q.tail + 1 - q.acked > layout::MAPQ_LEN as u64 {
            self.collect_acks(q)?;
        }
        let ack = (
            nr("write"),
            [
                u64::from(layout::ACK_FD),
                self.base + layout::DATA_OFFSET + layout::MAPQ_ONE as u64,
                8,
                0,
                0,
                0,
            ],
        );
        self.put_op(q.tail, &ack);
        q.tail += 1;
        q.last_marker = q.tail;
        let t = q.tail;
        q.markers.push_back(t);
        let g = std::mem::take(&mut q.unmarked);
        if !g.is_empty() {
            q.gathers.push_back((t, g));
        }
        Ok(())
    }

    /// Publishes the tail, then looks for a parked mapper (it sets MAP_SLEEP, then reads the
    /// tail: with both fences one of us sees the other).
    fn publish(&self, q: &mut MapQueue) {
        publish_tail(&self.data, q);
    }

    fn put_op(&self, seq: u64, (n, a): &(u64, [u64; 6])) {
        let off = layout::MAPQ_OPS + (seq as usize % layout::MAPQ_LEN) * layout::OP_SIZE;
        self.data.store(off, *n);
        for (j, v) in a.iter().enumerate() {
            self.data.store(off + 8 + j * 8, *v);
        }
    }

    /// Counts `n` acknowledgements: the oldest markers are passed, their gathers put.
    fn acknowledge(q: &mut MapQueue, n: u64) {
        for _ in 0..n {
            match q.markers.pop_front() {
                Some(m) => q.acked = m,
                None => break,
            }
        }
        while q.gathers.front().is_some_and(|(m, _)| *m <= q.acked) {
            q.gathers.pop_front();
        }
    }

    /// Takes the acknowledgements that have arrived, without waiting.
    fn poll_acks(&self, q: &mut MapQueue) -> io::Result<()> {
        use std::os::fd::AsFd;
        let n = um_os_linux::stub::read_ack(self.ack.as_fd())?;
        Self::acknowledge(q, n);
        Ok(())
    }

    /// Waits for at least one more acknowledgement from the mapper.
    fn collect_acks(&self, q: &mut MapQueue) -> io::Result<()> {
        use std::os::fd::AsFd;
        self.publish(q);
        loop {
            let n = um_os_linux::stub::read_ack(self.ack.as_fd())?;
            if n > 0 {
                Self::acknowledge(q, n);
                return Ok(());
            }
            let Some(&next) = q.markers.front() else {
                return Err(io::Error::other(
                    "mapper ring full with nothing to acknowledge",
                ));
            };
            if self.data.load(layout::MAP_DONE) >= next {
                // The mapper publishes MAP_DONE after its write to the eventfd, so this is a
                // forged count (or the read raced it): the eventfd decides, look again soon.
                std::thread::sleep(Duration::from_micros(50));
                if um_os_linux::stub::exited(self.pid) {
                    return Err(self.died());
                }
            } else {
                self.wait_done(next)?;
            }
        }
    }

    /// Why the stub process is gone: a host call that failed in the mapper, if one did.
    fn died(&self) -> io::Error {
        let failed = self.data.load(layout::MAP_FAILED);
        if failed == 0 {
            return io::Error::other("stub process died");
        }
        let i = (failed - 1) as usize % layout::MAPQ_LEN;
        let off = layout::MAPQ_OPS + i * layout::OP_SIZE;
        let res = self.data.load(layout::MAP_RESULTS + i * 8) as i64;
        let args: Vec<u64> = (0..6).map(|j| self.data.load(off + 8 + j * 8)).collect();
        io::Error::other(format!(
            "host call {} {args:x?} in the stub's mapper failed: {}",
            self.data.load(off),
            io::Error::from_raw_os_error((-res) as i32)
        ))
    }

    /// Waits until the mapper reports `MAP_DONE >= target` (spinning first, then parked on
    /// it). The word is guest-writable: a forged value only makes this return early; the
    /// caller decides on the eventfd.
    fn wait_done(&self, target: u64) -> io::Result<()> {
        let done = || self.data.load(layout::MAP_DONE);
        if done() >= target {
            return Ok(());
        }
        let spin_until = Instant::now() + self.tuning.spin;
        while Instant::now() < spin_until {
            if done() >= target {
                return Ok(());
            }
            std::hint::spin_loop();
        }
        let kwait = self.data.atomic32(layout::MAP_KWAIT);
        let w = self.data.atomic32(layout::MAP_DONE);
        loop {
            kwait.store(1, Ordering::SeqCst);
            std::sync::atomic::fence(Ordering::SeqCst);
            let d = done();
            if d >= target {
                return Ok(());
            }
            if !futex_wait(w, d as u32, MAPPER_PERIOD)? {
                // A forged MAP_SLEEP may have kept the mapper asleep: wake it regardless.
                futex_wake(self.data.atomic32(layout::MAPQ_TAIL), 1);
                if um_os_linux::stub::exited(self.pid) {
                    return Err(self.died());
                }
            }
        }
    }

    /// Stub address of slot `i`.
    fn slot_addr(&self, i: usize) -> u64 {
        self.base + layout::SLOTS_OFFSET + i as u64 * layout::SLOT_SIZE
    }

    /// Offset in `slots` of a stub address, if it lies inside slot `i`.
    fn slot_off(&self, i: usize, addr: u64, len: usize) -> Option<usize> {
        let start = self.slot_addr(i);
        (addr >= start && addr + len as u64 <= start + layout::SLOT_SIZE)
            .then(|| (addr - self.base - layout::SLOTS_OFFSET) as usize)
    }

    fn word(&self, i: usize, off: usize) -> usize {
        i * layout::SLOT_SIZE as usize + off
    }

    /// Claims a free slot for a new thread and resets it.
    fn alloc_slot(&self) -> Option<usize> {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let i = (1..layout::MAX_SLOTS).find(|&i| {
            !used[i]
                && self
                    .slots
                    .atomic32(self.word(i, layout::SLOT_TID))
                    .load(Ordering::Acquire)
                    == 0
        })?;
        used[i] = true;
        for off in [
            layout::SLOT_REASON,
            layout::SLOT_COUNT,
            layout::SLOT_CMD,
            layout::SLOT_CMD_RESULT,
        ] {
            self.slots.store(self.word(i, off), 0);
        }
        self.slots
            .store(self.word(i, layout::SLOT_SPIN), self.tuning.spin_ticks);
        self.slots
            .atomic32(self.word(i, layout::SLOT_FUTEX))
            .store(0, Ordering::Release);
        Some(i)
    }

    fn free_slot(&self, i: usize) {
        if i != 0 {
            self.used.lock().unwrap_or_else(|e| e.into_inner())[i] = false;
        }
    }
}

/// Stores `q.tail` in the ring's `MAPQ_TAIL`, then wakes the mapper if it parked
/// (`wake_if_parked`); returns whether it made the wake call. A publish that stores no new
/// tail (`sync` and `collect_acks` publish again whatever is queued, often nothing new) makes
/// no wake call: the publish that stored that tail made the check, and a mapper that parked
/// since has run it (its FUTEX_WAIT would only wake it for nothing).
fn publish_tail(data: &SharedPages, q: &mut MapQueue) -> bool {
    if q.tail == q.published {
        return false;
    }
    data.store(layout::MAPQ_TAIL, q.tail);
    q.published = q.tail;
    // The mapper stores MAP_SLEEP, then reads the tail: with both fences one of us sees the
    // other (it does not sleep, or this wakes it).
    std::sync::atomic::fence(Ordering::SeqCst);
    wake_if_parked(data)
}

/// Wakes the mapper if `MAP_SLEEP` says it parks; returns whether it made the wake call.
///
/// Only the mapper clears `MAP_SLEEP` (once its FUTEX_WAIT returns). The kernel must not:
/// a publish's look at the word can come late, after the mapper has run the entries it
/// published and parked again (set the word, found the tail it ran, about to FUTEX_WAIT). A
/// kernel that cleared the word there (an exchange to 0, so that two publishes before the
/// mapper runs make one wake call) spent its wake on a mapper not asleep yet, which then
/// slept with the word clear; the next publish, a thread's handback, saw no sleeper and woke
/// nobody, and every thread of the process waited for its handback for good
/// (guest/forkstress, about 1 run in 20-30 at 3 runs at once). Leaving the word set costs at
/// most a wake call that finds the mapper awake.
fn wake_if_parked(data: &SharedPages) -> bool {
    if data.atomic32(layout::MAP_SLEEP).load(Ordering::SeqCst) != 0 {
        futex_wake(data.atomic32(layout::MAPQ_TAIL), 1);
        return true;
    }
    false
}

/// One guest thread in the seccomp engine: a host thread of a stub process and its slot.
pub struct SeccompThread {
    proc: Arc<SeccompProcess>,
    slot: usize,
    tid: libc::pid_t,
    /// The guest registers (valid while the kernel owns the thread).
    pub regs: Regs,
    template: Regs,
    /// The frame of the signal being served: its stub address and a copy of its ucontext.
    uc_addr: u64,
    ucontext: Vec<u8>,
    /// The TLS value the host thread has (None: unknown, set it before the guest runs).
    host_tls: Option<u64>,
    /// The host thread is gone (told to exit, or its process killed).
    ended: bool,
    /// Adaptive spinning (DESIGN.md, "The handoff"): handoffs left for which the stub is told
    /// to park at once (the last serve took longer than the stub's spin, so it parked anyway).
    stub_backoff: u32,
    /// When the kernel last took the thread over (how long it served it).
    owned_since: Instant,
    /// Wall time (ns) spent spinning for a handoff, not yet taken by [`Self::take_spin`]: by
    /// the stub while the kernel served, and by the kernel while the guest ran.
    stub_spun: u64,
    kernel_spun: u64,
    /// Whether rdtsc faults, for the guest thread and in its host thread. While it does the
    /// stub must not spin (its spin clock is the TSC): it parks at once.
    pub(crate) tsc: super::Tsc,
    /// This handoff turns rdtsc back on: the stub loads SLOT_SPIN right after it hands the
    /// thread over, so if it is slow (preempted) it can read this handoff's value before it
    /// runs the prctl and spin with a faulting rdtsc, dying in its handler; it parks instead.
    tsc_hold: bool,
}

/// How many handoffs a missed spin makes the waiting side park at once.
const BACKOFF: u32 = 16;

/// Whether host thread `tid` of process `pid` has exited (gone, or a zombie: a thread group
/// leader that called exit stays one while other threads live).
fn host_thread_gone(pid: libc::pid_t, tid: libc::pid_t) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")) {
        Ok(st) => st
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|c| c == 'Z' || c == 'X'),
        Err(e) => e.kind() == io::ErrorKind::NotFound,
    }
}

/// Whether a handoff word says the kernel owns the thread: the stub handed it over (`HELD`
/// set means the kernel handed it back through the mapper, which has not released it yet).
fn kernel_owns(w: u32) -> bool {
    w & (layout::OWNER_KERNEL | layout::HELD) == layout::OWNER_KERNEL
}

/// Whether the filter is installed with `SECCOMP_FILTER_FLAG_SPEC_ALLOW` (cleared once a host
/// refuses it).
static SPEC_ALLOW: AtomicBool = AtomicBool::new(true);

/// Why a stub could not be set up.
enum SetupError {
    /// The host refused the filter's flags (retry without SPEC_ALLOW).
    SeccompEinval,
    Io(io::Error),
}

impl SetupError {
    fn into_io(self) -> io::Error {
        match self {
            SetupError::SeccompEinval => io::Error::from_raw_os_error(libc::EINVAL),
            SetupError::Io(e) => e,
        }
    }
}

/// The bytes a seccomp stub finds in its data area from `stub::SETUP_SIGACTION` on: the
/// handler's `struct sigaction`, slot 0's `stack_t`, an empty signal set, the `sock_fprog` and
/// filter, and the setup calls its entry code runs (`SETUP_COUNT`, `SETUP_OPS`): map the slots
/// (fd 5), close fds 5 and 4, unmap everything exec put below and above the stub region, the
/// handler for every signal the engine takes, the alternate stack, an empty mask,
/// `PR_SET_NO_NEW_PRIVS`, and last the filter (`SECCOMP_SET_MODE_FILTER`, with
/// `SECCOMP_FILTER_FLAG_SPEC_ALLOW` if `spec_allow`: no forced speculative-store-bypass
/// mitigation, which would slow the guest down). Returns the bytes and the number of calls.
fn setup_image(k: &Kernel, spec_allow: bool, spin_ticks: u64) -> (Vec<(usize, Vec<u8>)>, usize) {
    let base = k.stub.base;
    let code = arch::stub_code();
    let data_addr = base + layout::DATA_OFFSET;
    let slot0 = base + layout::SLOTS_OFFSET;
    let org = layout::SETUP_SIGACTION;
    let mut img = vec![0u8; layout::SETUP_OPS + layout::SETUP_MAX_OPS * layout::OP_SIZE - org];
    let mut put = |off: usize, v: u64| {
        img[off - org..off - org + 8].copy_from_slice(&v.to_le_bytes());
    };
    use um_uapi::abi::signal::SA_RESTORER;
    let act = [
        base + code.handler,
        (libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER) as u64 | SA_RESTORER,
        base + code.restorer,
        u64::MAX,
    ];
    for (i, w) in act.iter().enumerate() {
        put(layout::SETUP_SIGACTION + i * 8, *w);
    }
    put(layout::SETUP_STACK, slot0 + layout::SLOT_ALTSTACK as u64);
    put(layout::SETUP_STACK + 8, 0);
    put(
        layout::SETUP_STACK + 16,
        layout::SLOT_SIZE - layout::SLOT_ALTSTACK as u64,
    );
    put(layout::SETUP_SIGSET, 0);
    put(layout::SETUP_FULLSET, u64::MAX);
    let filter = layout::stub_filter(native_audit_arch(), base, 0x1000, &app_rules(base));
    for (i, ins) in filter.iter().enumerate() {
        put(
            layout::SETUP_FILTER + i * 8,
            u64::from_le_bytes(ins.to_bytes()),
        );
    }
    put(layout::SETUP_FPROG, filter.len() as u64);
    put(
        layout::SETUP_FPROG + 8,
        data_addr + layout::SETUP_FILTER as u64,
    );
    const SECCOMP_SET_MODE_FILTER: u64 = 1;
    const SECCOMP_FILTER_FLAG_SPEC_ALLOW: u64 = 4;
    let seccomp_flags = if spec_allow {
        SECCOMP_FILTER_FLAG_SPEC_ALLOW
    } else {
        0
    };

    // The mapper's read-only page: its spin, the 1 it acknowledges with, its own filter and
    // the call that installs it.
    let q0 = layout::MAPQ_OFFSET;
    let mut q = vec![0u8; layout::MAPQ_FILTER + 8 * 256 - q0];
    let mut qput = |off: usize, v: u64| {
        q[off - q0..off - q0 + 8].copy_from_slice(&v.to_le_bytes());
    };
    qput(layout::MAPQ_ONE, 1);
    qput(layout::MAPQ_SPIN, spin_ticks);
    let mfilter = layout::mapper_filter(native_audit_arch(), base, 0x1000, &mapper_rules());
    for (i, ins) in mfilter.iter().enumerate() {
        qput(
            layout::MAPQ_FILTER + i * 8,
            u64::from_le_bytes(ins.to_bytes()),
        );
    }
    qput(layout::MAPQ_FPROG, mfilter.len() as u64);
    qput(
        layout::MAPQ_FPROG + 8,
        data_addr + layout::MAPQ_FILTER as u64,
    );
    let mcall = [
        nr("seccomp"),
        SECCOMP_SET_MODE_FILTER,
        seccomp_flags,
        data_addr + layout::MAPQ_FPROG as u64,
    ];
    for (i, v) in mcall.iter().enumerate() {
        qput(layout::MAPQ_SETUP + i * 8, *v);
    }

    let page = um_os_linux::probe::page_size() as u64;
    let rw = (libc::PROT_READ | libc::PROT_WRITE) as u64;
    let shared_fixed = (libc::MAP_SHARED | libc::MAP_FIXED) as u64;
    let mut calls: Vec<(u64, [u64; 6])> = vec![
        (
            nr("mmap"),
            [
                slot0,
                layout::SLOT_SIZE * layout::MAX_SLOTS as u64,
                rw,
                shared_fixed,
                5,
                0,
            ],
        ),
        // The mapper's orders: the upper part of the data area, read-only from now on.
        (
            nr("mmap"),
            [
                data_addr + layout::MAPQ_OFFSET as u64,
                layout::DATA_SIZE - layout::MAPQ_OFFSET as u64,
                libc::PROT_READ as u64,
                shared_fixed,
                4,
                layout::MAPQ_OFFSET as u64,
            ],
        ),
        (nr("close"), [5, 0, 0, 0, 0, 0]),
        (nr("close"), [4, 0, 0, 0, 0, 0]),
        // The executable (after the ack eventfd): the stub needs it no longer.
        (nr("close"), [u64::from(layout::ACK_FD) + 1, 0, 0, 0, 0, 0]),
        (nr("munmap"), [0, base, 0, 0, 0, 0]),
    ];
    for (addr, len) in k.stub.unmap_above(page) {
        calls.push((nr("munmap"), [addr, len, 0, 0, 0, 0]));
    }
    for sig in [
        libc::SIGSYS,
        libc::SIGSEGV,
        libc::SIGBUS,
        libc::SIGILL,
        libc::SIGFPE,
        libc::SIGTRAP,
        crate::signal::KICK_SIGNAL,
    ] {
        calls.push((
            nr("rt_sigaction"),
            [
                sig as u64,
                data_addr + layout::SETUP_SIGACTION as u64,
                0,
                8,
                0,
                0,
            ],
        ));
    }
    calls.push((
        nr("sigaltstack"),
        [data_addr + layout::SETUP_STACK as u64, 0, 0, 0, 0, 0],
    ));
    let setmask = |set: usize| {
        (
            nr("rt_sigprocmask"),
            [libc::SIG_SETMASK as u64, data_addr + set as u64, 0, 8, 0, 0],
        )
    };
    calls.push(setmask(layout::SETUP_FULLSET));
    calls.push((
        nr("prctl"),
        [libc::PR_SET_NO_NEW_PRIVS as u64, 1, 0, 0, 0, 0],
    ));
    // The mapper: cloned with every signal blocked and before the application filter, so it
    // has neither; it installs its own (the entry code sends the child its way).
    let mapper_flags = (libc::CLONE_VM
        | libc::CLONE_FS
        | libc::CLONE_FILES
        | libc::CLONE_SIGHAND
        | libc::CLONE_THREAD
        | libc::CLONE_SYSVSEM) as u64;
    calls.push((nr("clone"), [mapper_flags, 0, 0, 0, 0, 0]));
    calls.push(setmask(layout::SETUP_SIGSET));
    calls.push((
        nr("seccomp"),
        [
            SECCOMP_SET_MODE_FILTER,
            seccomp_flags,
            data_addr + layout::SETUP_FPROG as u64,
            0,
            0,
            0,
        ],
    ));
    assert!(calls.len() <= layout::SETUP_MAX_OPS);
    put(layout::SETUP_COUNT, calls.len() as u64);
    for (i, (n, a)) in calls.iter().enumerate() {
        let off = layout::SETUP_OPS + i * layout::OP_SIZE;
        put(off, *n);
        for (j, v) in a.iter().enumerate() {
            put(off + 8 + j * 8, *v);
        }
    }
    (vec![(org, img), (q0, q)], calls.len())
}

impl SeccompThread {
    /// Starts a stub process in the seccomp engine and waits for its first handoff. The stub
    /// sets itself up (no ptrace): its entry code runs the calls of [`setup_image`] from its
    /// data area, the last of which installs the filter, and traps into its handler. The
    /// spawner keeps one such stub ready ahead, already waiting in its first handoff.
    pub fn new_process(k: &Kernel, tuning: Tuning) -> io::Result<SeccompThread> {
        let spec_allow = SPEC_ALLOW.load(Ordering::Relaxed);
        match Self::try_new_process(k, tuning, spec_allow) {
            Err(SetupError::SeccompEinval) if spec_allow => {
                // An old host without SECCOMP_FILTER_FLAG_SPEC_ALLOW (Linux < 4.17).
                log::info!("seccomp: SECCOMP_FILTER_FLAG_SPEC_ALLOW refused; installing without");
                SPEC_ALLOW.store(false, Ordering::Relaxed);
                Self::try_new_process(k, tuning, false).map_err(SetupError::into_io)
            }
            r => r.map_err(SetupError::into_io),
        }
    }

    fn try_new_process(
        k: &Kernel,
        tuning: Tuning,
        spec_allow: bool,
    ) -> Result<SeccompThread, SetupError> {
        let base = k.stub.base;
        let (init, ncalls) = setup_image(k, spec_allow, tuning.spin_ticks);
        let setup = um_os_linux::stub::SelfSetup {
            init,
            ack_eventfd: true,
        };
        let spawned = um_os_linux::stub::spawn(
            &k.stub.image,
            k.phys.fd(),
            &[
                layout::DATA_SIZE as usize,
                layout::SLOT_SIZE as usize * layout::MAX_SLOTS,
            ],
            Some(&setup),
        )
        .map_err(SetupError::Io)?;
        let pid = spawned.pid;
        let mut areas = spawned.areas.into_iter();
        let (Some(data), Some(slots)) = (areas.next(), areas.next()) else {
            return Err(SetupError::Io(io::Error::other("no data or slot area")));
        };
        let Some(ack) = spawned.ack else {
            return Err(SetupError::Io(io::Error::other("no mapper eventfd")));
        };
        let proc = Arc::new(SeccompProcess {
            pid,
            base,
            data,
            slots,
            ack,
            mapq: Mutex::new(MapQueue::default()),
            used: Mutex::new({
                let mut v = vec![false; layout::MAX_SLOTS];
                v[0] = true;
                v
            }),
            tuning,
        });
        proc.slots.store(layout::SLOT_SPIN, tuning.spin_ticks);
        let mut th = SeccompThread::on_slot(proc, 0, pid, Regs::default(), Regs::default());
        if let Err(e) = th.first_handoff() {
            // Which setup call failed, if one did (1 + its index; its result in its op).
            let data = &th.proc.data;
            let failed = data.load(layout::SETUP_FAILED) as usize;
            if failed == 0 || failed > ncalls {
                return Err(SetupError::Io(io::Error::other(format!(
                    "the seccomp stub died before its first handoff ({e}; is exec of the stub \
                     allowed here? try stub_exe=PATH)"
                ))));
            }
            let i = failed - 1;
            let op = layout::SETUP_OPS + i * layout::OP_SIZE;
            let (n, res) = (data.load(op), data.load(op + layout::RESULT_OFF) as i64);
            if n == nr("seccomp") && res == -(libc::EINVAL as i64) {
                return Err(SetupError::SeccompEinval);
            }
            return Err(SetupError::Io(io::Error::other(format!(
                "seccomp stub setup call {i} (syscall {n}) failed: {}",
                io::Error::from_raw_os_error(-res as i32)
            ))));
        }
        uc::load_regs(&th.ucontext, &mut th.template);
        th.regs = th.template;
        Ok(th)
    }

    /// A thread on `slot` of `proc`, before its first handoff.
    fn on_slot(
        proc: Arc<SeccompProcess>,
        slot: usize,
        tid: libc::pid_t,
        regs: Regs,
        template: Regs,
    ) -> SeccompThread {
        SeccompThread {
            proc,
            slot,
            tid,
            regs,
            template,
            uc_addr: 0,
            ucontext: vec![0; uc::UC_SIZE],
            host_tls: None,
            ended: false,
            stub_backoff: 0,
            tsc_hold: false,
            owned_since: Instant::now(),
            stub_spun: 0,
            kernel_spun: 0,
            tsc: super::Tsc::default(),
        }
    }

    fn off(&self, w: usize) -> usize {
        self.proc.word(self.slot, w)
    }

    fn futex(&self) -> &AtomicU32 {
        self.proc.slots.atomic32(self.off(layout::SLOT_FUTEX))
    }

    fn load(&self, w: usize) -> u64 {
        self.proc.slots.load(self.off(w))
    }

    fn store(&self, w: usize, v: u64) {
        self.proc.slots.store(self.off(w), v)
    }

    /// Tunes the stub's spin for its next handoff: if serving took longer than the stub spins,
    /// the stub parked, so for the next `BACKOFF` handoffs it parks at once instead of burning
    /// its spin (a thread that blocks in the kernel, e.g. in read or wait4, keeps doing so).
    fn tune_spin(&mut self) {
        let tuning = self.proc.tuning;
        if self.tsc.host_off || self.tsc_hold {
            // rdtsc would fault in the stub's spin loop: park at once; the backoff brings the
            // spin back once the TSC works again.
            self.store(layout::SLOT_SPIN, 0);
            self.stub_backoff = BACKOFF;
        } else if tuning.spin_ticks != 0 {
            let served = self.owned_since.elapsed();
            if self.stub_backoff == 0 {
                // The stub was told to spin: it spun for the serve, up to its spin.
                self.stub_spun += served.min(tuning.spin).as_nanos() as u64;
            }
            if served > tuning.spin {
                if self.stub_backoff == 0 {
                    self.store(layout::SLOT_SPIN, 0);
                }
                self.stub_backoff = BACKOFF;
            } else if self.stub_backoff > 0 {
                // A serve short enough for the spin to have caught it: spin again.
                self.stub_backoff = 0;
                self.store(layout::SLOT_SPIN, tuning.spin_ticks);
            }
        }
    }

    /// Gives the thread to the stub (release: the slot's contents go with it).
    fn hand_to_stub(&mut self) {
        self.tune_spin();
        let old = self.futex().swap(0, Ordering::AcqRel);
        if old & layout::WAITER != 0 {
            futex_wake(self.futex(), 1);
        }
    }

    /// Gives the thread back to run guest code: directly if the mapper has run everything
    /// queued, else through the mapper's ring (the word keeps the owner bit, with `HELD`, and
    /// the mapper's handback entry, queued after the pending ops, releases it). So the guest
    /// never runs ahead of its mappings (nor of another thread's batch queued earlier: the
    /// host-op ordering), and the kernel thread does not wait for the mapper: the mapping
    /// costs one more hop, not a round trip.
    fn hand_to_guest(&mut self) -> io::Result<()> {
        if !self.proc.behind() {
            self.hand_to_stub();
            return Ok(());
        }
        self.tune_spin();
        self.futex().fetch_or(layout::HELD, Ordering::AcqRel);
        self.proc
            .queue_handback(self.proc.slot_addr(self.slot) + layout::SLOT_FUTEX as u64)
    }

    /// Waits until the stub hands the thread back: a bounded spin, then parking, checking now
    /// and then that the stub process still lives.
    fn wait_for_stub(&mut self) -> io::Result<()> {
        let (r, spin_start) = self.wait_inner();
        self.owned_since = Instant::now();
        if let Some(t0) = spin_start {
            let spun = self.owned_since.saturating_duration_since(t0);
            self.kernel_spun += spun.min(self.proc.tuning.spin).as_nanos() as u64;
        }
        r
    }

    /// Waits; also returns when the kernel started spinning (None: it did not spin).
    fn wait_inner(&mut self) -> (io::Result<()>, Option<Instant>) {
        let w = self.proc.slots.atomic32(self.off(layout::SLOT_FUTEX));
        // The kernel always spins first (bounded): a miss costs at most `spin` of a core that
        // would otherwise idle, while parking costs a wakeup (tens of microseconds) on every
        // handoff. (Only the stub backs off, on the evidence of how long the kernel served.)
        let spin = self.proc.tuning.spin;
        if spin.is_zero() {
            return (self.park(w), None);
        }
        let t0 = Instant::now();
        let spin_until = t0 + spin;
        loop {
            if kernel_owns(w.load(Ordering::Acquire)) {
                return (Ok(()), Some(t0));
            }
            if Instant::now() >= spin_until {
                break;
            }
            std::hint::spin_loop();
        }
        (self.park(w), Some(t0))
    }

    /// The wall time (ns) spent spinning for handoffs since the last call, by the stub while
    /// the kernel served and by the kernel while the guest ran: CPU time of the two host
    /// threads that is neither guest work nor serving it ([`crate::cputime`]).
    pub fn take_spin(&mut self) -> (u64, u64) {
        (
            std::mem::take(&mut self.stub_spun),
            std::mem::take(&mut self.kernel_spun),
        )
    }

    /// Parks until the stub hands the thread back (see the module docs for the protocol).
    fn park(&self, w: &AtomicU32) -> io::Result<()> {
        loop {
            let v = w.load(Ordering::Acquire);
            if kernel_owns(v) {
                return Ok(());
            }
            if v & layout::WAITER == 0
                && w.compare_exchange(v, v | layout::WAITER, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
            {
                continue;
            }
            let woke = futex_wait(w, v | layout::WAITER, LIVENESS_PERIOD)?;
            if !woke {
                if um_os_linux::stub::exited(self.proc.pid) {
                    return Err(self.proc.died());
                }
                // The guest may end its own host thread (exit from the stub page is allowed)
                // while the process lives on (the mapper): nobody would hand this thread back.
                if self.tid > 0 && host_thread_gone(self.proc.pid, self.tid) {
                    return Err(io::Error::other("stub thread exited"));
                }
                // Waiting for the mapper to hand the thread back (HELD) while it is behind:
                // the guest may have cleared MAP_SLEEP so that no publish woke the mapper;
                // wake it regardless, as `wait_done` does, so that the thread (and a kill of
                // its process, which waits for it) is delayed, not kept for good. Not a sign
                // of a lost wakeup by itself: on a loaded host a woken mapper can wait that
                // long for a CPU (seen at load 20 on 2 CPUs: some fork children each run).
                if v & layout::HELD != 0 && self.proc.behind() {
                    log::debug!(
                        "seccomp: stub {}: handback late, mapper woken",
                        self.proc.pid
                    );
                    futex_wake(self.proc.data.atomic32(layout::MAPQ_TAIL), 1);
                }
            }
        }
    }

    /// Waits for a new thread's first trap and takes its frame.
    fn first_handoff(&mut self) -> io::Result<()> {
        self.wait_for_stub()?;
        if self.load(layout::SLOT_REASON) != layout::REASON_SIGNAL
            || self.load(layout::SLOT_SIGNO) != libc::SIGSYS as u64
        {
            return Err(io::Error::other(format!(
                "stub thread started with reason {} signal {}",
                self.load(layout::SLOT_REASON),
                self.load(layout::SLOT_SIGNO)
            )));
        }
        self.take_frame()?;
        Ok(())
    }

    /// Copies the current frame's ucontext out of the slot; returns the siginfo bytes.
    fn take_frame(&mut self) -> io::Result<[u8; 128]> {
        let uc_addr = self.load(layout::SLOT_UCONTEXT);
        let si_addr = self.load(layout::SLOT_SIGINFO);
        let p = &self.proc;
        let (Some(uo), Some(so)) = (
            p.slot_off(self.slot, uc_addr, uc::UC_SIZE),
            p.slot_off(self.slot, si_addr, 128),
        ) else {
            return Err(io::Error::other(format!(
                "stub frame outside its slot: ucontext {uc_addr:#x} siginfo {si_addr:#x}"
            )));
        };
        let mut si = [0u8; 128];
        p.slots.read(so, &mut si);
        p.slots.read(uo, &mut self.ucontext);
        self.uc_addr = uc_addr;
        Ok(si)
    }

    /// Writes the registers back into the frame.
    fn put_frame(&mut self) -> io::Result<()> {
        let uo = self
            .proc
            .slot_off(self.slot, self.uc_addr, uc::UC_SIZE)
            .ok_or_else(|| io::Error::other("no frame"))?;
        uc::store_regs(&self.regs, &mut self.ucontext);
        self.proc.slots.write(uo, &self.ucontext);
        Ok(())
    }

    /// Where the host frame's FP state is in the slot and how long it is (its head says: x86's
    /// XSAVE description, arm64's fixed record).
    fn fp_off(&self) -> io::Result<(usize, usize)> {
        let (addr, head_len) = uc::fp_window(&self.ucontext, self.uc_addr);
        let outside = || io::Error::other(format!("FP state at {addr:#x} outside the slot"));
        let o = self
            .proc
            .slot_off(self.slot, addr, head_len)
            .ok_or_else(outside)?;
        let mut head = vec![0u8; head_len];
        self.proc.slots.read(o, &mut head);
        let len = uc::fp_len(&head);
        self.proc
            .slot_off(self.slot, addr, len)
            .map(|o| (o, len))
            .ok_or_else(outside)
    }

    /// The guest's FP/SIMD registers (the FP image: the host frame's FP state).
    pub fn get_fpregs(&self) -> io::Result<Vec<u8>> {
        let (o, len) = self.fp_off()?;
        let mut w = vec![0u8; len];
        self.proc.slots.read(o, &mut w);
        uc::fp_regset(&w).ok_or_else(|| io::Error::other("no FP state in the frame"))
    }

    /// Sets the guest's FP/SIMD registers.
    pub fn set_fpregs(&self, b: &[u8]) -> io::Result<()> {
        let (o, len) = self.fp_off()?;
        let mut w = vec![0u8; len];
        self.proc.slots.read(o, &mut w);
        if !uc::set_fp_regset(&mut w, b) {
            return Err(io::Error::other("bad FP image"));
        }
        self.proc.slots.write(o, &w);
        Ok(())
    }

    /// Hands the thread over with `cmd` after `ops` and waits for it to come back; returns the
    /// reason. A failed op that `ignorable` accepts is skipped and the rest run.
    fn run(
        &mut self,
        ops: &[(u64, [u64; 6])],
        cmd: u64,
        ignorable: &dyn Fn(usize, i64) -> bool,
    ) -> io::Result<u64> {
        let mut done = 0;
        loop {
            let chunk = (ops.len() - done).min(layout::SLOT_MAX_OPS);
            let last = done + chunk == ops.len();
            for (i, (n, a)) in ops[done..done + chunk].iter().enumerate() {
                let off = layout::SLOT_OPS + i * layout::OP_SIZE;
                self.store(off, *n);
                for (j, v) in a.iter().enumerate() {
                    self.store(off + 8 + j * 8, *v);
                }
            }
            self.store(layout::SLOT_COUNT, chunk as u64);
            self.store(
                layout::SLOT_CMD,
                if last { cmd } else { layout::CMD_OPS_ONLY },
            );
            if last && cmd == layout::CMD_RESUME {
                self.put_frame()?;
                self.hand_to_guest()?;
            } else {
                self.hand_to_stub();
            }
            if last && cmd == layout::CMD_EXIT {
                return Ok(layout::REASON_DONE);
            }
            self.wait_for_stub()?;
            match self.load(layout::SLOT_REASON) {
                layout::REASON_OP_FAILED => {
                    let i = self.load(layout::SLOT_FAILED) as usize;
                    let res = self.load(layout::SLOT_OPS + i * layout::OP_SIZE + layout::RESULT_OFF)
                        as i64;
                    if i >= chunk || !ignorable(done + i, res) {
                        return Err(io::Error::other(format!(
                            "host call {:?} in the stub failed: {}",
                            ops.get(done + i),
                            io::Error::from_raw_os_error(-res as i32)
                        )));
                    }
                    // Skip it; the rest of the chunk and the command are still to do.
                    let rest: Vec<(u64, [u64; 6])> = ops[done + i + 1..].to_vec();
                    return self.run(&rest, cmd, &|j, r| ignorable(done + i + 1 + j, r));
                }
                layout::REASON_DONE if !last => done += chunk,
                reason => return Ok(reason),
            }
        }
    }

    /// Makes `ops` in the host now ([`super::GuestThread::apply_now`]): the mapper runs them
    /// and this thread waits until its eventfd says so, the guest thread staying with the
    /// kernel (a fork: the child must not run before the parent's pages are write-protected).
    pub fn apply_now(&mut self, ops: &[HostOp], gather: Gather) -> io::Result<()> {
        self.proc.map_ops(ops, gather)
    }

    /// Queues `ops` for the mapper ([`super::GuestThread::queue_now`]) without waiting: the
    /// caller holds the mm lock, so batches reach the mapper's ring, which is first in first
    /// out, in the mm's order; this thread's guest runs only after them (`hand_to_guest`).
    pub fn queue_now(&mut self, ops: &[HostOp], gather: Gather) -> io::Result<()> {
        self.proc.queue(ops, gather)
    }

    /// This thread's stub process, for [`super::HostMapper`].
    pub(crate) fn mapper(&self) -> std::sync::Weak<SeccompProcess> {
        Arc::downgrade(&self.proc)
    }

    /// Replays `ops`, then runs the guest until the next event.
    pub fn switch(&mut self, ops: &[HostOp], interrupted: impl Fn() -> bool) -> io::Result<Event> {
        // Address-space changes go to the mapper (the application threads may not make them);
        // the guest is handed back after them (`hand_to_guest`).
        self.proc.queue(ops, Gather::empty())?;
        let mut calls: Vec<(u64, [u64; 6])> = Vec::new();
        // The guest's TLS register: arm64 keeps it in the slot (the handler restores it);
        // x86_64 sets the FS base with an op when it changed.
        let tls = self.regs.tls();
        if arch::TLS_IN_SLOT {
            self.store(layout::SLOT_TLS, tls);
        } else if self.host_tls != Some(tls) {
            if let Some(c) = crate::arch::set_tls_call(tls) {
                calls.push(c);
            }
            self.host_tls = Some(tls);
        }
        self.tsc_hold = false;
        if let Some(c) = self.tsc.sync_call() {
            self.tsc_hold = !self.tsc.host_off;
            calls.push(c);
        }
        let never = |_: usize, _: i64| false;
        if interrupted() {
            if !calls.is_empty() {
                self.run(&calls, layout::CMD_OPS_ONLY, &never)?;
            }
            return Ok(Event::Interrupted);
        }
        let reason = self.run(&calls, layout::CMD_RESUME, &never)?;
        if reason != layout::REASON_SIGNAL {
            return Err(io::Error::other(format!(
                "stub came back with reason {reason}"
            )));
        }
        // Frames whose unmapping the mapper has acknowledged meanwhile go back now.
        self.proc.reap_gathers()?;
        let signo = self.load(layout::SLOT_SIGNO) as i32;
        let si = self.take_frame()?;
        if arch::TLS_IN_SLOT {
            self.regs.set_tls(self.load(layout::SLOT_TLS));
        }
        let code = i32::from_le_bytes(
            si[uc::SI_CODE..uc::SI_CODE + 4]
                .try_into()
                .unwrap_or([0; 4]),
        );
        let addr = u64::from_le_bytes(
            si[uc::SI_ADDR..uc::SI_ADDR + 8]
                .try_into()
                .unwrap_or([0; 8]),
        );
        match signo {
            libc::SIGSYS => {
                uc::syscall_regs(&self.ucontext, &si, &mut self.regs);
                let si_arch = u32::from_le_bytes(
                    si[uc::SI_ARCH..uc::SI_ARCH + 4]
                        .try_into()
                        .unwrap_or([0; 4]),
                );
                if si_arch != native_audit_arch() {
                    // x86_64's `int $0x80`: no IA32 emulation here, a #GP as on Linux built
                    // without it (crate::arch::foreign_syscall_fault).
                    crate::arch::foreign_syscall_fault(&mut self.regs);
                    return Ok(Event::Signal {
                        signo: libc::SIGSEGV,
                        addr: 0,
                        code: 0x80,
                    });
                }
                Ok(Event::Syscall)
            }
            libc::SIGSEGV | libc::SIGILL | libc::SIGFPE | libc::SIGBUS | libc::SIGTRAP => {
                uc::load_regs(&self.ucontext, &mut self.regs);
                if signo == libc::SIGSEGV && code > 0 && code != 0x80 {
                    // Resolving it will almost always queue a host mapping: wake a parked
                    // mapper now, so that its wakeup overlaps the fault's handling.
                    self.proc.prewake();
                    return Ok(Event::Fault {
                        addr,
                        not_present: code == 1,
                        write: uc::fault_was_write(&self.ucontext),
                    });
                }
                Ok(Event::Signal { signo, addr, code })
            }
            _ => {
                uc::load_regs(&self.ucontext, &mut self.regs);
                Ok(Event::Interrupted)
            }
        }
    }

    /// Creates a host thread in this thread's stub process for a new guest thread; returns its
    /// host tid and what its serving thread attaches with.
    pub fn spawn_thread(&mut self) -> io::Result<(libc::pid_t, SeccompSeed)> {
        let slot = self
            .proc
            .alloc_slot()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EAGAIN))?;
        if self.tsc.host_off {
            // The new host thread inherits a faulting rdtsc: it must not spin either.
            self.proc
                .slots
                .store(self.proc.word(slot, layout::SLOT_SPIN), 0);
        }
        self.store(layout::SLOT_CMD_ARG, self.proc.slot_addr(slot));
        let r = self.run(&[], layout::CMD_CLONE, &|_, _| false);
        let res = self.load(layout::SLOT_CMD_RESULT) as i64;
        match r {
            Ok(layout::REASON_DONE) if res > 0 => Ok((
                res as libc::pid_t,
                SeccompSeed {
                    proc: self.proc.clone(),
                    slot,
                    template: self.template,
                    tsc: self.tsc.inherited(),
                },
            )),
            Ok(_) if res < 0 => {
                self.proc.free_slot(slot);
                Err(io::Error::from_raw_os_error(-res as i32))
            }
            Ok(reason) => {
                self.proc.free_slot(slot);
                Err(io::Error::other(format!(
                    "stub clone came back with reason {reason}"
                )))
            }
            Err(e) => {
                self.proc.free_slot(slot);
                Err(e)
            }
        }
    }

    /// The stub's host pid.
    pub fn pid(&self) -> libc::pid_t {
        self.proc.pid
    }

    /// This thread's host tid.
    pub fn tid(&self) -> libc::pid_t {
        self.tid
    }

    /// Whether other guest threads run in the same stub process.
    pub fn shares_stub(&self) -> bool {
        Arc::strong_count(&self.proc) > 1
    }

    /// The register template of this stub.
    pub fn template(&self) -> &Regs {
        &self.template
    }

    /// Ends this host thread: the whole stub process if no other guest thread uses it, else
    /// just this thread.
    pub fn kill(&mut self) -> io::Result<()> {
        if self.ended {
            return Ok(());
        }
        self.ended = true;
        if self.shares_stub() {
            let _ = self.run(&[], layout::CMD_EXIT, &|_, _| false);
        } else {
            um_os_linux::stub::kill(self.proc.pid);
        }
        Ok(())
    }
}

impl Drop for SeccompThread {
    fn drop(&mut self) {
        let _ = self.kill();
        self.proc.free_slot(self.slot);
    }
}

/// What a new host thread of an existing seccomp stub needs to be served from another kernel
/// thread.
#[derive(Clone)]
pub struct SeccompSeed {
    proc: Arc<SeccompProcess>,
    slot: usize,
    template: Regs,
    /// The TSC mode the new host thread inherited from the thread that cloned it.
    tsc: super::Tsc,
}

impl SeccompSeed {
    /// Takes over the new thread `tid` (waits for its first trap) with guest registers `regs`.
    pub fn attach(&self, tid: libc::pid_t, regs: Regs) -> io::Result<SeccompThread> {
        let mut th = SeccompThread::on_slot(self.proc.clone(), self.slot, tid, regs, self.template);
        th.tsc = self.tsc;
        th.first_handoff()?;
        th.regs = regs;
        Ok(th)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn audit_arch() -> u32 {
        u32::from(crate::arch::ELF_MACHINE) | 0x8000_0000 | 0x4000_0000
    }

    /// The application threads' filter: from the stub page only the harmless calls with their
    /// checked arguments; nothing that maps memory or touches a descriptor (issue 21).
    #[test]
    fn app_filter_allows_only_the_handoff_calls() {
        let base = 0x7f80_0000_0000u64;
        let f = layout::stub_filter(audit_arch(), base, 0x1000, &app_rules(base));
        let ip = base + 0x40;
        let run = |name: &str, args: [u64; 6]| {
            layout::run_filter(&f, nr(name) as u32, audit_arch(), ip, args)
        };
        let slot = base + layout::SLOTS_OFFSET + 0x10000;
        assert_eq!(run("futex", [slot, 0, 0, 0, 0, 0]), layout::RET_ALLOW);
        assert_eq!(run("futex", [slot, 1, 1, 0, 0, 0]), layout::RET_ALLOW);
        // Not the data area (the mapper's words), not a requeue.
        let data = base + layout::DATA_OFFSET + layout::MAPQ_TAIL as u64;
        assert_eq!(
            run("futex", [data, 1, 1, 0, 0, 0]),
            layout::RET_KILL_PROCESS
        );
        assert_eq!(
            run("futex", [slot, 3, 1, 0, 0, 0]),
            layout::RET_KILL_PROCESS
        );
        let fixed = (libc::MAP_SHARED | libc::MAP_FIXED) as u64;
        for (name, args) in [
            ("mmap", [0x1000_0000, 0x1000, 3, fixed, 3, 0]),
            ("munmap", [base, 0x1000, 0, 0, 0, 0]),
            ("mprotect", [base + layout::DATA_OFFSET, 0x1000, 3, 0, 0, 0]),
            ("write", [u64::from(layout::ACK_FD), data, 8, 0, 0, 0]),
            ("close", [3, 0, 0, 0, 0, 0]),
            ("exit_group", [0; 6]),
            ("kill", [1, 9, 0, 0, 0, 0]),
        ] {
            assert_eq!(run(name, args), layout::RET_KILL_PROCESS, "{name}");
        }
        // A fork (no CLONE_VM) is not the stub's thread clone.
        assert_eq!(
            run("clone", [libc::SIGCHLD as u64, 0, 0, 0, 0, 0]),
            layout::RET_KILL_PROCESS
        );
        assert_eq!(
            run("clone", [arch::CLONE_THREAD_FLAGS, 0, 0, 0, 0, 0]),
            layout::RET_ALLOW
        );
        // From the guest's own code: a trap, whatever the call.
        let g = layout::run_filter(&f, nr("mmap") as u32, audit_arch(), 0x40_0000, [0; 6]);
        assert_eq!(g, layout::RET_TRAP);
    }

    /// The mapper's filter: physical memory only through fd 3, shared and fixed; the eventfd
    /// write only to its fd; exit_group for a failed call.
    #[test]
    fn mapper_filter_allows_only_its_calls() {
        let base = 0x7f80_0000_0000u64;
        let f = layout::mapper_filter(audit_arch(), base, 0x1000, &mapper_rules());
        let run = |name: &str, args: [u64; 6]| {
            layout::run_filter(&f, nr(name) as u32, audit_arch(), base + 0x80, args)
        };
        let fixed = (libc::MAP_SHARED | libc::MAP_FIXED) as u64;
        assert_eq!(
            run("mmap", [0x1000, 0x1000, 3, fixed, 3, 0]),
            layout::RET_ALLOW
        );
        assert_eq!(
            run(
                "mmap",
                [0x1000, 0x1000, 3, fixed, u64::from(layout::ACK_FD), 0]
            ),
            layout::RET_KILL_PROCESS
        );
        let private = (libc::MAP_PRIVATE | libc::MAP_FIXED) as u64;
        assert_eq!(
            run("mmap", [0x1000, 0x1000, 3, private, 3, 0]),
            layout::RET_KILL_PROCESS
        );
        assert_eq!(
            run("write", [u64::from(layout::ACK_FD), 0, 8, 0, 0, 0]),
            layout::RET_ALLOW
        );
        assert_eq!(run("write", [1, 0, 8, 0, 0, 0]), layout::RET_KILL_PROCESS);
        assert_eq!(run("exit_group", [1, 0, 0, 0, 0, 0]), layout::RET_ALLOW);
        assert_eq!(run("clone", [0; 6]), layout::RET_KILL_PROCESS);
        // Outside the stub page, even its own calls kill.
        let out = layout::run_filter(&f, nr("munmap") as u32, audit_arch(), 0x40_0000, [0; 6]);
        assert_eq!(out, layout::RET_KILL_PROCESS);
    }

    #[test]
    fn handoff_word_with_held_is_not_the_kernels() {
        assert!(kernel_owns(layout::OWNER_KERNEL));
        assert!(kernel_owns(layout::OWNER_KERNEL | layout::WAITER));
        assert!(!kernel_owns(layout::OWNER_KERNEL | layout::HELD));
        assert!(!kernel_owns(
            layout::OWNER_KERNEL | layout::HELD | layout::WAITER
        ));
        assert!(!kernel_owns(0));
    }

    /// The mapper's doorbell, step by step in the interleavings that hung guest/forkstress:
    /// the mapper drains the ring and parks (MAP_SLEEP, then the tail once more, then its
    /// FUTEX_WAIT on the tail it drained). A publish's look at MAP_SLEEP that comes after
    /// that (late, for entries the mapper already ran), and a publish with nothing new, must
    /// leave the word set, so that the publish of the next entry (a thread's handback) wakes
    /// the sleeping mapper.
    #[test]
    fn the_kernel_never_clears_a_parked_mappers_doorbell() {
        let data = SharedPages::new(layout::DATA_SIZE as usize).unwrap();
        let sleep = || data.atomic32(layout::MAP_SLEEP).load(Ordering::SeqCst);
        let park = || data.atomic32(layout::MAP_SLEEP).store(1, Ordering::SeqCst);
        let mut q = MapQueue {
            tail: 5,
            ..MapQueue::default()
        };
        // A batch while the mapper runs: no wake call (it will see the tail).
        assert!(!publish_tail(&data, &mut q));
        assert_eq!(data.load(layout::MAPQ_TAIL), 5);
        // The next batch's tail is stored; before the kernel looks at MAP_SLEEP the mapper
        // runs it and parks on the tail it ran.
        q.tail = 9;
        data.store(layout::MAPQ_TAIL, q.tail);
        q.published = q.tail;
        park();
        let drained = 9;
        // The late look: a wake call for nothing (the mapper is not asleep yet), the word kept.
        assert!(wake_if_parked(&data));
        assert_eq!(sleep(), 1, "the kernel cleared the doorbell");
        // The same tail published again (waiting for an acknowledgement): nothing at all.
        assert!(!publish_tail(&data, &mut q));
        assert_eq!(sleep(), 1, "a publish of no new entry cleared the doorbell");
        // The mapper's FUTEX_WAIT compares the tail with what it ran: equal, it sleeps.
        assert_eq!(data.load(layout::MAPQ_TAIL), drained);
        // A handback is queued: its publish must see the sleeper and wake it.
        q.tail += 1;
        assert!(
            publish_tail(&data, &mut q),
            "the sleeping mapper was not woken"
        );
        assert_eq!(data.load(layout::MAPQ_TAIL), 10);
    }
}
