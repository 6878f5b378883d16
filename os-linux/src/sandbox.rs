//! An Android-style app sandbox for `linux` itself (`linux-sandbox`): the host seccomp filter
//! an Android app runs under kills the process on a syscall numbered -1 (bionic's
//! `SECCOMP_RET_TRAP`/kill policy for invalid numbers), and SELinux refuses executing a memfd.
//! Inside such a sandbox the ptrace engine's cancel path (syscall number set to -1) must fail
//! and the substitute path (`nocancel`) must work; `stub_exe=PATH` must start stubs without
//! exec'ing a memfd. This module installs an equivalent filter on the calling process (inherited
//! by everything it starts): syscall number -1 kills the process, and optionally `execveat`
//! fails with EACCES (stubs are started by `execveat(memfd, "", AT_EMPTY_PATH)` unless
//! `stub_exe=` is given, which execs by path).

use std::io;

/// Installs the sandbox filter on the calling thread (and, with TSYNC, every thread of the
/// process), after `PR_SET_NO_NEW_PRIVS`. `refuse_execveat`: `execveat` returns EACCES.
pub fn enter(refuse_execveat: bool) -> io::Result<()> {
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    const RET_KILL_PROCESS: u32 = 0x8000_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    const RET_ALLOW: u32 = 0x7fff_0000;
    let ins = |code: u16, jt: u8, jf: u8, k: u32| libc::sock_filter { code, jt, jf, k };
    let execveat = libc::SYS_execveat as u32;
    let mut prog = vec![
        ins(LD_W_ABS, 0, 0, 0), // seccomp_data.nr
        ins(JEQ_K, 0, 1, u32::MAX),
        ins(RET_K, 0, 0, RET_KILL_PROCESS),
    ];
    if refuse_execveat {
        prog.push(ins(JEQ_K, 0, 1, execveat));
        prog.push(ins(RET_K, 0, 0, RET_ERRNO | libc::EACCES as u32));
    }
    prog.push(ins(RET_K, 0, 0, RET_ALLOW));
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_mut_ptr(),
    };
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: seccomp(SET_MODE_FILTER) reads the program through `fprog`, which points at
    // `prog`; both outlive the call (the kernel copies the filter).
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            1, // SECCOMP_SET_MODE_FILTER
            1, // SECCOMP_FILTER_FLAG_TSYNC
            &fprog as *const libc::sock_fprog,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
