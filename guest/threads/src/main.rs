//! Guest test: threads, futex-based locks and condition variables, thread exit and join, a
//! process exiting from one thread while its others sleep in syscalls, and the per-thread
//! prctl(PR_SET_TSC) mode (x86_64).
//! Prints the same lines natively and under the user-mode kernel (a differential test).

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The child of [`exit_while_others_sleep`]: one thread blocks reading a pipe nobody writes,
/// the main thread blocks joining a third, which ends the whole process with `exit(7)`. The
/// sleepers must be killed (Linux `zap_other_threads`), not left behind.
fn exit_from_a_thread() -> ! {
    let (mut r, _w) = std::io::pipe().expect("pipe");
    std::thread::spawn(move || {
        let mut b = [0u8; 1];
        let _ = r.read(&mut b);
    });
    let exiter = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(50));
        std::process::exit(7);
    });
    let _ = exiter.join();
    unreachable!("exit(7) in the other thread ended the process");
}

/// Runs [`exit_from_a_thread`] in a child and reports how it ended (within 10 s, or hung).
fn exit_while_others_sleep() {
    // argv[0], not /proc/self/exe: as init the program runs before anything mounts /proc.
    let me = std::env::args().next().expect("argv[0]");
    let mut child = std::process::Command::new(me)
        .arg("exit-from-a-thread")
        .spawn()
        .expect("spawn the child");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(st) = child.try_wait().expect("wait") {
            println!("threads: exit from a thread while others sleep: {st}");
            return;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            println!("threads: exit from a thread while others sleep: the child hung");
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reads the time-stamp counter (x86_64; faults with SIGSEGV under PR_TSC_SIGSEGV).
#[cfg(target_arch = "x86_64")]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC reads a counter; it has no memory effects.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// The thread's PR_GET_TSC mode.
fn tsc_mode() -> i64 {
    let mut mode: libc::c_int = -1;
    // SAFETY: PR_GET_TSC writes one int to the pointer.
    let r = unsafe { libc::prctl(libc::PR_GET_TSC, &mut mode as *mut libc::c_int) };
    if r < 0 { -1 } else { i64::from(mode) }
}

/// The child of [`tsc_per_thread`]: makes rdtsc fault in its main thread, starts a thread
/// (which inherits the mode, then turns it back on for itself and reads the TSC), then reads
/// the TSC in the main thread, which must die of SIGSEGV.
#[cfg(target_arch = "x86_64")]
fn tsc_child() -> ! {
    // SAFETY: plain prctl with integer arguments.
    let r = unsafe { libc::prctl(libc::PR_SET_TSC, libc::PR_TSC_SIGSEGV) };
    println!(
        "threads: tsc: set PR_TSC_SIGSEGV -> {r}, mode {}",
        tsc_mode()
    );
    std::thread::spawn(|| {
        let inherited = tsc_mode();
        // SAFETY: as above.
        unsafe { libc::prctl(libc::PR_SET_TSC, libc::PR_TSC_ENABLE) };
        let (a, b) = (rdtsc(), rdtsc());
        println!(
            "threads: tsc: new thread inherited mode {inherited}, re-enabled: rdtsc advances {}",
            b > a
        );
    })
    .join()
    .expect("join");
    println!("threads: tsc: main thread mode {}", tsc_mode());
    let t = rdtsc();
    println!("threads: tsc: rdtsc did not fault ({t})");
    std::process::exit(0);
}

/// prctl(PR_SET_TSC) is per thread, inherited by new threads, and makes rdtsc raise SIGSEGV
/// (arch/x86/kernel/process.c); the engine must switch the host thread too (and keep the
/// seccomp stub, whose spin clock is the TSC, from spinning meanwhile).
fn tsc_per_thread() {
    #[cfg(target_arch = "x86_64")]
    {
        use std::os::unix::process::ExitStatusExt;
        let me = std::env::args().next().expect("argv[0]");
        let out = std::process::Command::new(me)
            .arg("tsc-child")
            .output()
            .expect("run the child");
        print!("{}", String::from_utf8_lossy(&out.stdout));
        println!(
            "threads: tsc: child ended by signal {:?}, exit code {:?}",
            out.status.signal(),
            out.status.code()
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: plain prctl with integer arguments.
        let r = unsafe { libc::prctl(libc::PR_SET_TSC, 1) };
        println!("threads: tsc: PR_SET_TSC is x86 only: {r} {}", tsc_mode());
    }
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("exit-from-a-thread") {
        exit_from_a_thread();
    }
    #[cfg(target_arch = "x86_64")]
    if std::env::args().nth(1).as_deref() == Some("tsc-child") {
        tsc_child();
    }
    let n = 8;
    let counter = Arc::new(AtomicU64::new(0));
    let locked = Arc::new(Mutex::new(0u64));
    let mut hs = Vec::new();
    for i in 0..n {
        let (c, l) = (counter.clone(), locked.clone());
        hs.push(std::thread::spawn(move || {
            for _ in 0..10_000 {
                c.fetch_add(1, Ordering::Relaxed);
                *l.lock().unwrap() += 1;
            }
            i * 2
        }));
    }
    let sum: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    println!(
        "threads: atomic={} mutex={} joined-sum={}",
        counter.load(Ordering::Relaxed),
        *locked.lock().unwrap(),
        sum
    );

    // A condition variable ping-pong between two threads.
    let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
    let p2 = pair.clone();
    let h = std::thread::spawn(move || {
        let (m, cv) = &*p2;
        for round in 0..100 {
            let mut g = m.lock().unwrap();
            while *g != round * 2 + 1 {
                g = cv.wait(g).unwrap();
            }
            *g += 1;
            cv.notify_all();
        }
    });
    let (m, cv) = &*pair;
    for round in 0..100 {
        let mut g = m.lock().unwrap();
        while *g != round * 2 {
            g = cv.wait(g).unwrap();
        }
        *g += 1;
        cv.notify_all();
    }
    h.join().unwrap();
    println!("threads: condvar rounds={}", *m.lock().unwrap() / 2);
    exit_while_others_sleep();
    tsc_per_thread();
    println!("UM-THREADS-OK");
}
