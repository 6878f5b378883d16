//! Guest test `forkstress`: fork while other threads write (issue 24, item 1).
//!
//! Linux gives a forked child every private page as it was at one instant of the fork, however
//! busy the parent's other threads are (kernel/fork.c `dup_mmap` runs under the mmap lock and
//! flushes the TLB before it returns; mm/memory.c `copy_present_pte` write-protects the
//! parent's PTE before the child can see the page). So after fork returns:
//!
//! * the child's memory changes only by the child's own writes: nothing the parent's threads
//!   write after the fork may show up in it;
//! * a region only the main thread writes, written right before `fork`, holds exactly what the
//!   main thread wrote (it overwrites the region right after `fork`, in the parent).
//!
//! WRITERS threads keep writing: each maps a fresh anonymous region, writes it through page by
//! page (sequential faults, so the kernel maps pages ahead: fault-around), writes it again, then
//! unmaps it and starts over; a small heap buffer of each writer is rewritten all the time too.
//! The main thread forks FORKS times (or until SECONDS have passed), keeping a few children
//! alive at once; each child checks the main thread's region, sums every writer's current
//! region and heap buffer, sleeps, and sums them again: a difference means a write from the
//! parent reached the child after the fork. The child's exit status says what it found.
//!
//! Differential: prints the same lines natively and under the user-mode kernel, then
//! UM-FORKSTRESS-OK. Usage: `forkstress WORKDIR [FORKS [SECONDS]]` (default 400 forks, 8 s,
//! but at least 20 forks however long they take, up to 120 s);
//! the counts and timings go to WORKDIR/forkstress.log (and to stderr when a check failed).

use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Writer threads.
const WRITERS: usize = 3;
/// Forks the run makes however long they take (within HARD_CAP_SECS).
const MIN_FORKS: u64 = 20;
/// The longest run, whatever the count.
const HARD_CAP_SECS: u64 = 120;
/// Pages of each writer's mapped region.
const REGION_PAGES: usize = 96;
/// Pages of the main thread's region.
const MAIN_PAGES: usize = 16;
/// Words of each writer's heap buffer.
const HEAP_WORDS: usize = 2048;
/// Children alive at once.
const INFLIGHT: usize = 3;

/// Child exit statuses.
const OK: i32 = 0;
const MAIN_WRONG: i32 = 11;
const WRITER_CHANGED: i32 = 12;
const HEAP_CHANGED: i32 = 13;

/// One writer's state, as the child sees it at the fork: its current region (null while it
/// is being replaced) and its heap buffer.
struct Writer {
    region: AtomicPtr<u64>,
    heap: AtomicPtr<u64>,
}

static WRITER: [Writer; WRITERS] = [const {
    Writer {
        region: AtomicPtr::new(ptr::null_mut()),
        heap: AtomicPtr::new(ptr::null_mut()),
    }
}; WRITERS];
static STOP: AtomicBool = AtomicBool::new(false);
static MAIN_REGION: AtomicPtr<u64> = AtomicPtr::new(ptr::null_mut());
static PAGE: AtomicUsize = AtomicUsize::new(4096);

fn page() -> usize {
    PAGE.load(Ordering::Relaxed)
}

fn words(pages: usize) -> usize {
    pages * page() / 8
}

fn map(pages: usize) -> *mut u64 {
    // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
    let p = unsafe {
        libc::mmap(
            ptr::null_mut(),
            pages * page(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert!(p != libc::MAP_FAILED, "mmap failed");
    p.cast()
}

/// Sum of `n` words at `p`, read with volatile loads (another thread may write them).
fn checksum(p: *const u64, n: usize) -> u64 {
    let mut s = 0u64;
    for i in 0..n {
        // SAFETY: p points at n mapped words (the caller's region); volatile: no tearing
        // assumptions beyond a u64 load, the values may change under us in the parent.
        let v = unsafe { ptr::read_volatile(p.add(i)) };
        s = s.wrapping_mul(31).wrapping_add(v);
    }
    s
}

fn writer(w: usize) {
    let heap: Vec<u64> = vec![0; HEAP_WORDS];
    let heap = Box::leak(heap.into_boxed_slice()).as_mut_ptr();
    WRITER[w].heap.store(heap, Ordering::Release);
    let mut v = (w as u64) << 56;
    let step = page() / 8 / 4;
    while !STOP.load(Ordering::Relaxed) {
        let p = map(REGION_PAGES);
        WRITER[w].region.store(p, Ordering::Release);
        let n = words(REGION_PAGES);
        for _pass in 0..2 {
            // Four words a page: each page's first touch is a fault, in address order.
            for i in (0..n).step_by(step) {
                v += 1;
                // SAFETY: i < n words of the region mapped above, only this thread writes it.
                unsafe { ptr::write_volatile(p.add(i), v) };
                // SAFETY: the leaked heap buffer of HEAP_WORDS words, written only here.
                unsafe { ptr::write_volatile(heap.add(i % HEAP_WORDS), v) };
            }
        }
        WRITER[w].region.store(ptr::null_mut(), Ordering::Release);
        // SAFETY: the region mapped above; nobody else uses it (the pointer is withdrawn).
        unsafe { libc::munmap(p.cast(), REGION_PAGES * page()) };
    }
}

fn pattern(iter: u64, i: usize) -> u64 {
    (iter << 32) ^ (i as u64).wrapping_mul(0x9e37_79b9)
}

fn fill_main(iter: u64) {
    let p = MAIN_REGION.load(Ordering::Relaxed);
    for i in 0..words(MAIN_PAGES) {
        // SAFETY: the main region, MAIN_PAGES mapped pages written only by the main thread.
        unsafe { ptr::write_volatile(p.add(i), pattern(iter, i)) };
    }
}

/// The child of fork number `iter`: what it must see of the parent's memory.
fn child(iter: u64) -> i32 {
    let p = MAIN_REGION.load(Ordering::Relaxed);
    let check_main = || {
        (0..words(MAIN_PAGES)).all(|i| {
            // SAFETY: the main region (mapped before any fork).
            unsafe { ptr::read_volatile(p.add(i)) == pattern(iter, i) }
        })
    };
    let snap = |which: &dyn Fn(&Writer) -> (*mut u64, usize)| -> Vec<u64> {
        WRITER
            .iter()
            .map(|w| {
                let (q, n) = which(w);
                if q.is_null() { 0 } else { checksum(q, n) }
            })
            .collect()
    };
    let region = |w: &Writer| (w.region.load(Ordering::Acquire), words(REGION_PAGES));
    let heap = |w: &Writer| (w.heap.load(Ordering::Acquire), HEAP_WORDS);
    if !check_main() {
        return MAIN_WRONG;
    }
    let (r1, h1) = (snap(&region), snap(&heap));
    let ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 2_000_000,
    };
    // SAFETY: plain nanosleep with a valid timespec.
    unsafe { libc::nanosleep(&ts, ptr::null_mut()) };
    let (r2, h2) = (snap(&region), snap(&heap));
    if !check_main() {
        MAIN_WRONG
    } else if r1 != r2 {
        WRITER_CHANGED
    } else if h1 != h2 {
        HEAP_CHANGED
    } else {
        OK
    }
}

fn reap(pid: libc::pid_t, tally: &mut [u64; 4], log: &mut String) {
    let mut st = 0;
    // SAFETY: waitpid on our own child with a valid status pointer.
    let r = unsafe { libc::waitpid(pid, &mut st, 0) };
    assert_eq!(r, pid, "waitpid");
    let k = if libc::WIFEXITED(st) {
        match libc::WEXITSTATUS(st) {
            OK => 0,
            MAIN_WRONG | WRITER_CHANGED | HEAP_CHANGED => 1,
            _ => 3,
        }
    } else {
        2
    };
    if k != 0 {
        log.push_str(&format!("forkstress: child {pid}: wait status {st:#x}\n"));
    }
    tally[k] += 1;
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let forks: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(400);
    let secs: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(8);
    // SAFETY: sysconf has no memory effects.
    PAGE.store(
        unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize,
        Ordering::Relaxed,
    );
    MAIN_REGION.store(map(MAIN_PAGES), Ordering::Relaxed);
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| std::thread::spawn(move || writer(w)))
        .collect();
    while WRITER
        .iter()
        .any(|w| w.heap.load(Ordering::Acquire).is_null())
    {
        std::thread::yield_now();
    }
    let t0 = Instant::now();
    let mut kids = std::collections::VecDeque::new();
    // ok, saw a change or a wrong main region, killed by a signal, other exit.
    let mut tally = [0u64; 4];
    // What went wrong, and the counts: to WORKDIR/forkstress.log (and stderr on a failure),
    // not stdout, which must be the same natively.
    let mut log = String::new();
    let mut done = 0;
    // SECONDS bounds the run once MIN_FORKS forks are done: on a loaded host under emulation
    // 8 s can hold only a handful, too few to mean anything; HARD_CAP_SECS ends it regardless.
    let busy = |done: u64| {
        let t = t0.elapsed();
        t < Duration::from_secs(HARD_CAP_SECS)
            && (t < Duration::from_secs(secs) || done < MIN_FORKS)
    };
    while done < forks && busy(done) {
        fill_main(done);
        // SAFETY: fork; the child only reads memory, sleeps and _exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let code = child(done);
            // SAFETY: _exit ends the child without running the parent's atexit handlers.
            unsafe { libc::_exit(code) };
        }
        assert!(pid > 0, "fork failed");
        // The parent goes on writing what the child must not see.
        fill_main(done + 1_000_000);
        kids.push_back(pid);
        if kids.len() >= INFLIGHT {
            reap(kids.pop_front().unwrap_or_default(), &mut tally, &mut log);
        }
        done += 1;
    }
    STOP.store(true, Ordering::Relaxed);
    for pid in kids {
        reap(pid, &mut tally, &mut log);
    }
    for w in writers {
        w.join().expect("writer");
    }
    log.push_str(&format!(
        "forkstress: {done} forks in {:.2?}: {} ok, {} saw the parent's later writes, {} \
         killed by a signal, {} other\n",
        t0.elapsed(),
        tally[0],
        tally[1],
        tally[2],
        tally[3]
    ));
    let passed = tally[1..].iter().all(|&n| n == 0) && done >= MIN_FORKS.min(forks);
    if let Some(dir) = args.get(1) {
        let _ = std::fs::write(std::path::Path::new(dir).join("forkstress.log"), &log);
    }
    if !passed {
        eprint!("{log}");
    }
    println!("forkstress: {WRITERS} writer threads, forks while they write");
    println!(
        "forkstress: at least {MIN_FORKS} forks: {}",
        done >= MIN_FORKS.min(forks)
    );
    println!(
        "forkstress: children that saw the parent's later writes: {}",
        tally[1]
    );
    println!("forkstress: children killed by a signal: {}", tally[2]);
    println!("forkstress: children with another exit: {}", tally[3]);
    if passed {
        println!("UM-FORKSTRESS-OK");
    }
}
