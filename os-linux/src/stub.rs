//! Stub processes: the host processes that hold guest address spaces.
//!
//! A stub is started by exec'ing a tiny static executable that the kernel generates at boot
//! ([`build_stub_elf`]: one `PT_LOAD` of the arch crate's position-independent stub code at the
//! stub address, nothing else) from a memfd ([`StubImage`]), or from a file where exec of a
//! memfd is refused (`stub_exe=PATH`, as on Android). After exec the stub's address space holds
//! only that code page, the host stack and the vDSO; the stub code stops itself and the engine
//! takes over and removes the rest.
//!
//! All stubs are started (`clone(CLONE_VM|CLONE_VFORK)` and exec, as posix_spawn does) by
//! one long-lived *spawner* thread ([`spawn`]) so that
//! `PR_SET_PDEATHSIG`, which fires when the parent *thread* exits, fires only when the kernel
//! process dies: then no stub outlives `linux`, however it ends.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Mutex;
use std::sync::mpsc;

use crate::shared::SharedPages;

/// Builds a minimal static ELF executable: one read+execute `PT_LOAD` holding `code` at
/// `load_addr`, entry at `load_addr + entry_off`. (Layout: ELF header, one program header, code
/// at file offset 0x1000 so offset and address agree modulo any page size up to 4K; callers
/// place `load_addr` on a 64K boundary.)
pub fn build_stub_elf(machine: u16, code: &[u8], load_addr: u64, entry_off: u64) -> Vec<u8> {
    const CODE_OFF: u64 = 0x1000;
    let mut f = vec![0u8; CODE_OFF as usize];
    // e_ident: magic, ELFCLASS64, ELFDATA2LSB, EV_CURRENT, ELFOSABI_NONE.
    f[..8].copy_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0]);
    let put16 = |f: &mut Vec<u8>, o: usize, v: u16| f[o..o + 2].copy_from_slice(&v.to_le_bytes());
    let put32 = |f: &mut Vec<u8>, o: usize, v: u32| f[o..o + 4].copy_from_slice(&v.to_le_bytes());
    let put64 = |f: &mut Vec<u8>, o: usize, v: u64| f[o..o + 8].copy_from_slice(&v.to_le_bytes());
    put16(&mut f, 16, 2); // e_type = ET_EXEC
    put16(&mut f, 18, machine);
    put32(&mut f, 20, 1); // e_version
    put64(&mut f, 24, load_addr + entry_off); // e_entry
    put64(&mut f, 32, 64); // e_phoff
    put64(&mut f, 40, 0); // e_shoff
    put32(&mut f, 48, 0); // e_flags
    put16(&mut f, 52, 64); // e_ehsize
    put16(&mut f, 54, 56); // e_phentsize
    put16(&mut f, 56, 1); // e_phnum
    put16(&mut f, 58, 64); // e_shentsize
    put16(&mut f, 60, 0); // e_shnum
    put16(&mut f, 62, 0); // e_shstrndx
    let ph = 64;
    put32(&mut f, ph, 1); // p_type = PT_LOAD
    put32(&mut f, ph + 4, 5); // p_flags = PF_R | PF_X
    put64(&mut f, ph + 8, CODE_OFF); // p_offset
    put64(&mut f, ph + 16, load_addr); // p_vaddr
    put64(&mut f, ph + 24, load_addr); // p_paddr
    put64(&mut f, ph + 32, code.len() as u64); // p_filesz
    put64(&mut f, ph + 40, code.len() as u64); // p_memsz
    put64(&mut f, ph + 48, 0x1000); // p_align
    f.extend_from_slice(code);
    f
}

/// The stub executable, ready to be exec'd: a memfd, or a file written at `stub_exe=PATH`.
pub struct StubImage {
    fd: OwnedFd,
    /// The file it was written to (`stub_exe=`): stubs are then exec'd by path, so a host
    /// that refuses `execveat` (or exec of a memfd) can still run them.
    path: Option<CString>,
}

impl StubImage {
    /// Writes `elf` to a sealed memfd, or to `path` (mode 0700) when given.
    pub fn new(elf: &[u8], path: Option<&std::path::Path>) -> io::Result<StubImage> {
        use std::io::Write;
        let fd: OwnedFd = match path {
            None => {
                // SAFETY: memfd_create with a static NUL-terminated name.
                let raw = unsafe {
                    libc::memfd_create(
                        c"um-stub".as_ptr(),
                        libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
                    )
                };
                if raw < 0 {
                    return Err(io::Error::last_os_error());
                }
                // SAFETY: a fresh fd owned by nobody else.
                let fd = unsafe { OwnedFd::from_raw_fd(raw) };
                let mut file = std::fs::File::from(fd);
                file.write_all(elf)?;
                let fd = OwnedFd::from(file);
                let seals = libc::F_SEAL_SEAL
                    | libc::F_SEAL_SHRINK
                    | libc::F_SEAL_GROW
                    | libc::F_SEAL_WRITE;
                // SAFETY: fcntl on an fd we own.
                unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) };
                fd
            }
            Some(p) => {
                use std::os::unix::fs::OpenOptionsExt;
                let _ = std::fs::remove_file(p);
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o700)
                    .open(p)?;
                file.write_all(elf)?;
                drop(file);
                // Reopen read-only: exec of a file open for writing fails with ETXTBSY.
                let file = std::fs::File::open(p)?;
                OwnedFd::from(file)
            }
        };
        let path = path.and_then(|p| {
            use std::os::unix::ffi::OsStrExt;
            CString::new(p.as_os_str().as_bytes()).ok()
        });
        Ok(StubImage { fd, path })
    }

    fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

struct Request {
    exe: RawFd,
    exe_path: Option<CString>,
    phys: RawFd,
    areas: Vec<usize>,
    setup: Option<SelfSetup>,
    reply: mpsc::Sender<io::Result<Spawned>>,
}

/// A stub that sets itself up instead of stopping for a tracer (the seccomp engine): it is
/// exec'd with a second argument, and its entry code runs the calls the kernel wrote into its
/// first shared area before exec. `init` is what to write there: (offset, bytes) pairs.
#[derive(Clone, PartialEq, Eq)]
pub struct SelfSetup {
    pub init: Vec<(usize, Vec<u8>)>,
    /// Also give the stub a new eventfd, as the descriptor after the areas (the seccomp
    /// engine's mapper acknowledges its work there: `Spawned::ack`).
    pub ack_eventfd: bool,
}

/// A stub process that has stopped itself, ready to be seized, with its shared areas.
pub struct Spawned {
    /// Host pid.
    pub pid: libc::pid_t,
    /// The shared areas, in the order asked for (the stub has them as fds 4, 5, ...; their
    /// descriptors here are already closed).
    pub areas: Vec<SharedPages>,
    /// The kernel's end of the eventfd [`SelfSetup::ack_eventfd`] asked for (non-blocking).
    pub ack: Option<OwnedFd>,
}

static SPAWNER: Mutex<Option<mpsc::Sender<Request>>> = Mutex::new(None);

/// Starts a stub process from `image` with the physical-memory fd `phys` as its descriptor 3
/// and a new shared area of each size in `areas` as 4, 5, ... (nothing else open), in a session
/// of its own, dying with the kernel. Returns once the stub has stopped itself (group-stop) and
/// is ready to be seized by the thread that will serve it; with `setup`, at once (the stub
/// sets itself up: see [`SelfSetup`]).
///
/// The spawner keeps one such stub ready ahead (a *warm spare*, for the last `areas` asked
/// for), so that fork and exec seldom wait for a host fork+exec.
pub fn spawn(
    image: &StubImage,
    phys: BorrowedFd<'_>,
    areas: &[usize],
    setup: Option<&SelfSetup>,
) -> io::Result<Spawned> {
    let tx = {
        let mut g = SPAWNER.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_none() {
            let (tx, rx) = mpsc::channel::<Request>();
            std::thread::Builder::new()
                .name("stub-spawner".into())
                .spawn(move || spawner(rx))?;
            *g = Some(tx);
        }
        g.as_ref()
            .cloned()
            .ok_or_else(|| io::Error::other("no spawner"))?
    };
    let (rtx, rrx) = mpsc::channel();
    tx.send(Request {
        exe: image.raw(),
        exe_path: image.path.clone(),
        phys: phys.as_raw_fd(),
        areas: areas.to_vec(),
        setup: setup.cloned(),
        reply: rtx,
    })
    .map_err(|_| io::Error::other("stub spawner thread is gone"))?;
    rrx.recv()
        .map_err(|_| io::Error::other("stub spawner thread is gone"))?
}

/// The spawner thread: serves requests, from the spare when it fits, and makes the next spare
/// once the requester has its stub.
fn spawner(rx: mpsc::Receiver<Request>) {
    type Key = (Vec<usize>, Option<SelfSetup>);
    let mut spare: Option<(Key, Spawned)> = None;
    for req in rx {
        let key: Key = (req.areas.clone(), req.setup.clone());
        let r = match spare.take() {
            Some((k, s)) if k == key && !exited(s.pid) => Ok(s),
            other => {
                if let Some((_, s)) = other {
                    kill_and_reap(s.pid);
                }
                spawn_with_areas(&req, req.setup.as_ref())
            }
        };
        let ok = r.is_ok();
        let _ = req.reply.send(r);
        if ok {
            spare = spawn_with_areas(&req, req.setup.as_ref())
                .ok()
                .map(|s| (key, s));
        }
    }
}

fn spawn_with_areas(req: &Request, setup: Option<&SelfSetup>) -> io::Result<Spawned> {
    let mut areas = req
        .areas
        .iter()
        .map(|&n| SharedPages::new(n))
        .collect::<io::Result<Vec<_>>>()?;
    if let (Some(st), Some(first)) = (setup, areas.first()) {
        for (off, bytes) in &st.init {
            first.write(*off, bytes);
        }
    }
    let mut fds = vec![req.phys];
    fds.extend(areas.iter().map(|a| a.fd().as_raw_fd()));
    let ack = match setup {
        Some(st) if st.ack_eventfd => {
            // SAFETY: eventfd with constant flags; the result is checked and owned at once.
            let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: a fresh descriptor nobody else owns.
            Some(unsafe { OwnedFd::from_raw_fd(fd) })
        }
        _ => None,
    };
    if let Some(a) = &ack {
        fds.push(a.as_raw_fd());
    }
    let pid = spawn_now(req.exe, req.exe_path.as_ref(), &fds, setup.is_some())?;
    // The stub has its copies (until its setup maps and closes them).
    for a in &mut areas {
        a.close_fd();
    }
    Ok(Spawned { pid, areas, ack })
}

/// Runs on the spawner thread.
fn spawn_now(
    exe: RawFd,
    exe_path: Option<&CString>,
    fds: &[RawFd],
    self_setup: bool,
) -> io::Result<libc::pid_t> {
    // Everything the child needs is prepared before the clone: the child shares our memory
    // until it execs and may only make raw system calls (see `vfork_child`).
    let empty = CString::default();
    let argv0 = CString::new("um-stub").unwrap_or_default();
    let argv1 = CString::new("setup").unwrap_or_default();
    // argc 2 tells the stub's entry code to set itself up (the seccomp engine).
    let argv = [
        argv0.as_ptr(),
        if self_setup {
            argv1.as_ptr()
        } else {
            std::ptr::null()
        },
        std::ptr::null(),
    ];
    let envp = [std::ptr::null::<libc::c_char>()];
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let args = ChildArgs {
        parent,
        exe,
        exe_path,
        fds,
        empty: &empty,
        argv: &argv,
        envp: &envp,
        mask: sigset_empty(),
    };
    let pid = vfork_child(args)?;
    if self_setup {
        // It sets itself up and reports through its shared area; the kernel notices if it
        // dies on the way (its first handoff never comes, `exited` says so).
        return Ok(pid);
    }
    // Wait until the stub has stopped itself (or died trying).
    loop {
        let mut status = 0;
        // SAFETY: waitpid into a local.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        if libc::WIFSTOPPED(status) {
            return Ok(pid);
        }
        let what = if libc::WIFEXITED(status) {
            format!("exited with status {}", libc::WEXITSTATUS(status))
        } else {
            format!("was killed by signal {}", libc::WTERMSIG(status))
        };
        return Err(io::Error::other(format!(
            "the stub process {what} before it was ready (is exec of the stub allowed here? try stub_exe=PATH)"
        )));
    }
}

/// What the child of [`vfork_child`] needs, prepared by the parent. The child shares the
/// parent's memory until it execs, so it reads these in place and writes nothing but its
/// own stack.
struct ChildArgs<'a> {
    parent: libc::pid_t,
    exe: RawFd,
    exe_path: Option<&'a CString>,
    fds: &'a [RawFd],
    empty: &'a CString,
    argv: &'a [*const libc::c_char; 3],
    envp: &'a [*const libc::c_char; 1],
    /// The spawner thread's signal mask before [`vfork_child`] blocked everything: the child
    /// restores it (the stub inherits it across exec, as it did from a plain fork).
    mask: libc::sigset_t,
}

/// Stack of the child of [`vfork_child`] until it execs: [`child`] needs little (a few
/// frames of raw system calls), but glibc's and musl's wrappers get room to spare.
const CHILD_STACK: usize = 64 * 1024;

fn sigset_empty() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the local it is given.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        set
    }
}

/// Starts the child of [`spawn_now`] with `clone(CLONE_VM | CLONE_VFORK)`, as posix_spawn
/// does (glibc sysdeps/unix/sysv/linux/spawni.c, musl src/process/posix_spawn.c), and
/// returns its pid once it has exec'd (or died).
///
/// Why not fork: a fork copies the kernel's whole address space (page tables of its heap,
/// every guest-memory view, thread stacks) only for exec to throw it away at once; with
/// many forks in a row (a guest's fork loop: each new address space is a new stub) that
/// copy and teardown was most of the spawner's time. The child shares our memory instead,
/// and the spawner thread is suspended until the child's exec, so nothing changes under it.
///
/// Signals: the spawner blocks all of them around the clone, so that no handler of this
/// process (the terminal restorer, the engines' kick) can run in the child on our memory;
/// the child resets every caught signal to its default action before it unblocks them.
fn vfork_child(mut args: ChildArgs<'_>) -> io::Result<libc::pid_t> {
    let mut stack = vec![0u8; CHILD_STACK];
    // The ABIs want a 16-byte aligned stack pointer at the call.
    let top = {
        let end = stack.as_mut_ptr().wrapping_add(CHILD_STACK);
        end.wrapping_sub(end as usize % 16)
    };
    // SAFETY: sigfillset initialises the local it is given.
    let all = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        set
    };
    let mut old = sigset_empty();
    // SAFETY: both sets are valid locals.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old) };
    args.mask = old;
    // SAFETY: `child_entry` gets a pointer to `args`, which lives in this frame; with
    // CLONE_VFORK this thread does not return from clone before the child has exec'd or
    // exited, so `args` and `stack` outlive the child's use of them. The child only makes
    // raw system calls (see `child`).
    let pid = unsafe {
        libc::clone(
            child_entry,
            top.cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&mut args as *mut ChildArgs<'_>).cast(),
        )
    };
    let err = io::Error::last_os_error();
    // SAFETY: `old` is the mask read above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    drop(stack);
    if pid < 0 {
        return Err(err);
    }
    Ok(pid)
}

/// The entry of [`vfork_child`]'s child.
extern "C" fn child_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `ChildArgs` in the suspended parent's frame (see `vfork_child`).
    let a = unsafe { &*(arg as *const ChildArgs<'_>) };
    // SAFETY: sigaction and sigprocmask on locals; the handler table is the child's own copy
    // (no CLONE_SIGHAND), so resetting it leaves the kernel's handlers alone.
    unsafe {
        for sig in 1..=64 {
            let mut sa: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut sa) == 0
                && sa.sa_sigaction != libc::SIG_DFL
                && sa.sa_sigaction != libc::SIG_IGN
            {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &dfl, std::ptr::null_mut());
            }
        }
        libc::sigprocmask(libc::SIG_SETMASK, &a.mask, std::ptr::null_mut());
        child(a.parent, a.exe, a.exe_path, a.fds, a.empty, a.argv, a.envp)
    }
}

/// The child side of [`spawn_now`].
///
/// # Safety
/// Must be called only in the child of [`vfork_child`], with pointers valid in it (the
/// parent's memory, which the child shares until exec).
unsafe fn child(
    parent: libc::pid_t,
    exe: RawFd,
    exe_path: Option<&CString>,
    fds: &[RawFd],
    empty: &CString,
    argv: &[*const libc::c_char; 3],
    envp: &[*const libc::c_char; 1],
) -> ! {
    // SAFETY: raw system calls with integer arguments or pointers to memory that the
    // suspended parent prepared before the clone.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if libc::getppid() != parent {
            libc::_exit(126);
        }
        libc::setsid();
        // No address-space randomisation in stubs (persona ADDR_NO_RANDOMIZE survives exec):
        // the host then puts its vDSO and vvar pages at the same place in every stub, above the
        // guest's TASK_SIZE, and the guest's vDSO can call the host's time functions there
        // (um_kernel::arch::vdso). The stub's own code is at a fixed address anyway, and what else exec
        // maps (the host stack) is unmapped before any guest code runs.
        let persona = libc::personality(0xffff_ffff);
        if persona >= 0 {
            libc::personality(
                (persona as libc::c_ulong) | libc::ADDR_NO_RANDOMIZE as libc::c_ulong,
            );
        }
        // Move the fds out of the way first, then into place: 3, 4, ... and the exe after them.
        // "Out of the way" is above every source fd, so no dup2 clobbers one not yet moved
        // (a kernel with many stubs has fds in the hundreds).
        let mut high: RawFd = 3 + fds.len() as RawFd + 1;
        for &fd in fds.iter().chain(std::iter::once(&exe)) {
            if fd >= high {
                high = fd + 1;
            }
        }
        let high_base = high;
        for (i, &fd) in fds.iter().enumerate() {
            if libc::dup2(fd, high_base + i as RawFd) < 0 {
                libc::_exit(125);
            }
        }
        let exe_high = high_base + fds.len() as RawFd;
        if libc::dup2(exe, exe_high) < 0 {
            libc::_exit(125);
        }
        for i in 0..fds.len() {
            if libc::dup2(high_base + i as RawFd, 3 + i as RawFd) < 0 {
                libc::_exit(125);
            }
        }
        let exe_fd = 3 + fds.len() as RawFd;
        libc::dup2(exe_high, exe_fd);
        // Close everything else, including stdin/out/err: the guest has its own console.
        for fd in 0..3 {
            libc::close(fd);
        }
        if libc::syscall(libc::SYS_close_range, exe_fd + 1, u32::MAX, 0) < 0 {
            for fd in exe_fd + 1..1024 {
                libc::close(fd);
            }
        }
        match exe_path {
            Some(p) => {
                libc::execve(p.as_ptr(), argv.as_ptr(), envp.as_ptr());
            }
            None => {
                libc::syscall(
                    libc::SYS_execveat,
                    exe_fd,
                    empty.as_ptr(),
                    argv.as_ptr(),
                    envp.as_ptr(),
                    libc::AT_EMPTY_PATH,
                );
            }
        }
        libc::_exit(127)
    }
}

/// Kills a whole stub process (every thread) with SIGKILL.
pub fn kill(pid: libc::pid_t) {
    // SAFETY: kill takes two integers.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// Sends SIGCONT to a stub that stopped itself, so that it stays running once it is detached
/// (a detached tracee goes back into a group-stop that is still in effect: ptrace(2)).
pub fn cont(pid: libc::pid_t) {
    // SAFETY: kill takes two integers.
    unsafe { libc::kill(pid, libc::SIGCONT) };
}

/// Whether stub process `pid` (a child of this process) has exited, without reaping it.
pub fn exited(pid: libc::pid_t) -> bool {
    // SAFETY: waitid writes a siginfo_t into our zeroed local.
    unsafe {
        let mut si: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut si,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT | libc::__WALL,
        );
        // ECHILD: already reaped (gone); a filled-in si_pid: a zombie.
        r < 0 || si.si_pid() != 0
    }
}

/// Kills stub process `pid` now and leaves the reaping to a background thread (for stubs
/// the kernel does not trace).
///
/// A process's exit should not wait for the host to tear down its stub: `waitpid` on a
/// SIGKILLed stub returns only once the host has unmapped all of its address space, and an
/// exiting guest process would make its parent wait that long for SIGCHLD (Linux frees the
/// address space before it notifies the parent too, but ours is a second one, torn down by the
/// host). Once killed the stub runs nothing more, so the kernel may reuse its frames at once.
/// The reaper is one long-lived thread; if it cannot be started, this reaps in place.
pub fn kill_and_reap_later(pid: libc::pid_t) {
    static REAPER: Mutex<Option<mpsc::Sender<libc::pid_t>>> = Mutex::new(None);
    kill(pid);
    let mut g = REAPER.lock().unwrap_or_else(|e| e.into_inner());
    if g.is_none() {
        let (tx, rx) = mpsc::channel::<libc::pid_t>();
        let started = std::thread::Builder::new()
            .name("stub-reaper".into())
            .spawn(move || {
                for pid in rx {
                    kill_and_reap(pid);
                }
            });
        if started.is_ok() {
            *g = Some(tx);
        }
    }
    match g.as_ref().map(|tx| tx.send(pid)) {
        Some(Ok(())) => {}
        _ => {
            drop(g);
            kill_and_reap(pid);
        }
    }
}

/// Kills stub process `pid` and reaps it (for stubs the kernel does not trace).
pub fn kill_and_reap(pid: libc::pid_t) {
    kill(pid);
    loop {
        let mut st = 0;
        // SAFETY: waitpid into a local.
        let r = unsafe { libc::waitpid(pid, &mut st, libc::__WALL) };
        if r >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// Reads (and resets) the counter of an acknowledgement eventfd ([`Spawned::ack`]): how many
/// acknowledgements arrived since the last read; 0 if none (the fd is non-blocking).
pub fn read_ack(fd: BorrowedFd<'_>) -> io::Result<u64> {
    let mut v = 0u64;
    // SAFETY: an 8-byte read into a local from a descriptor the caller keeps open.
    let r = unsafe { libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    if r == 8 {
        return Ok(v);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN | libc::EINTR) if r < 0 => Ok(0),
        _ => Err(e),
    }
}
