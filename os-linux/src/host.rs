//! Small host services: clocks, randomness, console fds, host files for hostfs.
//!
//! hostfs never hands a guest path to the host as a whole: it walks one component at a time
//! with `openat(dirfd, name, O_NOFOLLOW)` from a directory fd, so neither `..` nor a symlink
//! can take a lookup outside the root (the VFS resolves `..` and symlinks itself).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn cname(name: &[u8]) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Runs a byte-count system call until it is not interrupted (`EINTR`): a negative result is
/// the host errno, anything else the count.
fn retry_eintr(mut call: impl FnMut() -> isize) -> io::Result<usize> {
    loop {
        let r = call();
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// Reads a host clock (`CLOCK_REALTIME`, `CLOCK_MONOTONIC`, ...) as (seconds, nanoseconds).
pub fn clock_gettime(clock: libc::clockid_t) -> io::Result<(i64, i64)> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    cvt(unsafe { libc::clock_gettime(clock, &mut ts) })?;
    Ok((ts.tv_sec, ts.tv_nsec))
}

/// The host CPU the calling thread is running on (sched_getcpu(3)); 0 if the host cannot say.
pub fn current_cpu() -> u32 {
    // SAFETY: sched_getcpu takes no arguments and touches no memory of ours.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).unwrap_or(0)
}

/// Restricts host thread `tid` (any thread of a process this one may change: the stubs) to
/// the host CPUs of `mask` (bit N: CPU N), sched_setaffinity(2).
pub fn set_affinity(tid: i32, mask: u64) -> io::Result<()> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set; CPU_SET only writes inside it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in (0..64).filter(|c| mask & (1u64 << c) != 0) {
        // SAFETY: `cpu` < 64 is inside the set (CPU_SETSIZE is 1024).
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    let r = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Sets the nice value of host thread `tid` (setpriority(2) with PRIO_PROCESS names one
/// thread on Linux).
pub fn set_nice(tid: i32, nice: i32) -> io::Result<()> {
    // SAFETY: setpriority takes plain integers.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Fills `buf` with random bytes from the host.
pub fn getrandom(buf: &mut [u8]) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let rest = &mut buf[done..];
        // SAFETY: getrandom writes at most len bytes into the buffer.
        done +=
            retry_eintr(|| unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) })?;
    }
    Ok(())
}

/// The host's membarrier(2) with `flags` 0: `cmd` is a `MEMBARRIER_CMD_*` value. Returns
/// the host's answer (the command mask for `MEMBARRIER_CMD_QUERY`, else 0).
pub fn membarrier(cmd: i32) -> io::Result<i32> {
    // SAFETY: membarrier takes no pointers; with flags 0 the cpu argument is ignored.
    let r = unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0u32, 0i32) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as i32)
    }
}

/// Writes all of `data` to a host fd (the console).
pub fn write_all(fd: BorrowedFd<'_>, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        // SAFETY: write reads at most len bytes from the buffer.
        let n = retry_eintr(|| unsafe {
            libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len())
        })?;
        data = &data[n..];
    }
    Ok(())
}

/// Reads from a host fd; `Ok(0)` is end of file.
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: read writes at most len bytes into the buffer.
    retry_eintr(|| unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) })
}

/// `pread` on a host file.
pub fn pread(fd: BorrowedFd<'_>, buf: &mut [u8], off: u64) -> io::Result<usize> {
    // SAFETY: pread writes at most len bytes into the buffer.
    retry_eintr(|| unsafe {
        libc::pread(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            off as libc::off_t,
        )
    })
}

/// `pwrite` on a host file.
pub fn pwrite(fd: BorrowedFd<'_>, data: &[u8], off: u64) -> io::Result<usize> {
    // SAFETY: pwrite reads at most len bytes from the buffer.
    retry_eintr(|| unsafe {
        libc::pwrite(
            fd.as_raw_fd(),
            data.as_ptr().cast(),
            data.len(),
            off as libc::off_t,
        )
    })
}

/// Whether a host fd is a terminal.
pub fn isatty(fd: BorrowedFd<'_>) -> bool {
    // SAFETY: isatty takes an fd.
    unsafe { libc::isatty(fd.as_raw_fd()) == 1 }
}

/// The host terminal's window size (rows, cols), if fd is a terminal.
pub fn winsize(fd: BorrowedFd<'_>) -> Option<(u16, u16)> {
    // SAFETY: TIOCGWINSZ writes one winsize.
    unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(fd.as_raw_fd(), libc::TIOCGWINSZ, &mut ws) == 0 {
            Some((ws.ws_row, ws.ws_col))
        } else {
            None
        }
    }
}

/// Host file metadata, as hostfs needs it.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostStat {
    pub dev: u64,
    pub ino: u64,
    pub mode: u32,
    pub nlink: u64,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u64,
    pub size: i64,
    pub blksize: i64,
    pub blocks: i64,
    pub atime: (i64, i64),
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

// `nlink` and `blksize` are u64/i64 on x86_64 but u32/i32 on arm64 hosts.
#[allow(clippy::unnecessary_cast)]
fn from_stat(st: &libc::stat) -> HostStat {
    HostStat {
        dev: st.st_dev,
        ino: st.st_ino,
        mode: st.st_mode,
        nlink: st.st_nlink as u64,
        uid: st.st_uid,
        gid: st.st_gid,
        rdev: st.st_rdev,
        size: st.st_size,
        blksize: st.st_blksize as i64,
        blocks: st.st_blocks,
        atime: (st.st_atime, st.st_atime_nsec),
        mtime: (st.st_mtime, st.st_mtime_nsec),
        ctime: (st.st_ctime, st.st_ctime_nsec),
    }
}

/// `fstatat(dirfd, name, AT_SYMLINK_NOFOLLOW)`; an empty name stats `dirfd` itself.
pub fn fstatat(dirfd: BorrowedFd<'_>, name: &[u8]) -> io::Result<HostStat> {
    let c = cname(name)?;
    let flags = libc::AT_SYMLINK_NOFOLLOW
        | if name.is_empty() {
            libc::AT_EMPTY_PATH
        } else {
            0
        };
    // SAFETY: fstatat writes one struct stat; the name is NUL-terminated.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        cvt(libc::fstatat(dirfd.as_raw_fd(), c.as_ptr(), &mut st, flags))?;
        Ok(from_stat(&st))
    }
}

/// `openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode)`. `name` must be one component.
pub fn openat(dirfd: BorrowedFd<'_>, name: &[u8], flags: i32, mode: u32) -> io::Result<OwnedFd> {
    if name.contains(&b'/') || name == b".." {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let c = cname(if name.is_empty() { b"." } else { name })?;
    // SAFETY: openat with a NUL-terminated name; returns a new fd that we own.
    let fd = cvt(unsafe {
        libc::openat(
            dirfd.as_raw_fd(),
            c.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    })?;
    // SAFETY: a fresh fd.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens a host directory by absolute path (the hostfs root), `O_PATH | O_DIRECTORY`.
pub fn open_root(path: &std::path::Path) -> io::Result<OwnedFd> {
    use std::os::unix::ffi::OsStrExt;
    let c = cname(path.as_os_str().as_bytes())?;
    // SAFETY: open with a NUL-terminated path; returns a new fd.
    let fd = cvt(unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: a fresh fd.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `readlinkat(dirfd, name)`.
pub fn readlinkat(dirfd: BorrowedFd<'_>, name: &[u8]) -> io::Result<Vec<u8>> {
    let c = cname(name)?;
    let mut buf = vec![0u8; 4096];
    // SAFETY: readlinkat writes at most len bytes.
    let r = unsafe {
        libc::readlinkat(
            dirfd.as_raw_fd(),
            c.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(r as usize);
    Ok(buf)
}

/// One host directory entry.
#[derive(Clone, Debug)]
pub struct HostDirent {
    pub ino: u64,
    pub kind: u8,
    pub name: Vec<u8>,
}

/// Reads a whole host directory (opened with O_RDONLY|O_DIRECTORY), without `.` and `..`.
pub fn read_dir(fd: BorrowedFd<'_>) -> io::Result<Vec<HostDirent>> {
    // SAFETY: lseek on an fd.
    unsafe { libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_SET) };
    let mut out = Vec::new();
    let mut buf = vec![0u8; 32768];
    loop {
        // SAFETY: getdents64 writes at most len bytes into the buffer.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                fd.as_raw_fd(),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            break;
        }
        let mut off = 0usize;
        while off < n as usize {
            let ino = u64::from_le_bytes(buf[off..off + 8].try_into().unwrap_or_default());
            let reclen = u16::from_le_bytes([buf[off + 16], buf[off + 17]]) as usize;
            let kind = buf[off + 18];
            let name_bytes = &buf[off + 19..off + reclen];
            let len = name_bytes
                .iter()
                .position(|&b| b == 0)
                .unwrap_or(name_bytes.len());
            let name = name_bytes[..len].to_vec();
            if name != b"." && name != b".." {
                out.push(HostDirent { ino, kind, name });
            }
            if reclen == 0 {
                break;
            }
            off += reclen;
        }
    }
    Ok(out)
}

/// Borrows one of the kernel's console fds (0, 1, 2 or one named by `con0=fd:N`) for the
/// kernel's whole life. The kernel never closes these.
pub fn console_fd(fd: std::os::fd::RawFd) -> BorrowedFd<'static> {
    // SAFETY: console fds are opened before boot and never closed while the kernel runs, so
    // the borrow cannot outlive the descriptor.
    unsafe { BorrowedFd::borrow_raw(fd) }
}

/// Whether reading `fd` would not block (input ready, end of file, or an error to report).
pub fn poll_in(fd: BorrowedFd<'_>) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll on one pollfd we own, zero timeout.
    let r = unsafe { libc::poll(&mut p, 1, 0) };
    r > 0
}

/// The calling host thread's id (gettid(2)).
pub fn gettid() -> libc::pid_t {
    // SAFETY: gettid takes no arguments and touches no memory.
    unsafe { libc::gettid() }
}

/// The CPU clock of host thread `tid` of this process (Linux `MAKE_THREAD_CPUCLOCK(tid,
/// CPUCLOCK_SCHED)`, include/linux/posix-timers_types.h): what pthread_getcpuclockid(3) gives.
fn thread_cpu_clock(tid: libc::pid_t) -> libc::clockid_t {
    const CPUCLOCK_PERTHREAD_MASK: libc::clockid_t = 4;
    const CPUCLOCK_SCHED: libc::clockid_t = 2;
    (!tid << 3) | CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED
}

/// CPU time in nanoseconds that host thread `tid` of *this* process has used (one
/// `clock_gettime` on its thread CPU clock, exact to the call). The host refuses thread CPU
/// clocks of other processes (kernel/time/posix-cpu-timers.c `pid_for_clock`: `EINVAL`
/// unless `same_thread_group`); for those see [`thread_runtime_ns`].
pub fn own_thread_cpu_ns(tid: libc::pid_t) -> io::Result<u64> {
    let (s, ns) = clock_gettime(thread_cpu_clock(tid))?;
    Ok(s as u64 * 1_000_000_000 + ns as u64)
}

/// The run-time counter of host thread `tid` of process `pid` (any host process we may read,
/// e.g. a stub): `/proc/PID/task/TID/schedstat`, whose first field is the thread's
/// `se.sum_exec_runtime` in nanoseconds (fs/proc/base.c `proc_pid_schedstat`). Opened once;
/// each [`ThreadRuntime::read_ns`] is one `pread` at offset 0, which makes the host generate
/// the line afresh (fs/seq_file.c `seq_read_iter` restarts at position 0). For a thread that
/// is running the value lags by at most one host scheduler tick (the scheduler brings it up to
/// date at each tick and whenever the thread stops running).
pub struct ThreadRuntime {
    pid: libc::pid_t,
    tid: libc::pid_t,
    file: std::fs::File,
}

impl ThreadRuntime {
    /// Opens the counter of host thread `tid` of process `pid`.
    pub fn open(pid: libc::pid_t, tid: libc::pid_t) -> io::Result<ThreadRuntime> {
        let file = std::fs::File::open(format!("/proc/{pid}/task/{tid}/schedstat"))?;
        Ok(ThreadRuntime { pid, tid, file })
    }

    /// Which host thread this counts: (pid, tid).
    pub fn thread(&self) -> (libc::pid_t, libc::pid_t) {
        (self.pid, self.tid)
    }

    /// The thread's run time so far in nanoseconds (`ESRCH` once it has ended).
    pub fn read_ns(&self) -> io::Result<u64> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 96];
        let n = self.file.read_at(&mut buf, 0)?;
        parse_schedstat(&buf[..n]).ok_or_else(|| io::Error::from_raw_os_error(libc::EIO))
    }
}

/// Run time in nanoseconds of host thread `tid` of process `pid` (one open, read and close;
/// see [`ThreadRuntime`]).
pub fn thread_runtime_ns(pid: libc::pid_t, tid: libc::pid_t) -> io::Result<u64> {
    ThreadRuntime::open(pid, tid)?.read_ns()
}

/// The run time (first field) of a `schedstat` line: "RUNTIME WAIT SLICES".
fn parse_schedstat(b: &[u8]) -> Option<u64> {
    let end = b.iter().position(|&c| c == b' ' || c == b'\n')?;
    std::str::from_utf8(&b[..end]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_first_field() {
        assert_eq!(
            parse_schedstat(b"1009486950 135523 5\n"),
            Some(1_009_486_950)
        );
        assert_eq!(parse_schedstat(b"0 0 0\n"), Some(0));
        assert_eq!(parse_schedstat(b""), None);
        assert_eq!(parse_schedstat(b"x 1 2\n"), None);
    }

    #[test]
    fn thread_cpu_clock_encoding() {
        // pthread_getcpuclockid of tid 5: ((~5) << 3) | 6 = -42.
        assert_eq!(thread_cpu_clock(5), -42);
    }

    #[test]
    fn host_thread_cpu_times_are_readable() {
        let me = gettid();
        let a = own_thread_cpu_ns(me).expect("own thread clock");
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let b = own_thread_cpu_ns(me).expect("own thread clock");
        assert!(b > a, "{a} -> {b}");
        let pid = std::process::id() as libc::pid_t;
        assert!(thread_runtime_ns(pid, me).is_ok());
        let rt = ThreadRuntime::open(pid, me).expect("schedstat");
        assert_eq!(rt.thread(), (pid, me));
        let (x, y) = (
            rt.read_ns().expect("read"),
            rt.read_ns().expect("read again"),
        );
        assert!(y >= x, "{x} -> {y}");
    }
}
