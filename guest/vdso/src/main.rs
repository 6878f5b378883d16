//! Guest test `vdso`: the vDSO as a program that does not trust its libc finds it.
//!
//! * AT_SYSINFO_EHDR is set and `/proc/self/maps` has a `[vdso]` mapping starting there.
//! * The image is an ELF shared object whose symbols are found the way musl's `__vdsosym` finds
//!   them (program headers, PT_DYNAMIC, DT_HASH, DT_SYMTAB/DT_STRTAB, DT_VERSYM/DT_VERDEF with
//!   the arch's version: LINUX_2.6 on x86_64, LINUX_2.6.39 on arm64).
//! * clock_gettime, gettimeofday, clock_getres (and on x86_64 time, getcpu) called through the
//!   vDSO agree with the same syscalls; a bad clock id gives -EINVAL straight back.
//! * A forked child calls the vDSO too.
//! * arm64: a handler installed with raw rt_sigaction and no SA_RESTORER returns through the
//!   vDSO's `__kernel_rt_sigreturn` (Linux `setup_return`), as glibc's handlers do.
//!
//! Differential: prints the same lines natively and under the user-mode kernel, then UM-VDSO-OK.

#[cfg(target_arch = "aarch64")]
use std::sync::atomic::{AtomicUsize, Ordering};
use umt::{check, check_eq, ok, say};

#[cfg(target_arch = "x86_64")]
const VERSION: &str = "LINUX_2.6";
#[cfg(target_arch = "aarch64")]
const VERSION: &str = "LINUX_2.6.39";
#[cfg(target_arch = "x86_64")]
const CLOCK_GETTIME: &str = "__vdso_clock_gettime";
#[cfg(target_arch = "aarch64")]
const CLOCK_GETTIME: &str = "__kernel_clock_gettime";
#[cfg(target_arch = "x86_64")]
const GETTIMEOFDAY: &str = "__vdso_gettimeofday";
#[cfg(target_arch = "aarch64")]
const GETTIMEOFDAY: &str = "__kernel_gettimeofday";
#[cfg(target_arch = "x86_64")]
const CLOCK_GETRES: &str = "__vdso_clock_getres";
#[cfg(target_arch = "aarch64")]
const CLOCK_GETRES: &str = "__kernel_clock_getres";

/// Reads a value of type T at `addr` inside the vDSO image.
fn rd<T: Copy>(addr: usize) -> T {
    // SAFETY: callers only pass addresses inside the mapped, readable vDSO image (checked against
    // its PT_LOAD size by `Vdso::at`).
    unsafe { std::ptr::read_unaligned(addr as *const T) }
}

fn cstr(addr: usize) -> Vec<u8> {
    let mut v = Vec::new();
    let mut a = addr;
    loop {
        let c: u8 = rd(a);
        if c == 0 || v.len() > 256 {
            return v;
        }
        v.push(c);
        a += 1;
    }
}

struct Vdso {
    base: usize,
    size: usize,
    strings: usize,
    syms: usize,
    nsyms: usize,
    versym: usize,
    verdef: usize,
}

impl Vdso {
    fn at(&self, off: usize) -> usize {
        check(
            off < self.size,
            format!("vdso: offset {off:#x} outside the image"),
        );
        self.base + off
    }

    fn parse(ehdr: usize) -> Vdso {
        let ident: [u8; 6] = rd(ehdr);
        check_eq(
            &ident[..6],
            &[0x7f, b'E', b'L', b'F', 2, 1][..],
            "vdso: ELF64 LE ident",
        );
        check_eq(rd::<u16>(ehdr + 16), 3, "vdso: e_type ET_DYN");
        let phoff: u64 = rd(ehdr + 0x20);
        let phnum: u16 = rd(ehdr + 0x38);
        let (mut load, mut dynamic) = (None, None);
        for i in 0..phnum as usize {
            let ph = ehdr + phoff as usize + i * 56;
            let kind: u32 = rd(ph);
            let (off, vaddr, filesz): (u64, u64, u64) = (rd(ph + 8), rd(ph + 16), rd(ph + 32));
            match kind {
                1 if load.is_none() => load = Some((off, vaddr, filesz)),
                2 => dynamic = Some(off),
                _ => {}
            }
        }
        let (load_off, load_vaddr, size) = load.unwrap_or_else(|| umt::fail("vdso: no PT_LOAD"));
        let dynamic = dynamic.unwrap_or_else(|| umt::fail("vdso: no PT_DYNAMIC"));
        // musl: base = ehdr + p_offset - p_vaddr of the PT_LOAD.
        let base = ehdr + load_off as usize - load_vaddr as usize;
        let mut v = Vdso {
            base,
            size: (load_vaddr + size) as usize,
            strings: 0,
            syms: 0,
            nsyms: 0,
            versym: 0,
            verdef: 0,
        };
        let mut d = ehdr + dynamic as usize;
        let mut hash = 0;
        loop {
            let (tag, val): (u64, u64) = (rd(d), rd(d + 8));
            match tag {
                0 => break,
                4 => hash = v.at(val as usize),
                5 => v.strings = v.at(val as usize),
                6 => v.syms = v.at(val as usize),
                0x6fff_fff0 => v.versym = v.at(val as usize),
                0x6fff_fffc => v.verdef = v.at(val as usize),
                _ => {}
            }
            d += 16;
        }
        check(hash != 0, "vdso: DT_HASH present");
        check(
            v.strings != 0 && v.syms != 0,
            "vdso: DT_STRTAB and DT_SYMTAB present",
        );
        check(
            v.versym != 0 && v.verdef != 0,
            "vdso: DT_VERSYM and DT_VERDEF present",
        );
        v.nsyms = rd::<u32>(hash + 4) as usize;
        v
    }

    /// musl's `__vdsosym`: a defined function or object, global or weak, of version `vername`.
    fn sym(&self, vername: &str, name: &str) -> Option<usize> {
        for i in 0..self.nsyms {
            let s = self.syms + i * 24;
            let info: u8 = rd(s + 4);
            if (1u32 << (info & 0xf)) & 0x27 == 0 || (1u32 << (info >> 4)) & 0x406 == 0 {
                continue;
            }
            if rd::<u16>(s + 6) == 0
                || cstr(self.strings + rd::<u32>(s) as usize) != name.as_bytes()
            {
                continue;
            }
            let vsym = rd::<u16>(self.versym + i * 2) & 0x7fff;
            let mut def = self.verdef;
            let found = loop {
                let (flags, ndx): (u16, u16) = (rd(def + 2), rd(def + 4));
                if flags & 1 == 0 && ndx & 0x7fff == vsym {
                    break true;
                }
                let next: u32 = rd(def + 16);
                if next == 0 {
                    break false;
                }
                def += next as usize;
            };
            if !found {
                continue;
            }
            let aux = def + rd::<u32>(def + 12) as usize;
            if cstr(self.strings + rd::<u32>(aux) as usize) != vername.as_bytes() {
                continue;
            }
            return Some(self.base + rd::<u64>(s + 8) as usize);
        }
        None
    }

    fn need(&self, name: &str) -> usize {
        let a = self
            .sym(VERSION, name)
            .unwrap_or_else(|| umt::fail(format!("vdso: no {name}@{VERSION}")));
        say(format!("found {name}@{VERSION}"));
        a
    }
}

type ClockFn = extern "C" fn(libc::clockid_t, *mut libc::timespec) -> libc::c_int;
type TodFn = extern "C" fn(*mut libc::timeval, *mut libc::c_void) -> libc::c_int;

fn ns(t: &libc::timespec) -> i128 {
    t.tv_sec as i128 * 1_000_000_000 + t.tv_nsec as i128
}

fn zero_ts() -> libc::timespec {
    libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    }
}

fn sys_clock(id: libc::clockid_t) -> libc::timespec {
    let mut t = zero_ts();
    // SAFETY: t is a valid timespec.
    ok(
        unsafe { libc::syscall(libc::SYS_clock_gettime, id, &mut t) },
        "syscall clock_gettime",
    );
    t
}

fn time_functions(v: &Vdso) {
    // SAFETY: the symbols were found in the vDSO with the types Linux gives them
    // (include/vdso/..., the vDSO's C prototypes).
    let cgt: ClockFn = unsafe { std::mem::transmute(v.need(CLOCK_GETTIME)) };
    // SAFETY: as above.
    let gtod: TodFn = unsafe { std::mem::transmute(v.need(GETTIMEOFDAY)) };
    // SAFETY: as above.
    let getres: ClockFn = unsafe { std::mem::transmute(v.need(CLOCK_GETRES)) };

    for (id, what) in [
        (libc::CLOCK_MONOTONIC, "CLOCK_MONOTONIC"),
        (libc::CLOCK_BOOTTIME, "CLOCK_BOOTTIME"),
    ] {
        let mut a = zero_ts();
        let mut c = zero_ts();
        check_eq(cgt(id, &mut a), 0, &format!("vdso clock_gettime({what})"));
        let b = sys_clock(id);
        check_eq(cgt(id, &mut c), 0, &format!("vdso clock_gettime({what})"));
        check(
            ns(&a) <= ns(&b) && ns(&b) <= ns(&c),
            format!("{what}: vdso, syscall, vdso readings out of order"),
        );
        say(format!("{what}: vdso and syscall readings in order"));
    }
    let mut a = zero_ts();
    check_eq(
        cgt(libc::CLOCK_REALTIME, &mut a),
        0,
        "vdso clock_gettime(CLOCK_REALTIME)",
    );
    let b = sys_clock(libc::CLOCK_REALTIME);
    check(
        (ns(&b) - ns(&a)).abs() < 1_000_000_000,
        "CLOCK_REALTIME: vdso within 1 s of the syscall",
    );
    say("CLOCK_REALTIME: vdso within 1 s of the syscall");

    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    check_eq(gtod(&mut tv, std::ptr::null_mut()), 0, "vdso gettimeofday");
    let b = sys_clock(libc::CLOCK_REALTIME);
    check(
        (b.tv_sec - tv.tv_sec).abs() <= 1 && (0..1_000_000).contains(&tv.tv_usec),
        "gettimeofday: vdso within 1 s of the syscall",
    );
    say("gettimeofday: vdso within 1 s of the syscall");

    let mut r1 = zero_ts();
    let mut r2 = zero_ts();
    check_eq(
        getres(libc::CLOCK_MONOTONIC, &mut r1),
        0,
        "vdso clock_getres",
    );
    // SAFETY: valid timespec.
    ok(
        unsafe { libc::syscall(libc::SYS_clock_getres, libc::CLOCK_MONOTONIC, &mut r2) },
        "syscall clock_getres",
    );
    check_eq(ns(&r1), ns(&r2), "clock_getres: vdso and syscall");
    say("clock_getres: vdso and syscall agree");

    // The vDSO returns the raw kernel result: -EINVAL for a clock that does not exist.
    check_eq(
        cgt(12345, &mut a),
        -libc::EINVAL,
        "vdso clock_gettime(12345)",
    );
    say("vdso clock_gettime(bad clock) = -EINVAL");

    // A forked child has the vDSO at the same place.
    let pid = umt::fork();
    if pid == 0 {
        let mut t = zero_ts();
        let r = cgt(libc::CLOCK_MONOTONIC, &mut t);
        umt::exit_now(if r == 0 && t.tv_sec > 0 { 0 } else { 1 });
    }
    let st = umt::waitpid(pid, 0);
    check(
        libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
        format!(
            "forked child calling the vdso: {}",
            umt::describe_status(st)
        ),
    );
    say("a forked child calls the vdso");
    arch_specific(v);
}

#[cfg(target_arch = "x86_64")]
fn arch_specific(v: &Vdso) {
    // time_t is 64 bits on x86_64 (vdso_time returns __kernel_old_time_t, a long).
    type TimeFn = extern "C" fn(*mut i64) -> i64;
    type CpuFn = extern "C" fn(*mut u32, *mut u32, *mut libc::c_void) -> libc::c_int;
    // SAFETY: found in the vDSO with Linux's prototypes.
    let time: TimeFn = unsafe { std::mem::transmute(v.need("__vdso_time")) };
    // SAFETY: as above.
    let getcpu: CpuFn = unsafe { std::mem::transmute(v.need("__vdso_getcpu")) };
    for alias in ["clock_gettime", "gettimeofday", "time", "getcpu"] {
        check(
            v.sym(VERSION, alias).is_some(),
            format!("vdso: alias {alias}"),
        );
    }
    say("plain-name aliases present");
    let mut out = 0;
    let t = time(&mut out);
    let b = sys_clock(libc::CLOCK_REALTIME);
    check(
        out == t && (b.tv_sec - t).abs() <= 1,
        "time: vdso within 1 s of the syscall",
    );
    say("time: vdso within 1 s of the syscall");
    let (mut cpu, mut node) = (u32::MAX, u32::MAX);
    check_eq(
        getcpu(&mut cpu, &mut node, std::ptr::null_mut()),
        0,
        "vdso getcpu",
    );
    // SAFETY: plain query.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    check(
        (cpu as i64) < n && node == 0,
        format!("getcpu: cpu {cpu} of {n}, node {node}"),
    );
    say("getcpu: a cpu that exists, node 0");
}

#[cfg(target_arch = "aarch64")]
static HANDLED: AtomicUsize = AtomicUsize::new(0);

#[cfg(target_arch = "aarch64")]
extern "C" fn on_usr1(_sig: i32, _info: *mut libc::siginfo_t, _uc: *mut libc::c_void) {
    HANDLED.fetch_add(1, Ordering::SeqCst);
}

#[cfg(target_arch = "aarch64")]
fn arch_specific(v: &Vdso) {
    let tramp = v.need("__kernel_rt_sigreturn");
    // `mov x8, #139; svc #0`: what libgcc's unwinder looks for.
    check_eq(
        rd::<u32>(tramp),
        0xd280_1168,
        "__kernel_rt_sigreturn: mov x8, #139",
    );
    check_eq(
        rd::<u32>(tramp + 4),
        0xd400_0001,
        "__kernel_rt_sigreturn: svc #0",
    );
    // The kernel's struct sigaction on arm64: handler, flags, restorer, mask.
    let act: [u64; 4] = [on_usr1 as usize as u64, libc::SA_SIGINFO as u64, 0, 0];
    // SAFETY: a valid kernel sigaction for SIGUSR1, no old action, an 8-byte sigset.
    ok(
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                libc::SIGUSR1,
                act.as_ptr(),
                std::ptr::null_mut::<u64>(),
                8,
            )
        },
        "rt_sigaction(SIGUSR1) without SA_RESTORER",
    );
    for _ in 0..3 {
        // SAFETY: signals ourselves; the handler only bumps an atomic.
        ok(
            unsafe { libc::syscall(libc::SYS_kill, libc::getpid(), libc::SIGUSR1) },
            "kill(SIGUSR1)",
        );
    }
    check_eq(
        HANDLED.load(Ordering::SeqCst),
        3,
        "handlers without SA_RESTORER ran and returned",
    );
    say("handlers without SA_RESTORER return through __kernel_rt_sigreturn");
}

fn maps_line(ehdr: usize) {
    let read = || std::fs::read_to_string("/proc/self/maps");
    let maps = match read() {
        Ok(m) => m,
        Err(_) => {
            // Run as init with nothing mounted: mount procfs (natively it is already there).
            let (src, dir) = (umt::cstr("proc"), umt::cstr("/proc"));
            // SAFETY: valid C strings; no data argument.
            ok(
                unsafe {
                    libc::mount(
                        src.as_ptr(),
                        dir.as_ptr(),
                        src.as_ptr(),
                        0,
                        std::ptr::null(),
                    )
                } as i64,
                "mount proc",
            );
            read().unwrap_or_else(|e| umt::fail(format!("/proc/self/maps: {e}")))
        }
    };
    let line = maps
        .lines()
        .find(|l| l.ends_with("[vdso]"))
        .unwrap_or_else(|| umt::fail("/proc/self/maps has no [vdso] line"));
    let start = usize::from_str_radix(line.split('-').next().unwrap_or(""), 16).unwrap_or(0);
    check_eq(start, ehdr, "[vdso] mapping starts at AT_SYSINFO_EHDR");
    check(
        line.split_whitespace()
            .nth(1)
            .is_some_and(|p| p.starts_with("r-x")),
        format!("[vdso] is r-x: {line}"),
    );
    say("/proc/self/maps: [vdso] r-x at AT_SYSINFO_EHDR");
}

fn main() {
    umt::init("vdso");
    // SAFETY: plain query.
    let ehdr = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) } as usize;
    check(ehdr != 0, "AT_SYSINFO_EHDR is set");
    say("AT_SYSINFO_EHDR is set");
    maps_line(ehdr);
    let v = Vdso::parse(ehdr);
    say("the image is an ELF64 shared object with DT_HASH and versions");
    time_functions(&v);
    umt::done("vdso");
}
