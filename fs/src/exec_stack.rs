//! The initial process stack of a freshly exec'ed 64-bit program, built exactly as Linux builds it
//! in `fs/exec.c` (`copy_string_kernel`/`copy_strings`, `bprm_stack_limits`) and
//! `fs/binfmt_elf.c` (`create_elf_tables`), for a little-endian 64-bit guest with a downward
//! growing stack (x86_64 and arm64 share this layout).
//!
//! This module is pure: [`build_stack`] takes the strings and the auxiliary vector and returns the
//! bytes that belong at `[sp, stack_top)` plus the addresses the kernel records
//! (`mm->arg_start` and friends). Writing them into guest memory is the caller's job
//! (`binfmt_elf::load_elf`).
//!
//! Layout, from high addresses to low (as Linux lays it out):
//!
//! ```text
//! stack_top   ->  8 zero bytes          (bprm->p = vma->vm_end - sizeof(void *), __bprm_mm_init)
//!                 execfn string         (copy_string_kernel(bprm->filename); AT_EXECFN)
//!                 envp strings          (envp[0] lowest; env_start .. env_end)
//!                 argv strings          (argv[0] lowest; arg_start .. arg_end = env_start)
//!                 align down to 16      (arch_align_stack, without randomisation)
//!                 platform string       (AT_PLATFORM, if any)
//!                 16 random bytes       (AT_RANDOM)
//!                 padding               (STACK_ROUND: makes sp 16-byte aligned)
//!                 auxv pairs, AT_NULL last
//!                 NULL, envp pointers
//!                 NULL, argv pointers
//! sp          ->  argc
//! ```

use um_uapi::Errno;

/// Auxiliary vector keys: the uapi's (`include/uapi/linux/auxvec.h`).
pub use um_uapi::abi::auxv;

use auxv::{AT_EXECFN, AT_NULL, AT_PLATFORM, AT_RANDOM, AT_SECURE};

/// Linux `_STK_LIM`: the default stack rlimit (8 MiB).
pub const STK_LIM: u64 = 8 << 20;
/// Linux `ARG_MAX` (`include/uapi/linux/limits.h`): the floor of the argument space.
pub const ARG_MAX: u64 = 131_072;
/// Linux `MAX_ARG_STRINGS`: most strings in argv or envp.
pub const MAX_ARG_STRINGS: usize = 0x7FFF_FFFF;

const PTR: u64 = 8;

/// What the strings on a new stack may occupy (Linux `bprm_stack_limits`, `valid_arg_len`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgLimits {
    /// Bytes for all strings (including the top NULL word and the filename) plus the argv and
    /// envp pointer arrays.
    pub total: u64,
    /// Longest single string, NUL included (Linux `MAX_ARG_STRLEN` = `PAGE_SIZE * 32`).
    pub max_strlen: u64,
}

impl ArgLimits {
    /// The limits Linux derives from the stack rlimit and the page size (`bprm_stack_limits`):
    /// a quarter of the stack rlimit, at most 3/4 of `_STK_LIM`, at least `ARG_MAX`.
    pub fn linux(stack_rlimit: u64, page_size: u64) -> ArgLimits {
        let total = (STK_LIM / 4 * 3).min(stack_rlimit / 4).max(ARG_MAX);
        ArgLimits {
            total,
            max_strlen: page_size.saturating_mul(32),
        }
    }
}

impl Default for ArgLimits {
    /// An 8 MiB stack rlimit and 4 KiB pages: 2 MiB of arguments, 128 KiB per string.
    fn default() -> ArgLimits {
        ArgLimits::linux(STK_LIM, 4096)
    }
}

/// Inputs of [`build_stack`].
#[derive(Clone, Debug)]
pub struct StackParams<'a> {
    /// Argument strings, without NULs (Linux adds an empty `argv[0]` when argc is 0; that is
    /// `fs/exec.c`'s job and happens before this).
    pub argv: &'a [Vec<u8>],
    /// Environment strings, without NULs.
    pub envp: &'a [Vec<u8>],
    /// The filename passed to execve (`bprm->filename`), without NUL; AT_EXECFN points at it.
    pub execfn: &'a [u8],
    /// `ELF_PLATFORM` ("x86_64", "aarch64"), without NUL; AT_PLATFORM points at it.
    pub platform: Option<&'a [u8]>,
    /// The 16 bytes AT_RANDOM points at.
    pub random: [u8; 16],
    /// The auxiliary vector without AT_NULL. AT_RANDOM, AT_EXECFN and AT_PLATFORM are filled in
    /// by the builder: if a key is present its value is replaced in place, otherwise AT_RANDOM is
    /// inserted right after AT_SECURE (or appended) and AT_EXECFN then AT_PLATFORM are appended,
    /// which yields Linux's order when the caller passes Linux's order up to AT_HWCAP2.
    pub auxv: Vec<(u64, u64)>,
}

/// The built stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackImage {
    /// The initial stack pointer (16-byte aligned; argc is stored there).
    pub sp: u64,
    /// The bytes of `[sp, stack_top)`, to be written at address `sp`.
    pub bytes: Vec<u8>,
    /// `mm->arg_start`: address of the first argument string.
    pub argv_start: u64,
    /// `mm->arg_end`: end of the last argument string (its NUL included).
    pub argv_end: u64,
    /// `mm->env_start`: address of the first environment string.
    pub env_start: u64,
    /// `mm->env_end`: end of the last environment string (its NUL included).
    pub env_end: u64,
    /// Address of the execfn string (AT_EXECFN).
    pub execfn: u64,
    /// Address of the 16 random bytes (AT_RANDOM).
    pub random: u64,
    /// Address of the platform string (AT_PLATFORM), if any.
    pub platform: Option<u64>,
    /// The final auxiliary vector, AT_NULL included (`mm->saved_auxv`, for /proc/PID/auxv).
    pub auxv: Vec<(u64, u64)>,
}

/// Builds the initial stack below `stack_top` with the default [`ArgLimits`] (8 MiB rlimit).
pub fn build_stack(stack_top: u64, p: &StackParams<'_>) -> Result<StackImage, Errno> {
    build_stack_with(stack_top, p, &ArgLimits::default())
}

/// Builds the initial stack below `stack_top`, failing with `E2BIG` when the strings and the
/// pointer arrays exceed `limits` (Linux checks this in `fs/exec.c` while copying the strings),
/// and with `EFAULT` when the image would not fit below `stack_top`.
pub fn build_stack_with(
    stack_top: u64,
    p: &StackParams<'_>,
    limits: &ArgLimits,
) -> Result<StackImage, Errno> {
    let argc = p.argv.len();
    let envc = p.envp.len();
    if argc > MAX_ARG_STRINGS || envc > MAX_ARG_STRINGS {
        return Err(Errno::E2BIG);
    }
    // bprm_stack_limits(): the pointer arrays count against the limit (argc at least 1).
    let ptr_size = (argc.max(1) as u64 + envc as u64) * PTR;
    if limits.total <= ptr_size {
        return Err(Errno::E2BIG);
    }
    let room = limits.total - ptr_size;
    // valid_arg_len(): each string, NUL included, at most MAX_ARG_STRLEN.
    let mut strings = PTR; // the NULL word at the very top
    let all = std::iter::once(p.execfn)
        .chain(p.envp.iter().map(|v| v.as_slice()))
        .chain(p.argv.iter().map(|v| v.as_slice()));
    for s in all {
        let len = s.len() as u64 + 1;
        if len > limits.max_strlen {
            return Err(Errno::E2BIG);
        }
        strings += len;
    }
    // copy_strings(): `if (bprm->p < bprm->argmin) E2BIG`.
    if strings > room {
        return Err(Errno::E2BIG);
    }

    // Addresses, top down. __bprm_mm_init(): bprm->p = vma->vm_end - sizeof(void *).
    let sub = |a: u64, b: u64| a.checked_sub(b).ok_or(Errno::EFAULT);
    let mut pos = sub(stack_top, PTR)?;
    pos = sub(pos, p.execfn.len() as u64 + 1)?;
    let execfn_addr = pos;
    // copy_strings() walks the vector from the last string to the first, so string 0 ends lowest.
    let mut env_addrs = vec![0u64; envc];
    for (i, s) in p.envp.iter().enumerate().rev() {
        pos = sub(pos, s.len() as u64 + 1)?;
        env_addrs[i] = pos;
    }
    let env_start = pos;
    let mut arg_addrs = vec![0u64; argc];
    for (i, s) in p.argv.iter().enumerate().rev() {
        pos = sub(pos, s.len() as u64 + 1)?;
        arg_addrs[i] = pos;
    }
    let argv_start = pos;

    // create_elf_tables(): p = arch_align_stack(p) (no randomisation: just & ~0xf).
    pos &= !0xf;
    let platform_addr = match p.platform {
        Some(plat) => {
            pos = sub(pos, plat.len() as u64 + 1)?;
            Some(pos)
        }
        None => None,
    };
    pos = sub(pos, 16)?;
    let random_addr = pos;

    // The auxiliary vector with the builder's three entries filled in.
    let mut auxv = p.auxv.clone();
    auxv.retain(|&(k, _)| k != AT_NULL);
    set_or_insert(&mut auxv, AT_RANDOM, random_addr, Some(AT_SECURE));
    set_or_insert(&mut auxv, AT_EXECFN, execfn_addr, None);
    if let Some(a) = platform_addr {
        set_or_insert(&mut auxv, AT_PLATFORM, a, None);
    }
    auxv.push((AT_NULL, 0));

    // sp = STACK_ADD(p, ei_index); items = (argc + 1) + (envc + 1) + 1;
    // bprm->p = STACK_ROUND(sp, items) = (sp - items * 8) & ~15.
    let ei_words = auxv.len() as u64 * 2;
    let items = (argc as u64 + 1) + (envc as u64 + 1) + 1;
    let sp = sub(sub(pos, ei_words * PTR)?, items * PTR)? & !0xf;

    let len = usize::try_from(stack_top - sp).map_err(|_| Errno::E2BIG)?;
    let mut bytes = vec![0u8; len];
    let off = |addr: u64| (addr - sp) as usize;
    let put_str = |bytes: &mut Vec<u8>, addr: u64, s: &[u8]| {
        let o = off(addr);
        bytes[o..o + s.len()].copy_from_slice(s);
        bytes[o + s.len()] = 0;
    };
    put_str(&mut bytes, execfn_addr, p.execfn);
    for (s, &a) in p.envp.iter().zip(&env_addrs) {
        put_str(&mut bytes, a, s);
    }
    for (s, &a) in p.argv.iter().zip(&arg_addrs) {
        put_str(&mut bytes, a, s);
    }
    if let (Some(plat), Some(a)) = (p.platform, platform_addr) {
        put_str(&mut bytes, a, plat);
    }
    let o = off(random_addr);
    bytes[o..o + 16].copy_from_slice(&p.random);

    // argc, argv[], NULL, envp[], NULL, auxv (create_elf_tables order).
    let mut words: Vec<u64> = Vec::with_capacity(items as usize + ei_words as usize);
    words.push(argc as u64);
    words.extend_from_slice(&arg_addrs);
    words.push(0);
    words.extend_from_slice(&env_addrs);
    words.push(0);
    for &(k, v) in &auxv {
        words.push(k);
        words.push(v);
    }
    for (i, w) in words.iter().enumerate() {
        bytes[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
    }

    Ok(StackImage {
        sp,
        bytes,
        argv_start,
        argv_end: env_start,
        env_start,
        env_end: execfn_addr,
        execfn: execfn_addr,
        random: random_addr,
        platform: platform_addr,
        auxv,
    })
}

/// Replaces the value of `key` if present; otherwise inserts it after `after` (if present) or
/// appends it.
fn set_or_insert(auxv: &mut Vec<(u64, u64)>, key: u64, val: u64, after: Option<u64>) {
    if let Some(e) = auxv.iter_mut().find(|e| e.0 == key) {
        e.1 = val;
        return;
    }
    match after.and_then(|a| auxv.iter().position(|e| e.0 == a)) {
        Some(i) => auxv.insert(i + 1, (key, val)),
        None => auxv.push((key, val)),
    }
}

/// Test helpers shared with `binfmt_elf`'s tests: parse a stack image back.
#[cfg(test)]
pub(crate) mod parse {
    /// What a C runtime's `_start` finds at sp.
    #[derive(Debug)]
    pub struct Parsed {
        pub argc: u64,
        pub argv: Vec<Vec<u8>>,
        pub envp: Vec<Vec<u8>>,
        pub auxv: Vec<(u64, u64)>,
    }

    /// Reads guest memory through `read(addr, buf)`.
    pub fn parse_with(sp: u64, read: &mut dyn FnMut(u64, &mut [u8])) -> Parsed {
        let word = |read: &mut dyn FnMut(u64, &mut [u8]), a: u64| {
            let mut b = [0u8; 8];
            read(a, &mut b);
            u64::from_le_bytes(b)
        };
        let cstr = |read: &mut dyn FnMut(u64, &mut [u8]), mut a: u64| {
            let mut s = Vec::new();
            loop {
                let mut b = [0u8; 1];
                read(a, &mut b);
                if b[0] == 0 {
                    return s;
                }
                s.push(b[0]);
                a += 1;
            }
        };
        let argc = word(read, sp);
        let mut a = sp + 8;
        let mut argv = Vec::new();
        for _ in 0..argc {
            let ptr = word(read, a);
            argv.push(cstr(read, ptr));
            a += 8;
        }
        assert_eq!(word(read, a), 0, "argv not NULL-terminated");
        a += 8;
        let mut envp = Vec::new();
        loop {
            let ptr = word(read, a);
            a += 8;
            if ptr == 0 {
                break;
            }
            envp.push(cstr(read, ptr));
        }
        let mut auxv = Vec::new();
        loop {
            let k = word(read, a);
            let v = word(read, a + 8);
            a += 16;
            auxv.push((k, v));
            if k == 0 {
                break;
            }
        }
        Parsed {
            argc,
            argv,
            envp,
            auxv,
        }
    }

    /// Reads a C string at `addr` through `read`.
    pub fn cstr_at(read: &mut dyn FnMut(u64, &mut [u8]), mut addr: u64) -> Vec<u8> {
        let mut s = Vec::new();
        loop {
            let mut b = [0u8; 1];
            read(addr, &mut b);
            if b[0] == 0 {
                return s;
            }
            s.push(b[0]);
            addr += 1;
        }
    }

    /// Looks up an auxv key.
    pub fn aux(auxv: &[(u64, u64)], key: u64) -> Option<u64> {
        auxv.iter().find(|e| e.0 == key).map(|e| e.1)
    }
}

#[cfg(test)]
mod tests {
    use super::auxv::*;
    use super::parse::{aux, cstr_at, parse_with};
    use super::*;

    const TOP: u64 = 0x7fff_ffff_f000;

    fn strs(v: &[&str]) -> Vec<Vec<u8>> {
        v.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    fn reader(img: &StackImage, top: u64) -> impl FnMut(u64, &mut [u8]) + '_ {
        move |a: u64, buf: &mut [u8]| {
            assert!(
                a >= img.sp && a + buf.len() as u64 <= top,
                "read outside the image: {a:#x}"
            );
            let o = (a - img.sp) as usize;
            buf.copy_from_slice(&img.bytes[o..o + buf.len()]);
        }
    }

    fn base_auxv() -> Vec<(u64, u64)> {
        vec![
            (AT_HWCAP, 0x1234),
            (AT_PAGESZ, 4096),
            (AT_CLKTCK, 100),
            (AT_PHDR, 0x40_0040),
            (AT_PHENT, 56),
            (AT_PHNUM, 9),
            (AT_BASE, 0),
            (AT_FLAGS, 0),
            (AT_ENTRY, 0x40_1000),
            (AT_UID, 1000),
            (AT_EUID, 1000),
            (AT_GID, 100),
            (AT_EGID, 100),
            (AT_SECURE, 0),
            (AT_HWCAP2, 2),
        ]
    }

    fn check(argv: &[Vec<u8>], envp: &[Vec<u8>], platform: Option<&[u8]>) {
        let random: [u8; 16] = core::array::from_fn(|i| 0xa0 + i as u8);
        let p = StackParams {
            argv,
            envp,
            execfn: b"/usr/bin/prog",
            platform,
            random,
            auxv: base_auxv(),
        };
        let img = build_stack(TOP, &p).unwrap();
        assert_eq!(img.sp % 16, 0);
        assert_eq!(img.bytes.len() as u64, TOP - img.sp);
        // The top word is NULL and the filename sits right below it.
        assert_eq!(&img.bytes[img.bytes.len() - 8..], &[0; 8]);
        let mut rd = reader(&img, TOP);
        let parsed = parse_with(img.sp, &mut rd);
        assert_eq!(parsed.argc, argv.len() as u64);
        assert_eq!(parsed.argv, argv);
        assert_eq!(parsed.envp, envp);
        // Linux's order: the caller's entries, AT_RANDOM after AT_SECURE, then AT_HWCAP2,
        // AT_EXECFN, AT_PLATFORM, AT_NULL.
        let keys: Vec<u64> = parsed.auxv.iter().map(|e| e.0).collect();
        let mut want = vec![
            AT_HWCAP, AT_PAGESZ, AT_CLKTCK, AT_PHDR, AT_PHENT, AT_PHNUM, AT_BASE, AT_FLAGS,
            AT_ENTRY, AT_UID, AT_EUID, AT_GID, AT_EGID, AT_SECURE, AT_RANDOM, AT_HWCAP2, AT_EXECFN,
        ];
        if platform.is_some() {
            want.push(AT_PLATFORM);
        }
        want.push(AT_NULL);
        assert_eq!(keys, want);
        assert_eq!(parsed.auxv, img.auxv);
        assert_eq!(aux(&parsed.auxv, AT_PHNUM), Some(9));
        let r = aux(&parsed.auxv, AT_RANDOM).unwrap();
        assert_eq!(r, img.random);
        let mut got = [0u8; 16];
        rd(r, &mut got);
        assert_eq!(got, random);
        let e = aux(&parsed.auxv, AT_EXECFN).unwrap();
        assert_eq!(cstr_at(&mut rd, e), b"/usr/bin/prog");
        assert_eq!(e + b"/usr/bin/prog".len() as u64 + 1, TOP - 8);
        match platform {
            Some(pl) => assert_eq!(
                cstr_at(&mut rd, aux(&parsed.auxv, AT_PLATFORM).unwrap()),
                pl
            ),
            None => assert_eq!(aux(&parsed.auxv, AT_PLATFORM), None),
        }
        // The recorded ranges cover exactly the strings, argv below envp below execfn.
        let arg_bytes: usize = argv.iter().map(|s| s.len() + 1).sum();
        let env_bytes: usize = envp.iter().map(|s| s.len() + 1).sum();
        assert_eq!(img.argv_end - img.argv_start, arg_bytes as u64);
        assert_eq!(img.env_end - img.env_start, env_bytes as u64);
        assert_eq!(img.argv_end, img.env_start);
        assert_eq!(img.env_end, img.execfn);
        if let Some(first) = argv.first() {
            assert_eq!(cstr_at(&mut rd, img.argv_start), *first);
        }
        // The random bytes lie below the strings, above the auxv.
        assert!(img.random + 16 <= img.argv_start);
        let auxv_end = img.sp
            + 8 * (1 + argv.len() as u64 + 1 + envp.len() as u64 + 1)
            + 16 * img.auxv.len() as u64;
        assert!(auxv_end <= img.random);
        assert!(
            img.random - auxv_end < 16,
            "more padding than STACK_ROUND needs"
        );
    }

    #[test]
    fn layouts_for_several_counts() {
        let env = strs(&["HOME=/root", "PATH=/bin:/usr/bin", "TERM=xterm"]);
        for n in 0..6 {
            let argv: Vec<Vec<u8>> = (0..n)
                .map(|i| format!("arg{i}-{}", "x".repeat(i)).into_bytes())
                .collect();
            check(&argv, &env, Some(b"x86_64"));
            check(&argv, &env[..1], None);
            check(&argv, &[], Some(b"aarch64"));
        }
    }

    #[test]
    fn padding_differs_with_parity() {
        // Adding one pointer word flips whether STACK_ROUND has to pad by 8 bytes.
        let env = strs(&["A=1"]);
        let pads: Vec<u64> = (1..6)
            .map(|n| {
                let argv: Vec<Vec<u8>> = (0..n).map(|_| Vec::new()).collect();
                let p = StackParams {
                    argv: &argv,
                    envp: &env,
                    execfn: b"x",
                    platform: None,
                    random: [0; 16],
                    auxv: base_auxv(),
                };
                let img = build_stack(TOP, &p).unwrap();
                assert_eq!(img.sp % 16, 0);
                let words = 1 + (n as u64 + 1) + (env.len() as u64 + 1) + 2 * img.auxv.len() as u64;
                img.random - (img.sp + 8 * words)
            })
            .collect();
        assert_eq!(pads, vec![8, 0, 8, 0, 8]);
    }

    #[test]
    fn exact_layout_matches_linux() {
        // argv = ["a"], envp = [], execfn "e", no platform, auxv = [] -> hand-computed layout.
        let argv = strs(&["a"]);
        let p = StackParams {
            argv: &argv,
            envp: &[],
            execfn: b"e",
            platform: None,
            random: [7; 16],
            auxv: vec![],
        };
        let img = build_stack(0x1000_0000, &p).unwrap();
        // top-8 = 0xffffff8; "e\0" at 0xffffff6; "a\0" at 0xffffff4; align -> 0xffffff0;
        // random at 0xfffffe0; auxv = RANDOM, EXECFN, NULL = 6 words -> 0xfffffb0;
        // items = 2 + 1 + 1 = 4 words -> 0xfffff90.
        assert_eq!(img.execfn, 0x0fff_fff6);
        assert_eq!(img.argv_start, 0x0fff_fff4);
        assert_eq!(img.random, 0x0fff_ffe0);
        assert_eq!(img.sp, 0x0fff_ff90);
        assert_eq!(
            img.auxv,
            vec![
                (AT_RANDOM, 0x0fff_ffe0),
                (AT_EXECFN, 0x0fff_fff6),
                (AT_NULL, 0)
            ]
        );
    }

    #[test]
    fn caller_placeholders_are_filled_in_place() {
        let argv = strs(&["prog"]);
        let p = StackParams {
            argv: &argv,
            envp: &[],
            execfn: b"prog",
            platform: Some(b"x86_64"),
            random: [1; 16],
            auxv: vec![
                (AT_EXECFN, 0),
                (AT_PLATFORM, 0),
                (AT_RANDOM, 0),
                (AT_PAGESZ, 4096),
            ],
        };
        let img = build_stack(TOP, &p).unwrap();
        let keys: Vec<u64> = img.auxv.iter().map(|e| e.0).collect();
        assert_eq!(
            keys,
            vec![AT_EXECFN, AT_PLATFORM, AT_RANDOM, AT_PAGESZ, AT_NULL]
        );
        assert_eq!(aux(&img.auxv, AT_RANDOM), Some(img.random));
        assert_eq!(aux(&img.auxv, AT_EXECFN), Some(img.execfn));
        assert_eq!(aux(&img.auxv, AT_PLATFORM), img.platform);
    }

    #[test]
    fn e2big() {
        // One string longer than MAX_ARG_STRLEN.
        let big = vec![vec![b'x'; 32 * 4096]];
        let p = StackParams {
            argv: &big,
            envp: &[],
            execfn: b"f",
            platform: None,
            random: [0; 16],
            auxv: vec![],
        };
        assert_eq!(build_stack(TOP, &p), Err(Errno::E2BIG));
        // Just fits: 32 * 4096 bytes with the NUL.
        let ok = vec![vec![b'x'; 32 * 4096 - 1]];
        let p = StackParams { argv: &ok, ..p };
        assert!(build_stack(TOP, &p).is_ok());
        // Many strings over the 2 MiB total.
        let many: Vec<Vec<u8>> = (0..40).map(|_| vec![b'y'; 60_000]).collect();
        let p = StackParams { argv: &many, ..p };
        assert_eq!(build_stack(TOP, &p), Err(Errno::E2BIG));
        // ... which fit with a larger rlimit.
        let lim = ArgLimits::linux(64 << 20, 4096);
        assert_eq!(lim.total, 6 << 20);
        assert!(build_stack_with(TOP, &p, &lim).is_ok());
        // A tiny rlimit still leaves ARG_MAX.
        assert_eq!(ArgLimits::linux(4096, 4096).total, ARG_MAX);
        // Pointer arrays alone can exceed the limit.
        let tiny = ArgLimits {
            total: 64,
            max_strlen: 4096,
        };
        let eight: Vec<Vec<u8>> = (0..8).map(|_| Vec::new()).collect();
        let p = StackParams { argv: &eight, ..p };
        assert_eq!(build_stack_with(TOP, &p, &tiny), Err(Errno::E2BIG));
    }

    #[test]
    fn max_arg_strlen_follows_the_page_size() {
        // MAX_ARG_STRLEN is 32 pages: 128 KiB at 4K, 512 KiB at 16K.
        let l16 = ArgLimits::linux(STK_LIM, 16384);
        assert_eq!(l16.max_strlen, 512 << 10);
        assert_eq!(l16.total, ArgLimits::linux(STK_LIM, 4096).total);
        let s = vec![vec![b'x'; 32 * 4096]];
        let p = StackParams {
            argv: &s,
            envp: &[],
            execfn: b"f",
            platform: None,
            random: [0; 16],
            auxv: vec![(AT_PAGESZ, 16384)],
        };
        // Too long for 4K pages, fine with 16K pages.
        assert_eq!(build_stack(TOP, &p), Err(Errno::E2BIG));
        let img = build_stack_with(TOP, &p, &l16).unwrap();
        assert_eq!(aux(&img.auxv, AT_PAGESZ), Some(16384));
        let s = vec![vec![b'x'; 32 * 16384]];
        let p = StackParams { argv: &s, ..p };
        assert_eq!(build_stack_with(TOP, &p, &l16), Err(Errno::E2BIG));
    }

    #[test]
    fn too_close_to_zero_is_efault() {
        let argv = strs(&["a"]);
        let p = StackParams {
            argv: &argv,
            envp: &[],
            execfn: b"e",
            platform: None,
            random: [0; 16],
            auxv: vec![],
        };
        assert_eq!(build_stack(0x40, &p), Err(Errno::EFAULT));
    }
}
