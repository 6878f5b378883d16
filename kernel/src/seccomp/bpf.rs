//! Classic BPF as seccomp runs it: the checks a program must pass before it is attached
//! (net/core/filter.c `bpf_check_classic`, `check_load_and_stores`, then kernel/seccomp.c
//! `seccomp_check_filter`), the interpreter over `struct seccomp_data`, and the analysis
//! behind the per-syscall verdict cache (kernel/seccomp.c `seccomp_cache_prepare`).
//!
//! Every rule failure is `EINVAL`, as in Linux; the order of the checks therefore does not
//! show. A program that passed [`check`] only jumps forward and inside itself, reads scratch
//! memory it wrote and ends in RET, so [`run`] always ends; it still never indexes out of
//! range (a fault would be a kernel bug, answered by KILL_THREAD's value 0, not a panic).

use um_uapi::Errno;
use um_uapi::abi::seccomp::{BPF_MAXINSNS, BPF_MEMWORDS, SECCOMP_RET_ALLOW, SockFilter, bpf::*};

/// `sizeof(struct seccomp_data)`: what `BPF_LEN` loads and the bound of `BPF_ABS` offsets.
const DATA_LEN: u32 = 64;

/// Whether `code` is a classic BPF instruction at all (net/core/filter.c `chk_code_allowed`).
fn code_known(code: u16) -> bool {
    const ALU_OPS: [u16; 11] = [ADD, SUB, MUL, DIV, MOD, AND, OR, XOR, LSH, RSH, NEG];
    const JMP_OPS: [u16; 4] = [JEQ, JGE, JGT, JSET];
    let class = code & 0x07;
    match class {
        ALU => {
            let op = code & 0xf0;
            let src = code & 0x08;
            ALU_OPS.contains(&op) && code & !0xf8 == ALU && (op != NEG || src == K)
        }
        LD => matches!(
            code & !0x07,
            c if c == W | ABS || c == H | ABS || c == B | ABS
                || c == W | IND || c == H | IND || c == B | IND
                || c == W | LEN || c == IMM || c == MEM
        ),
        LDX => matches!(code & !0x07, c if c == W | LEN || c == B | MSH || c == IMM || c == MEM),
        ST | STX => code == class,
        MISC => code == MISC | TAX || code == MISC | TXA,
        RET => code == RET | K || code == RET | A,
        JMP => code == JMP | JA || (JMP_OPS.contains(&(code & 0xf0)) && code & !0xf8 == JMP),
        _ => false,
    }
}

fn is_cond_jump(code: u16) -> bool {
    code & 0x07 == JMP && code != JMP | JA
}

/// net/core/filter.c `bpf_check_classic`: known instructions, no division by a constant
/// zero, shifts below 32, scratch slots in range, jumps inside the program, no ancillary
/// loads, a RET at the end, and every scratch slot written before it is read.
fn check_classic(p: &[SockFilter]) -> Result<(), Errno> {
    let flen = p.len();
    if flen == 0 || flen > BPF_MAXINSNS {
        return Err(Errno::EINVAL);
    }
    for (pc, f) in p.iter().enumerate() {
        if !code_known(f.code) {
            return Err(Errno::EINVAL);
        }
        let c = f.code;
        let bad = if c == ALU | DIV | K || c == ALU | MOD | K {
            f.k == 0
        } else if c == ALU | LSH | K || c == ALU | RSH | K {
            f.k >= 32
        } else if c == LD | MEM || c == LDX | MEM || c == ST || c == STX {
            f.k >= BPF_MEMWORDS
        } else if c == JMP | JA {
            u64::from(f.k) >= (flen - pc - 1) as u64
        } else if is_cond_jump(c) {
            pc + usize::from(f.jt) + 1 >= flen || pc + usize::from(f.jf) + 1 >= flen
        } else if c == LD | W | ABS || c == LD | H | ABS || c == LD | B | ABS {
            // SKF_AD_OFF (-0x1000): the socket ancillary loads; none exist for seccomp
            // (its own check below refuses every offset past seccomp_data anyway).
            f.k >= 0xffff_f000
        } else {
            false
        };
        if bad {
            return Err(Errno::EINVAL);
        }
    }
    let last = p[flen - 1].code;
    if last != RET | K && last != RET | A {
        return Err(Errno::EINVAL);
    }
    check_load_and_stores(p)
}

/// net/core/filter.c `check_load_and_stores`: along every path, a scratch slot is stored
/// before it is loaded (so the interpreter need not clear them).
fn check_load_and_stores(p: &[SockFilter]) -> Result<(), Errno> {
    let mut masks = vec![0xffffu16; p.len()];
    let mut memvalid: u16 = 0;
    for (pc, f) in p.iter().enumerate() {
        memvalid &= masks[pc];
        let c = f.code;
        if c == ST || c == STX {
            memvalid |= 1 << f.k;
        } else if c == LD | MEM || c == LDX | MEM {
            if memvalid & (1 << f.k) == 0 {
                return Err(Errno::EINVAL);
            }
        } else if c == JMP | JA {
            masks[pc + 1 + f.k as usize] &= memvalid;
            memvalid = !0;
        } else if is_cond_jump(c) {
            masks[pc + 1 + usize::from(f.jt)] &= memvalid;
            masks[pc + 1 + usize::from(f.jf)] &= memvalid;
            memvalid = !0;
        }
    }
    Ok(())
}

/// Whether seccomp runs this (checked, rewritten) instruction (kernel/seccomp.c
/// `seccomp_check_filter`'s list: no MOD, no indirect or byte/halfword loads, no MSH).
fn seccomp_allowed(c: u16) -> bool {
    const ALU_OPS: [u16; 10] = [ADD, SUB, MUL, DIV, AND, OR, XOR, LSH, RSH, NEG];
    match c & 0x07 {
        ALU => ALU_OPS.contains(&(c & 0xf0)),
        LD => c == LD | W | ABS || c == LD | IMM || c == LD | MEM,
        LDX => c == LDX | IMM || c == LDX | MEM,
        ST | STX | MISC | RET | JMP => true,
        _ => false,
    }
}

/// Checks a program with Linux's rules and returns it as seccomp runs it: `BPF_LEN` loads
/// become the constant `sizeof(struct seccomp_data)`; `BPF_ABS` loads must be 32-bit words
/// inside `struct seccomp_data` at 4-byte aligned offsets. `EINVAL` for any broken rule.
pub fn check(p: &[SockFilter]) -> Result<Vec<SockFilter>, Errno> {
    check_classic(p)?;
    let mut out = p.to_vec();
    for f in &mut out {
        if f.code == LD | W | ABS {
            if f.k >= DATA_LEN || f.k & 3 != 0 {
                return Err(Errno::EINVAL);
            }
        } else if f.code == LD | W | LEN {
            f.code = LD | IMM;
            f.k = DATA_LEN;
        } else if f.code == LDX | W | LEN {
            f.code = LDX | IMM;
            f.k = DATA_LEN;
        }
        if !seccomp_allowed(f.code) {
            return Err(Errno::EINVAL);
        }
    }
    Ok(out)
}

/// Runs a checked program; `load(k)` gives the 32-bit word at offset `k` of the data, or
/// `None` when it is not known (the cache analysis), which ends the run with `None`.
pub fn run_with(p: &[SockFilter], mut load: impl FnMut(u32) -> Option<u32>) -> Option<u32> {
    let (mut a, mut x) = (0u32, 0u32);
    let mut mem = [0u32; BPF_MEMWORDS as usize];
    let mut pc = 0usize;
    loop {
        let f = *p.get(pc)?;
        pc += 1;
        let k = f.k;
        match f.code & 0x07 {
            LD => match f.code {
                c if c == LD | W | ABS => a = load(k)?,
                c if c == LD | IMM => a = k,
                _ => a = *mem.get(k as usize)?,
            },
            LDX => match f.code {
                c if c == LDX | IMM => x = k,
                _ => x = *mem.get(k as usize)?,
            },
            ST => *mem.get_mut(k as usize)? = a,
            STX => *mem.get_mut(k as usize)? = x,
            ALU => {
                let v = if f.code & X != 0 { x } else { k };
                a = match f.code & 0xf0 {
                    ADD => a.wrapping_add(v),
                    SUB => a.wrapping_sub(v),
                    MUL => a.wrapping_mul(v),
                    // A division by X = 0 ends the program with 0 (bpf_convert_filter: "for
                    // cBPF programs, this was always return 0").
                    DIV => match a.checked_div(v) {
                        Some(q) => q,
                        None => return Some(0),
                    },
                    AND => a & v,
                    OR => a | v,
                    XOR => a ^ v,
                    // 32-bit shifts by X use the low five bits, as the interpreter and JITs.
                    LSH => a.wrapping_shl(v & 31),
                    RSH => a.wrapping_shr(v & 31),
                    NEG => a.wrapping_neg(),
                    _ => return Some(0),
                };
            }
            JMP => {
                if f.code == JMP | JA {
                    pc += k as usize;
                } else {
                    let v = if f.code & X != 0 { x } else { k };
                    let taken = match f.code & 0xf0 {
                        JEQ => a == v,
                        JGT => a > v,
                        JGE => a >= v,
                        _ => a & v != 0,
                    };
                    pc += usize::from(if taken { f.jt } else { f.jf });
                }
            }
            RET => return Some(if f.code == RET | A { a } else { k }),
            _ => {
                a = if f.code == MISC | TAX {
                    x = a;
                    a
                } else {
                    x
                }
            }
        }
    }
}

/// Runs a checked program over `data` (the 16 words of `struct seccomp_data`).
pub fn run(p: &[SockFilter], data: &[u32; 16]) -> u32 {
    run_with(p, |k| data.get(k as usize / 4).copied()).unwrap_or(0)
}

/// Whether the program allows syscall `nr` of `arch` whatever its arguments and address
/// (kernel/seccomp.c `seccomp_is_const_allow`, here by running it with only `nr` and `arch`
/// known): the verdict the cache may remember.
pub fn const_allow(p: &[SockFilter], nr: u32, arch: u32) -> bool {
    run_with(p, |k| match k {
        0 => Some(nr),
        4 => Some(arch),
        _ => None,
    }) == Some(SECCOMP_RET_ALLOW)
}

#[cfg(test)]
mod tests {
    use super::*;
    use um_uapi::abi::seccomp::*;

    fn stmt(code: u16, k: u32) -> SockFilter {
        SockFilter {
            code,
            jt: 0,
            jf: 0,
            k,
        }
    }
    fn jump(code: u16, k: u32, jt: u8, jf: u8) -> SockFilter {
        SockFilter { code, jt, jf, k }
    }
    fn words(nr: i32, args: [u64; 6]) -> [u32; 16] {
        let mut w = [0u32; 16];
        w[0] = nr as u32;
        w[1] = AUDIT_ARCH_X86_64;
        w[2] = 0x1000;
        for (i, a) in args.iter().enumerate() {
            w[4 + 2 * i] = *a as u32;
            w[5 + 2 * i] = (*a >> 32) as u32;
        }
        w
    }

    /// arch check, then ERRNO(1) for `nr`, else ALLOW.
    fn deny(nr: u32) -> Vec<SockFilter> {
        vec![
            stmt(LD | W | ABS, 4),
            jump(JMP | JEQ | K, AUDIT_ARCH_X86_64, 1, 0),
            stmt(RET | K, SECCOMP_RET_KILL_PROCESS),
            stmt(LD | W | ABS, 0),
            jump(JMP | JEQ | K, nr, 0, 1),
            stmt(RET | K, SECCOMP_RET_ERRNO | 1),
            stmt(RET | K, SECCOMP_RET_ALLOW),
        ]
    }

    #[test]
    fn valid_programs_pass_and_run() {
        let p = check(&deny(39)).unwrap();
        assert_eq!(run(&p, &words(39, [0; 6])), SECCOMP_RET_ERRNO | 1);
        assert_eq!(run(&p, &words(40, [0; 6])), SECCOMP_RET_ALLOW);
        let mut w = words(39, [0; 6]);
        w[1] = AUDIT_ARCH_AARCH64;
        assert_eq!(run(&p, &w), SECCOMP_RET_KILL_PROCESS);
        // The cache may keep 40, not 39.
        assert!(const_allow(&p, 40, AUDIT_ARCH_X86_64));
        assert!(!const_allow(&p, 39, AUDIT_ARCH_X86_64));
        assert!(!const_allow(&p, 40, AUDIT_ARCH_AARCH64));
    }

    #[test]
    fn argument_reads_scratch_memory_and_alu() {
        // A = args[0] low word; M[3] = A; X = 5; A = M[3] * X + 1; return A.
        let p = check(&[
            stmt(LD | W | ABS, 16),
            stmt(ST, 3),
            stmt(LDX | IMM, 5),
            stmt(LD | MEM, 3),
            stmt(ALU | MUL | X, 0),
            stmt(ALU | ADD | K, 1),
            stmt(RET | A, 0),
        ])
        .unwrap();
        assert_eq!(run(&p, &words(0, [7, 0, 0, 0, 0, 0])), 36);
        // An argument read makes the verdict uncacheable.
        assert!(!const_allow(&p, 0, AUDIT_ARCH_X86_64));
        // BPF_LEN is the size of seccomp_data.
        let p = check(&[stmt(LD | W | LEN, 0), stmt(RET | A, 0)]).unwrap();
        assert_eq!(run(&p, &words(0, [0; 6])), 64);
        // Shifts, NEG, TAX/TXA, JSET, JGT, JGE and the high word of an argument.
        let p = check(&[
            stmt(LD | W | ABS, 20),
            jump(JMP | JSET | K, 0x8000_0000, 0, 3),
            stmt(ALU | NEG, 0),
            stmt(MISC | TAX, 0),
            stmt(MISC | TXA, 0),
            jump(JMP | JGT | K, 10, 1, 0),
            stmt(RET | K, 1),
            jump(JMP | JGE | K, 0x8000_0000, 0, 1),
            stmt(RET | K, 2),
            stmt(ALU | RSH | K, 4),
            stmt(RET | A, 0),
        ])
        .unwrap();
        assert_eq!(
            run(&p, &words(0, [0xffff_fff0_0000_0000, 0, 0, 0, 0, 0])),
            1
        );
        assert_eq!(
            run(&p, &words(0, [0x0000_0010_0000_0000, 0, 0, 0, 0, 0])),
            1
        );
        assert_eq!(run(&p, &words(0, [0x1_0000_0000, 0, 0, 0, 0, 0])), 1);
        assert_eq!(
            run(&p, &words(0, [0x8000_0000_0000_0000, 0, 0, 0, 0, 0])),
            2
        );
        assert_eq!(
            run(&p, &words(0, [0x7000_0000_0000_0000, 0, 0, 0, 0, 0])),
            0x0700_0000
        );
    }

    #[test]
    fn division_by_x_zero_returns_zero() {
        let p = check(&[stmt(LD | IMM, 8), stmt(ALU | DIV | X, 0), stmt(RET | A, 0)]).unwrap();
        assert_eq!(run(&p, &words(0, [0; 6])), 0);
        let p = check(&[
            stmt(LD | IMM, 8),
            stmt(LDX | IMM, 2),
            stmt(ALU | DIV | X, 0),
            stmt(RET | A, 0),
        ])
        .unwrap();
        assert_eq!(run(&p, &words(0, [0; 6])), 4);
    }

    #[test]
    fn invalid_programs_are_einval() {
        let ret = stmt(RET | K, SECCOMP_RET_ALLOW);
        let bad: Vec<(&str, Vec<SockFilter>)> = vec![
            ("empty", vec![]),
            ("too long", vec![ret; BPF_MAXINSNS + 1]),
            ("no RET at the end", vec![stmt(LD | W | ABS, 0)]),
            ("unknown opcode", vec![stmt(0xff, 0), ret]),
            ("unaligned load", vec![stmt(LD | W | ABS, 2), ret]),
            ("load past seccomp_data", vec![stmt(LD | W | ABS, 64), ret]),
            ("byte load", vec![stmt(LD | B | ABS, 0), ret]),
            ("halfword load", vec![stmt(LD | H | ABS, 0), ret]),
            ("indirect load", vec![stmt(LD | W | IND, 0), ret]),
            ("MSH", vec![stmt(LDX | B | MSH, 0), ret]),
            (
                "MOD (not in seccomp's list)",
                vec![stmt(ALU | MOD | K, 3), ret],
            ),
            (
                "division by constant zero",
                vec![stmt(ALU | DIV | K, 0), ret],
            ),
            ("shift by 32", vec![stmt(ALU | LSH | K, 32), ret]),
            ("scratch slot 16", vec![stmt(ST, 16), ret]),
            ("read before write", vec![stmt(LD | MEM, 0), ret]),
            ("JA past the end", vec![stmt(JMP | JA, 1), ret]),
            ("jt past the end", vec![jump(JMP | JEQ | K, 0, 1, 0), ret]),
            ("jf past the end", vec![jump(JMP | JEQ | K, 0, 0, 1), ret]),
            (
                "read written on one branch only",
                vec![
                    jump(JMP | JEQ | K, 0, 0, 1),
                    stmt(ST, 0),
                    stmt(LD | MEM, 0),
                    ret,
                ],
            ),
        ];
        for (what, p) in bad {
            assert_eq!(check(&p), Err(Errno::EINVAL), "{what}");
        }
        // Written on both branches: fine.
        check(&[
            jump(JMP | JEQ | K, 0, 0, 2),
            stmt(ST, 0),
            stmt(JMP | JA, 1),
            stmt(ST, 0),
            stmt(LD | MEM, 0),
            ret,
        ])
        .unwrap();
        check(&vec![ret; BPF_MAXINSNS]).unwrap();
    }
}
