//! Guest test: threads, futex-based locks and condition variables, thread exit and join.
//! Prints the same lines natively and under the user-mode kernel (a differential test).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

fn main() {
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
    println!("UM-THREADS-OK");
}
