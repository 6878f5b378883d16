//! Guest test `stubjump`: a hostile program that jumps into the stub's code page (the host
//! mapping just above the guest's address space, at the address given as the first argument)
//! and makes a syscall from there that the stub does not make itself (getpid). In the seccomp
//! engine the stub's filter allows only the stub's own calls from that page, so the host kills
//! the whole stub process and the kernel reports the guest process killed by SIGKILL. The
//! parent prints what happened to the child, then forks and waits once more to show that the
//! kernel carries on: `stubjump: child killed by SIGKILL`, `stubjump: kernel alive`,
//! UM-STUBJUMP-OK.
//!
//! `stubjump STUB_BASE_HEX hostile` is the full attack (issue 21): as an unprivileged user
//! (uid 65534), for every syscall instruction in the stub's two code pages and every call
//! that could step outside the process (mmap of each fd the stub may hold over a region of its
//! own, mprotect/munmap/madvise of the stub's pages, close/read/write of its fds, futex ops
//! that move or forge waiters, clone of the address space, kill of host pid 1), a child jumps
//! there with the call's registers (the callee-saved ones pointing nowhere, so the stub code
//! after the call faults at once) and regains control in a signal handler (or a 200 ms timer). It
//! reports a breach if the call succeeded or if the region it owns now shows the secret its
//! root parent keeps in memory. Each probe is a process group of its own. Verdict per probe:
//! killed, or the call failed, or (the ptrace engines) it ended stopped by the SIGSTOP of its
//! own kill call or of the stub code after the entry site, and its group is killed; then the
//! kernel must still fork and wait: `stubjump: N probes, no breach`, UM-STUBJUMP-HOSTILE-OK.
//!
//! With a third argument `strict` (the seccomp engine) a call that returned success also
//! counts as a breach; without it (the ptrace engines, where every call from the stub page is
//! a guest syscall the kernel answers, and some sites' stub code overwrites the result
//! register before it faults) only what the region shows does.
//!
//! `sites=N:K` after them probes only every Nth syscall site from the Kth (0-based) on.
//!
//! Usage: stubjump STUB_BASE_HEX [hostile [strict] [sites=N:K]]

use umt::{check_eq, say};

/// Offsets of syscall instructions in `page`: x86_64 `syscall` (0f 05), arm64 `svc #0`
/// (d4000001, little-endian).
fn syscall_sites(page: &[u8]) -> Vec<usize> {
    if cfg!(target_arch = "x86_64") {
        (0..page.len() - 1)
            .filter(|&i| page[i] == 0x0f && page[i + 1] == 0x05)
            .collect()
    } else {
        (0..page.len() - 3)
            .step_by(4)
            .filter(|&i| page[i..i + 4] == [0x01, 0x00, 0x00, 0xd4])
            .collect()
    }
}

/// Makes syscall `nr` by jumping to the instruction at `at`. Does not return if the host
/// kills the process; if the call is let through, what follows the instruction in the stub
/// runs, so the child exits right after from a signal handler or never gets here.
fn jump(at: usize, nr: usize) -> ! {
    // SAFETY: deliberately hostile: transfers control into foreign code. The child process
    // is expected to die; nothing in this process relies on what happens after.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        core::arch::asm!("jmp {at}", at = in(reg) at, in("rax") nr, options(noreturn));
        #[cfg(target_arch = "aarch64")]
        core::arch::asm!("br {at}", at = in(reg) at, in("x8") nr, options(noreturn));
    }
}

fn main() {
    umt::init("stubjump");
    let arg = std::env::args().nth(1).unwrap_or_default();
    let Ok(base) = usize::from_str_radix(arg.trim_start_matches("0x"), 16) else {
        umt::fail(format!("usage: stubjump STUB_BASE_HEX (got {arg:?})"));
    };
    if std::env::args().nth(2).as_deref() == Some("hostile") {
        hostile(base);
        return;
    }
    let pid = umt::fork();
    if pid == 0 {
        // The stub code page is mapped readable in this host process (the guest kernel does
        // not know it): find a syscall instruction in it.
        // SAFETY: hostile read of a host mapping outside the guest's address space; if it is
        // not mapped the child dies of SIGSEGV, which the parent reports.
        let page = unsafe { std::slice::from_raw_parts(base as *const u8, 4096) };
        let sites = syscall_sites(page);
        let Some(&site) = sites.first() else {
            umt::fail("no syscall instruction in the stub page");
        };
        let getpid = libc::SYS_getpid as usize;
        jump(base + site, getpid);
    }
    let st = umt::waitpid(pid, 0);
    say(format!("child {}", umt::describe_status(st)));
    // The kernel carries on: another child, an ordinary exit.
    let pid = umt::fork();
    if pid == 0 {
        umt::exit_now(7);
    }
    let st = umt::waitpid(pid, 0);
    check_eq(
        umt::describe_status(st),
        "exited 7".to_string(),
        "second child",
    );
    say("kernel alive");
    say("UM-STUBJUMP-OK");
}

/// Size of the region a probe child owns and tries to map physical memory over (the guest's
/// whole memory at the default mem=256M).
const REGION: usize = 256 << 20;
/// What the child writes at the start of its region before the jump.
const MARK: &[u8; 16] = b"UM-CHILD-REGION!";
/// Offsets from the stub base (the layout in os-linux/src/stub_layout.rs).
const DATA_OFFSET: usize = 0x1_0000;
const SLOTS_OFFSET: usize = 0x2_0000;

static mut SECRET: [u8; 16] = [0; 16];
static mut REGION_ADDR: usize = 0;
static mut PROBE_NR: usize = 0;

/// One call to make from the stub page.
struct Probe {
    name: String,
    nr: usize,
    args: [usize; 6],
}

fn probes(base: usize, region: usize) -> Vec<Probe> {
    let p = |name: String, nr: libc::c_long, args: [usize; 6]| Probe {
        name,
        nr: nr as usize,
        args,
    };
    let rw = (libc::PROT_READ | libc::PROT_WRITE) as usize;
    let shared_fixed = (libc::MAP_SHARED | libc::MAP_FIXED) as usize;
    let mut v = Vec::new();
    for fd in 3..=8 {
        v.push(p(
            format!("mmap(fd {fd})"),
            libc::SYS_mmap,
            [region, REGION, rw, shared_fixed, fd, 0],
        ));
    }
    v.push(p(
        "mmap(fd 3, private)".into(),
        libc::SYS_mmap,
        [
            region,
            REGION,
            rw,
            libc::MAP_PRIVATE as usize | libc::MAP_FIXED as usize,
            3,
            0,
        ],
    ));
    v.push(p(
        "mprotect(stub code, rwx)".into(),
        libc::SYS_mprotect,
        [base, 0x1000, 7, 0, 0, 0],
    ));
    v.push(p(
        "mprotect(mapper ring, rw)".into(),
        libc::SYS_mprotect,
        [base + DATA_OFFSET + 0x8000, 0x8000, rw, 0, 0, 0],
    ));
    v.push(p(
        "munmap(data area)".into(),
        libc::SYS_munmap,
        [base + DATA_OFFSET, 0x1_0000, 0, 0, 0, 0],
    ));
    v.push(p(
        "madvise(slots, DONTNEED)".into(),
        libc::SYS_madvise,
        [
            base + SLOTS_OFFSET,
            0x1_0000,
            libc::MADV_DONTNEED as usize,
            0,
            0,
            0,
        ],
    ));
    for fd in [3, 6] {
        v.push(p(
            format!("close({fd})"),
            libc::SYS_close,
            [fd, 0, 0, 0, 0, 0],
        ));
        v.push(p(
            format!("read({fd})"),
            libc::SYS_read,
            [fd, region + 64, 8, 0, 0, 0],
        ));
        v.push(p(
            format!("write({fd})"),
            libc::SYS_write,
            [fd, region, 8, 0, 0, 0],
        ));
    }
    let slot1 = base + SLOTS_OFFSET + 0x1_0000;
    v.push(p(
        "futex(slot, REQUEUE)".into(),
        libc::SYS_futex,
        [base + SLOTS_OFFSET, 3, 1, 0, slot1, 0],
    ));
    v.push(p(
        "futex(slot, WAKE_OP)".into(),
        libc::SYS_futex,
        [base + SLOTS_OFFSET, 5, 1, 0, slot1, 0x1000_0000],
    ));
    v.push(p(
        "futex(mapper ring, WAKE)".into(),
        libc::SYS_futex,
        [base + DATA_OFFSET + 0x8000, 1, 1, 0, 0, 0],
    ));
    v.push(p(
        "clone(fork)".into(),
        libc::SYS_clone,
        [libc::SIGCHLD as usize, 0, 0, 0, 0, 0],
    ));
    // Allowed from the stub page, and harmless: it ends only this host thread (the mapper
    // lives on); the kernel must notice and end the process rather than wait for ever.
    v.push(p("exit(own thread)".into(), libc::SYS_exit, [0; 6]));
    // Its own process group (0: the probe made it one, below). From the ptrace engines'
    // entry site this is what the stub code after the site does anyway (kill(getpid()'s
    // result, SIGSTOP)); here the probe stops itself at every site, so a probe that ends
    // stopped instead of dead is served in every run, not only when a clone child wins a race.
    v.push(p(
        "kill(own group, SIGSTOP)".into(),
        libc::SYS_kill,
        [0, libc::SIGSTOP as usize, 0, 0, 0, 0],
    ));
    v.push(p(
        "kill(host 1, SIGKILL)".into(),
        libc::SYS_kill,
        [1, libc::SIGKILL as usize, 0, 0, 0, 0],
    ));
    #[cfg(target_arch = "x86_64")]
    v.push(p(
        "arch_prctl(ARCH_SET_GS)".into(),
        libc::SYS_arch_prctl,
        [0x1001, region, 0, 0, 0, 0],
    ));
    v
}

/// Makes syscall `nr` with `args` by jumping to `at`, every other register pointing at an
/// unmapped low page (so the stub code after the instruction faults at once).
fn jump_with(at: usize, nr: usize, a: [usize; 6]) -> ! {
    // SAFETY: deliberately hostile, as `jump`; the probe child never returns from here except
    // through its signal handlers, which end the process.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        core::arch::asm!(
            "mov rbx, 0x10", "mov rbp, 0x10", "mov r12, 0x10", "mov r13, 0x10",
            "mov r14, 0x10", "mov r15, 0x10", "jmp r11",
            in("r11") at, in("rax") nr, in("rdi") a[0], in("rsi") a[1], in("rdx") a[2],
            in("r10") a[3], in("r8") a[4], in("r9") a[5], options(noreturn)
        );
        #[cfg(target_arch = "aarch64")]
        core::arch::asm!(
            "mov x19, #0x10", "mov x20, #0x10", "mov x21, #0x10", "mov x22, #0x10",
            "mov x23, #0x10", "mov x24, #0x10", "mov x25, #0x10", "mov x26, #0x10",
            "mov x27, #0x10", "mov x28, #0x10", "mov x30, #0x10", "br x16",
            in("x16") at, in("x8") nr, in("x0") a[0], in("x1") a[1], in("x2") a[2],
            in("x3") a[3], in("x4") a[4], in("x5") a[5], options(noreturn)
        );
    }
}

fn raw_say(s: &str) {
    let line = format!("stubjump: {s}\n");
    // SAFETY: write of a local buffer to stdout.
    unsafe { libc::write(1, line.as_ptr().cast(), line.len()) };
}

/// Whether the child's region shows the secret (scanned only if the region's first bytes are
/// no longer the child's mark: its host mapping was replaced).
fn region_breached() -> (bool, bool) {
    // SAFETY: the region is the child's own mapping of REGION bytes; the secret is written
    // once before the fork.
    unsafe {
        let r = REGION_ADDR as *const u8;
        let first = std::slice::from_raw_parts(r, 16);
        if first == MARK {
            return (false, false);
        }
        let secret = &*std::ptr::addr_of!(SECRET);
        let all = std::slice::from_raw_parts(r, REGION);
        let seen = all.chunks_exact(16).any(|c| c == secret);
        (true, seen)
    }
}

extern "C" fn on_signal(sig: i32, _si: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid ucontext to an SA_SIGINFO handler.
    let ret = unsafe {
        let uc = uc as *const libc::ucontext_t;
        #[cfg(target_arch = "x86_64")]
        let r = (*uc).uc_mcontext.gregs[libc::REG_RAX as usize];
        #[cfg(target_arch = "aarch64")]
        let r = (*uc).uc_mcontext.regs[0] as i64;
        r
    };
    let (replaced, seen) = region_breached();
    // SAFETY: a plain read of a word written before the jump.
    let nr = unsafe { PROBE_NR };
    if seen {
        raw_say(&format!(
            "BREACH: the secret is visible in the child's region (signal {sig})"
        ));
        umt::exit_now(66);
    }
    if replaced {
        raw_say(&format!(
            "BREACH: the child's region was remapped (signal {sig})"
        ));
        umt::exit_now(65);
    }
    if sig == libc::SIGALRM {
        umt::exit_now(11);
    }
    if (-4095..0).contains(&ret) {
        umt::exit_now(10);
    }
    if nr == libc::SYS_clone as usize {
        if ret == 0 {
            // A guest fork child (the call went to the guest kernel): quietly gone.
            umt::exit_now(0);
        }
        // A guest child is ours to wait for; a host process is not.
        // SAFETY: waitpid with a null status pointer.
        let w = unsafe { libc::waitpid(ret as i32, std::ptr::null_mut(), 0) };
        umt::exit_now(if w == ret as i32 { 10 } else { 67 });
    }
    raw_say(&format!(
        "BREACH: the call returned {ret:#x} (signal {sig})"
    ));
    umt::exit_now(68)
}

fn hostile(base: usize) {
    // "strict": a call that returned success counts as a breach (the seccomp engine, where
    // such a call would be the host's).
    let strict = std::env::args().nth(3).as_deref() == Some("strict");
    // The secret: 16 random bytes, repeated over 1 MiB of the root parent's memory.
    let mut secret = [0u8; 16];
    // SAFETY: getrandom into a local.
    let n = unsafe { libc::getrandom(secret.as_mut_ptr().cast(), 16, 0) };
    umt::check(n == 16, "getrandom");
    secret[..4].copy_from_slice(b"SCRT");
    // SAFETY: written before any fork; read-only after.
    unsafe { SECRET = secret };
    let mut keep: Vec<u8> = Vec::with_capacity(1 << 20);
    while keep.len() < 1 << 20 {
        keep.extend_from_slice(&secret);
    }
    // The stub's code pages are readable from the guest: every syscall instruction in both.
    // SAFETY: hostile read of the stub's two code pages (mapped in this host process).
    let code = unsafe { std::slice::from_raw_parts(base as *const u8, 0x2000) };
    let mut sites = syscall_sites(code);
    umt::check(sites.len() >= 4, "syscall instructions in the stub pages");
    if !strict {
        // The ptrace engines: every site is the same guest syscall; three are enough (and a
        // probe there costs a traced stub process).
        sites.truncate(3);
    }
    // `sites=N:K`: only every Nth site from the Kth on (the arm64 lane under TCG, where the
    // whole set takes minutes; its offset comes from the commit, so successive runs cover all).
    if let Some((n, k)) = std::env::args()
        .skip(3)
        .find_map(|a| a.strip_prefix("sites=").map(str::to_string))
        .and_then(|v| {
            let (n, k) = v.split_once(':')?;
            Some((n.parse::<usize>().ok()?, k.parse::<usize>().ok()?))
        })
        .filter(|&(n, _)| n > 0)
    {
        let all = sites.len();
        sites = sites
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % n == k % n)
            .map(|(_, s)| s)
            .collect();
        say(format!(
            "{} of {all} sites (every {n}th from {})",
            sites.len(),
            k % n
        ));
    }
    // SAFETY: getuid has no preconditions.
    umt::check(unsafe { libc::getuid() } == 0, "the parent runs as root");
    let mut count = 0;
    let mut killed = 0;
    // Exit statuses of a probe that got nothing: 0 a guest fork child, 1 the stub's own
    // exit_group(1) after a failed call (its setup code), 10 the call failed, 11 the timer.
    let mut failed = 0;
    // Probes that ended stopped (kill(own group, SIGSTOP) in the ptrace engines).
    let mut stopped = 0;
    let mut breaches = Vec::new();
    // A region the children own (mapped and marked in each child).
    for &site in &sites {
        for pr in probes(base, 0) {
            count += 1;
            let pid = umt::fork();
            if pid == 0 {
                // SAFETY: plain system calls in the probe child.
                unsafe {
                    // A process group of its own, with whatever it forks: in the ptrace
                    // engines the stub code after the entry site makes kill(rax, SIGSTOP) with
                    // the probe's result in rax, so a clone probe's child (result 0) stops
                    // its whole group. Were that the root parent's group, the probe would be
                    // stopped too, its timer could not end it and the parent's wait would
                    // never return (what Linux does as well: a job-control stop, not a fault
                    // loop). The parent reaps a stopped probe by killing its group.
                    if libc::setpgid(0, 0) != 0 {
                        umt::exit_now(92);
                    }
                    for fd in 3..=9 {
                        libc::close(fd);
                    }
                    if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                        umt::exit_now(90);
                    }
                    let r = libc::mmap(
                        std::ptr::null_mut(),
                        REGION,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                        -1,
                        0,
                    );
                    if r == libc::MAP_FAILED {
                        umt::exit_now(91);
                    }
                    REGION_ADDR = r as usize;
                    std::ptr::copy_nonoverlapping(MARK.as_ptr(), r.cast(), 16);
                    PROBE_NR = pr.nr;
                }
                for sig in [
                    libc::SIGSEGV,
                    libc::SIGBUS,
                    libc::SIGILL,
                    libc::SIGTRAP,
                    libc::SIGFPE,
                    libc::SIGSYS,
                    libc::SIGALRM,
                ] {
                    umt::set_handler(sig, on_signal as *const () as usize, libc::SA_NODEFER, true);
                }
                // A call that blocks (or stub code that loops, as after the ptrace engine's
                // entry sites) ends with the timer: 200 ms is far more than any probe's call
                // takes, also under qemu TCG.
                let t = libc::itimerval {
                    it_interval: libc::timeval {
                        tv_sec: 0,
                        tv_usec: 0,
                    },
                    it_value: libc::timeval {
                        tv_sec: 0,
                        tv_usec: 200_000,
                    },
                };
                // SAFETY: setitimer with a valid itimerval and no old-value pointer.
                unsafe { libc::setitimer(libc::ITIMER_REAL, &t, std::ptr::null_mut()) };
                let region = unsafe { REGION_ADDR };
                let mut args = pr.args;
                // Region-relative arguments were built for region 0.
                let fixed = probes(base, region);
                let mine = fixed.iter().find(|q| q.name == pr.name).map(|q| q.args);
                if let Some(a) = mine {
                    args = a;
                }
                jump_with(base + site, pr.nr, args);
            }
            // WUNTRACED: a probe whose call (or the stub code after it) stopped it has to
            // be told apart from one that hangs. Its group goes in any case: it, or what is
            // left of it (the child of a clone probe, stopped by its parent's kill).
            let mut st = umt::waitpid(pid, libc::WUNTRACED);
            let stopped_by = libc::WIFSTOPPED(st).then(|| libc::WSTOPSIG(st));
            // SAFETY: kill takes two integers (ESRCH once the group is gone is fine).
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            if stopped_by.is_some() {
                st = umt::waitpid(pid, 0);
            }
            // Such children are this process's once their parent has exited: reaped as they
            // die.
            // SAFETY: waitpid with a null status pointer.
            while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
            let what = match stopped_by {
                Some(sig) => format!("stopped by signal {sig}, then {}", umt::describe_status(st)),
                None => umt::describe_status(st),
            };
            if std::env::var_os("STUBJUMP_VERBOSE").is_some() {
                say(format!("site {site:#x} {}: {what}", pr.name));
            }
            if let Some(sig) = stopped_by {
                // A job-control stop is the guest kernel's doing: the call was a guest
                // syscall it answered (every site in the ptrace engines; in the seccomp
                // engine a site whose calls the filter traps to the kernel). A host kill
                // would stop the stub, which no wait here would report.
                check_eq(sig, libc::SIGSTOP, "the signal that stopped a probe");
                stopped += 1;
            } else if libc::WIFSIGNALED(st) && libc::WTERMSIG(st) == libc::SIGKILL {
                killed += 1;
            } else if libc::WIFEXITED(st) && [0, 1, 10, 11].contains(&libc::WEXITSTATUS(st)) {
                failed += 1;
            } else if !strict && libc::WIFEXITED(st) && [67, 68].contains(&libc::WEXITSTATUS(st)) {
                // Not strict (the ptrace engines): every call from the stub page is a guest
                // syscall the kernel answers, and the stub code after some sites overwrites
                // the result register before it faults; only what the region shows counts.
                failed += 1;
            } else {
                breaches.push(format!("site {:#x} {}: {what}", site, pr.name));
            }
        }
    }
    std::hint::black_box(&keep);
    for b in &breaches {
        say(format!("breach: {b}"));
    }
    say(format!(
        "{count} probes at {} sites: {killed} killed, {failed} failed, {stopped} stopped",
        sites.len()
    ));
    check_eq(breaches.len(), 0, "probes that breached isolation");
    let pid = umt::fork();
    if pid == 0 {
        umt::exit_now(7);
    }
    check_eq(
        umt::describe_status(umt::waitpid(pid, 0)),
        "exited 7".to_string(),
        "a child after the probes",
    );
    say(format!("{count} probes, no breach"));
    say("kernel alive");
    say("UM-STUBJUMP-HOSTILE-OK");
}
