//! Gate: Debian 12's real `gdb` debugs programs compiled in the guest (issue 20,
//! kernel/src/ptrace.rs).
//!
//! Boots the Debian tree (`UM_DEBIAN_ROOTFS`, else `build/debian-<arch>`; it needs gdb, gcc
//! and libc6-dev) with `init=/bin/bash -c SCRIPT`, in every engine of [`ENGINES`]. The script
//! mounts /proc and a tmpfs on /tmp (nothing is written to the tree), compiles small C
//! programs there with `gcc -g -O0`, and runs `gdb -nx -batch` on them, each run in its own
//! `=== NAME` section of the console. Checked, as exact lines or line prefixes of gdb's
//! output:
//! * `basic`: a breakpoint at `main` and at `add` hit with their arguments, `bt` through both
//!   frames, `stepi` (PTRACE_SINGLESTEP) landing on `<main+15>`, `info registers` (cs 0x33: the
//!   tracee is 64-bit), `$mxcsr` read and an `$xmm1` lane written and read back across a
//!   `stepi` (the FP regsets, NT_X86_XSTATE), `finish`'s returned value, `print x` = 42, and
//!   `exited normally`;
//! * `syscall`: `stepi` over glibc's `syscall` instruction in `getpid` stops right after it
//!   (the step's SIGTRAP at syscall exit), at `<getpid+7>: ret`;
//! * `signal`: `stepi` at a stop for SIGUSR1 delivers it and stops at the handler's first
//!   instruction (`<h>`, below `<signal handler called>`), and `continue` then runs to the
//!   end without a stray SIGTRAP (the handler's frame must not keep the step's trap flag);
//! * `threads`: a breakpoint in a pthread worker hit in thread 2, `info threads` listing both
//!   threads (libthread_db reading the tracee's memory), the worker's argument;
//! * `fork`: `set follow-fork-mode child` stops in the child's function with its argument;
//! * `watch`: a hardware watchpoint is refused cleanly (POKEUSER of a debug register: EIO,
//!   gdb says "Couldn't write debug register") and gdb goes on; a software watchpoint then
//!   reports g's old and new values twice;
//! * `attach`: `gdb -p` of a sleeping loop shows its frames, reads and changes a variable and
//!   detaches; the program then ends with its own status (3);
//! * `core`: a program killed by SIGSEGV leaves a core (fs/src/coredump.rs) that `gdb prog
//!   core` reads: the signal, the faulting frame with its arguments and the caller;
//! * `peeksiginfo`: PTRACE_PEEKSIGINFO (python3 ctypes) of a stopped tracee's thread and
//!   process queues.

//!
//! The expectations are x86_64's (register names, PTRACE_SINGLESTEP by the trap flag); on
//! arm64 single-step is refused (EIO) and this gate fails there until it exists.

use std::time::Duration;
use um_tests::{Boot, for_each_engine};

const MARKER: &str = "UM-GDB-OK";
const TIMEOUT: Duration = Duration::from_secs(150);

const SCRIPT: &str = r#"export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp
mount -t proc proc /proc || exit 1
mount -t tmpfs tmpfs /tmp || exit 1
cd /tmp
cat > p.c <<'X'
#include <stdio.h>
#include <unistd.h>
int g = 7;
int add(int a, int b)
{
	int s = a + b;
	return s;
}
int main(void)
{
	int x = 40;
	x = add(x, 2);
	g = x;
	g = g + 1;
	printf("x=%d g=%d pid=%d\n", x, g, getpid());
	return 0;
}
X
cat > th.c <<'X'
#include <pthread.h>
#include <stdio.h>
int hits;
void *worker(void *arg)
{
	hits += (int)(long)arg;
	return arg;
}
int main(void)
{
	pthread_t t;
	pthread_create(&t, 0, worker, (void *)5);
	pthread_join(t, 0);
	printf("hits=%d\n", hits);
	return 0;
}
X
cat > fk.c <<'X'
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
int child_work(int v)
{
	return v * 3;
}
int main(void)
{
	pid_t p = fork();
	if (p == 0) {
		int r = child_work(14);
		printf("child r=%d\n", r);
		return 0;
	}
	waitpid(p, 0, 0);
	printf("parent done\n");
	return 0;
}
X
cat > lp.c <<'X'
#include <stdio.h>
#include <unistd.h>
volatile int spin = 1;
int loop_here(int n)
{
	while (spin)
		usleep(1000);
	return n;
}
int main(void)
{
	return loop_here(3);
}
X
cat > cr.c <<'X'
int crash_in(int *p, int v)
{
	*p = v;
	return v;
}
int main(void)
{
	return crash_in(0, 99);
}
X
cat > sg.c <<'X'
#include <signal.h>
#include <stdio.h>
volatile int got;
void h(int s)
{
	got = s;
}
int main(void)
{
	signal(SIGUSR1, h);
	raise(SIGUSR1);
	printf("got=%d\n", got);
	return 0;
}
X
for f in p th fk lp cr sg; do gcc -g -O0 -pthread -o $f $f.c || exit 1; done
echo === basic
gdb -nx -batch -ex 'break main' -ex 'break add' -ex run -ex bt -ex stepi -ex 'info registers rip' -ex continue -ex bt -ex 'info registers' -ex 'p $mxcsr' -ex 'set var $xmm1.v4_int32[0] = 1234' -ex stepi -ex 'p $xmm1.v4_int32[0]' -ex finish -ex next -ex 'print x' -ex continue ./p 2>&1
echo === syscall
gdb -nx -batch -ex 'break getpid' -ex run -ex stepi -ex stepi -ex 'x/i $pc' -ex continue ./p 2>&1
echo === signal
gdb -nx -batch -ex run -ex stepi -ex 'info registers rip' -ex bt -ex continue ./sg 2>&1
echo === threads
gdb -nx -batch -ex 'break worker' -ex run -ex 'info threads' -ex 'print arg' -ex continue ./th 2>&1
echo === fork
gdb -nx -batch -ex 'set follow-fork-mode child' -ex 'break child_work' -ex run -ex bt -ex 'print v' -ex continue ./fk 2>&1
echo === watch
gdb -nx -batch -ex 'break main' -ex run -ex 'watch g' -ex continue -ex 'delete 2' -ex 'set can-use-hw-watchpoints 0' -ex 'watch g' -ex continue -ex continue -ex continue ./p 2>&1
echo === attach
./lp &
pid=$!
sleep 0.5
gdb -nx -batch -p $pid -ex bt -ex 'frame 3' -ex 'print n' -ex 'set var spin = 0' -ex detach 2>&1
wait $pid
echo "lp-rc=$?"
echo === core
ulimit -c unlimited
./cr
echo "cr-rc=$?"
gdb -nx -batch ./cr core -ex bt 2>&1
echo === peeksiginfo
cat > peek.py <<'X'
import ctypes, os, signal, struct, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
pid = os.fork()
if pid == 0:
    libc.ptrace(0, 0, None, None)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1, signal.SIGUSR2])
    os.kill(os.getpid(), signal.SIGUSR1)
    signal.pthread_kill(threading.get_ident(), signal.SIGUSR2)
    os.kill(os.getpid(), signal.SIGSTOP)
    os._exit(0)
os.waitpid(pid, 0)
def peek(flags, off=0, nr=8):
    args = ctypes.create_string_buffer(struct.pack("QIi", off, flags, nr), 16)
    buf = ctypes.create_string_buffer(128 * 8)
    n = libc.ptrace(0x4209, pid, args, buf)
    if n < 0:
        return "err%d" % ctypes.get_errno()
    return [struct.unpack_from("iii", buf.raw, 128 * i)[0] for i in range(n)]
print("peek thread", peek(0), "shared", peek(1), "off1", peek(1, 1), "badflag", peek(2))
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
X
python3 peek.py 2>&1
echo === end
echo UM-GDB-OK"#;

/// The lines of section `name` (between `=== name` and the next `=== `).
fn section<'a>(lines: &[&'a str], name: &str) -> Vec<&'a str> {
    let head = format!("=== {name}");
    lines
        .iter()
        .skip_while(|l| **l != head)
        .skip(1)
        .take_while(|l| !l.starts_with("=== "))
        .copied()
        .collect()
}

#[test]
fn gdb_breakpoints_steps_threads_fork_watch_attach_core() {
    let tree = um_tests::debian_rootfs(&["usr/bin/gdb", "usr/bin/gcc", "usr/include/stdio.h"]);
    for_each_engine(|engine| {
        let out = Boot::new()
            .engine(engine)
            .rootflags(&tree.display().to_string())
            .init("/bin/bash")
            .args(&["-c", SCRIPT])
            .timeout(TIMEOUT)
            .run();
        let lines: Vec<&str> = out.stdout.lines().map(|l| l.trim_end()).collect();
        let check = |sec: &str, pred: &dyn Fn(&str) -> bool, what: &str| {
            if !section(&lines, sec).iter().any(|l| pred(l)) {
                panic!(
                    "gdb ({}), section {sec}: no line with {what}\n{}",
                    engine.join(" "),
                    out.report()
                );
            }
        };
        let line = |sec: &str, want: &str| check(sec, &|l| l == want, want);
        let prefix = |sec: &str, want: &str| check(sec, &|l| l.starts_with(want), want);
        let both = |sec: &str, a: &str, b: &str| {
            check(
                sec,
                &|l| l.starts_with(a) && l.contains(b),
                &format!("{a}…{b}"),
            )
        };

        line("basic", "Breakpoint 1, main () at p.c:11");
        line("basic", "#0  main () at p.c:11");
        both("basic", "rip ", "<main+15>");
        line("basic", "Breakpoint 2, add (a=40, b=2) at p.c:6");
        line("basic", "#0  add (a=40, b=2) at p.c:6");
        both("basic", "#1  0x", " in main () at p.c:12");
        both("basic", "cs ", "0x33");
        both("basic", "eflags ", "[ ");
        line("basic", "$1 = [ IM DM ZM OM UM PM ]");
        line("basic", "$2 = 1234");
        line("basic", "Value returned is $3 = 42");
        line("basic", "$4 = 42");
        prefix("basic", "x=42 g=43 pid=");
        prefix("basic", "[Inferior 1 (process ");
        both("basic", "[Inferior 1 (process ", ") exited normally]");

        prefix("syscall", "Breakpoint 1, 0x");
        both("syscall", "=> 0x", "<getpid+7>:\tret");
        both("syscall", "[Inferior 1 (process ", ") exited normally]");

        line(
            "signal",
            "Program received signal SIGUSR1, User defined signal 1.",
        );
        both("signal", "rip ", "<h>");
        line("signal", "#1  <signal handler called>");
        both("signal", "#4  0x", " in main () at sg.c:11");
        line("signal", "got=10");
        both("signal", "[Inferior 1 (process ", ") exited normally]");

        line(
            "threads",
            "Thread 2 \"th\" hit Breakpoint 1, worker (arg=0x5) at th.c:6",
        );
        both("threads", "  1    Thread 0x", "\"th\"");
        both(
            "threads",
            "* 2    Thread 0x",
            "\"th\" worker (arg=0x5) at th.c:6",
        );
        line("threads", "$1 = (void *) 0x5");
        line("threads", "hits=5");
        both("threads", "[Inferior 1 (process ", ") exited normally]");

        prefix("fork", "[Attaching after Thread 0x");
        both(
            "fork",
            "Thread 2.1 \"fk\" hit Breakpoint 1,",
            "child_work (v=14) at fk.c:6",
        );
        both("fork", "#1  0x", " in main () at fk.c:12");
        line("fork", "$1 = 14");
        line("fork", "child r=42");
        both("fork", "[Inferior 2 (process ", ") exited normally]");

        line("watch", "Hardware watchpoint 2: g");
        line(
            "watch",
            "Couldn't write debug register: Input/output error.",
        );
        line("watch", "Watchpoint 3: g");
        for (old, new) in [("7", "42"), ("42", "43")] {
            let w = section(&lines, "watch");
            let hit = w.windows(2).any(|p| {
                p[0] == format!("Old value = {old}") && p[1] == format!("New value = {new}")
            });
            assert!(
                hit,
                "gdb ({}): software watchpoint {old} -> {new} not reported\n{}",
                engine.join(" "),
                out.report()
            );
        }
        both("watch", "[Inferior 1 (process ", ") exited normally]");

        both("attach", "#3  0x", " in loop_here (n=3) at lp.c:7");
        both("attach", "#4  0x", " in main () at lp.c:12");
        line("attach", "$1 = 3");
        both("attach", "[Inferior 1 (process ", ") detached]");
        line("attach", "lp-rc=3");

        line("core", "cr-rc=139");
        line("core", "Core was generated by `./cr'.");
        line(
            "core",
            "Program terminated with signal SIGSEGV, Segmentation fault.",
        );
        both("core", "#0  0x", " in crash_in (p=0x0, v=99) at cr.c:3");
        both("core", "#1  0x", " in main () at cr.c:8");
        // The thread's queue has the tgkill'ed SIGUSR2, the process's the kill'ed SIGUSR1
        // (as on Linux); an offset past the end gives none, an unknown flag EINVAL.
        line(
            "peeksiginfo",
            "peek thread [12] shared [10] off1 [] badflag err22",
        );
        out.assert_ok(MARKER);
    });
}
