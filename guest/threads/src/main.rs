//! Guest test: threads, futex-based locks and condition variables, thread exit and join, and
//! a process exiting from one thread while its others sleep in syscalls.
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

fn main() {
    if std::env::args().nth(1).as_deref() == Some("exit-from-a-thread") {
        exit_from_a_thread();
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
    println!("UM-THREADS-OK");
}
