//! The verifier of cgroup device programs (a simplified, safe subset of Linux
//! `kernel/bpf/verifier.c`) and their interpreter (`kernel/bpf/core.c` `___bpf_prog_run`).
//!
//! Accepted: ALU and ALU64 (all operations, `BPF_END`), JMP and JMP32 conditional jumps and
//! `JA` that go forward (a back-edge is refused, so every run ends within `insn_cnt` steps:
//! Linux's bounded loops are not needed by runc's or crun's programs), `LD_IMM64` of a
//! plain constant, `LDX` from the context `struct bpf_cgroup_dev_ctx` (4-byte reads of
//! `access_type`, `major`, `minor`; 1- and 2-byte reads within `access_type`, as
//! `cgroup_dev_is_valid_access` allows) and `EXIT` with R0 a known 0 or 1
//! (`check_return_code`'s range for this type). Refused with `EINVAL` and a verifier
//! message: stores, the stack, helper calls, pointer arithmetic, reads of uninitialized
//! registers, out-of-range jumps, unreachable instructions, falling off the end.
//!
//! The analysis is one pass in instruction order: since all edges go forward, each
//! instruction's register state is the meet of its predecessors' (a register whose type
//! differs between paths becomes unreadable), which is sound for the checks above.

use um_uapi::abi::bpf::BpfInsn;
use um_uapi::abi::bpf::insn::*;

/// A register's type in the analysis (Linux `enum bpf_reg_type`, reduced).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reg {
    /// Not written (or written differently on different paths).
    Uninit,
    /// `PTR_TO_CTX`, unmodified.
    Ctx,
    /// `PTR_TO_STACK` (R10): only there to be refused with Linux's message.
    Frame,
    /// A number within `[lo, hi]` (unsigned; Linux tracks much more, `umin/umax_value`).
    Scalar(u64, u64),
}

fn meet(a: Reg, b: Reg) -> Reg {
    match (a, b) {
        _ if a == b => a,
        (Reg::Scalar(a0, a1), Reg::Scalar(b0, b1)) => Reg::Scalar(a0.min(b0), a1.max(b1)),
        _ => Reg::Uninit,
    }
}

type State = [Reg; 11];

/// The device context's size (`sizeof(struct bpf_cgroup_dev_ctx)`).
pub const DEV_CTX_SIZE: i32 = 12;

fn size_of(code: u8) -> i32 {
    match code & 0x18 {
        BPF_W => 4,
        BPF_H => 2,
        BPF_B => 1,
        _ => 8,
    }
}

/// Checks `prog`, whose context is `ctx_size` bytes of `struct bpf_cgroup_dev_ctx` (0 for
/// a program that may not read its context); on refusal the message Linux's verifier log would end with.
pub fn verify(prog: &[BpfInsn], ctx_size: i32) -> Result<(), String> {
    let n = prog.len();
    let mut states: Vec<Option<State>> = vec![None; n + 1];
    let mut entry = [Reg::Uninit; 11];
    entry[1] = Reg::Ctx;
    entry[10] = Reg::Frame;
    states[0] = Some(entry);
    let mut pc = 0;
    // Forward edges only: propagate to a later instruction.
    fn flow(states: &mut [Option<State>], to: usize, s: &State) {
        states[to] = Some(match &states[to] {
            None => *s,
            Some(t) => core::array::from_fn(|i| meet(t[i], s[i])),
        });
    }
    while pc < n {
        let i = prog[pc];
        let Some(mut s) = states[pc] else {
            return Err(format!("unreachable insn {pc}"));
        };
        let (dst, src) = (i.dst() as usize, i.src() as usize);
        if dst > 10 || src > 10 {
            return Err(format!("R{} is invalid", dst.max(src)));
        }
        let class = i.code & 7;
        let read = |s: &State, r: usize| -> Result<Reg, String> {
            match s[r] {
                Reg::Uninit => Err(format!("R{r} !read_ok")),
                v => Ok(v),
            }
        };
        let jump_to = |off: i64| -> Result<usize, String> {
            let t = pc as i64 + 1 + off;
            if t < 0 || t >= n as i64 {
                return Err(format!("jump out of range from insn {pc} to {t}"));
            }
            if t <= pc as i64 {
                return Err(format!("back-edge from insn {pc} to {t}"));
            }
            Ok(t as usize)
        };
        match class {
            BPF_ALU | BPF_ALU64 => {
                let is64 = class == BPF_ALU64;
                let op = i.code & 0xf0;
                let x = i.code & BPF_X != 0;
                if i.off != 0 {
                    return Err(format!("BPF_ALU uses reserved fields at insn {pc}"));
                }
                if dst == 10 {
                    return Err("frame pointer is read only".into());
                }
                if op == BPF_END {
                    if is64 || src != 0 || !matches!(i.imm, 16 | 32 | 64) {
                        return Err(format!("BPF_END uses reserved fields at insn {pc}"));
                    }
                    scalar_of(read(&s, dst)?, dst)?;
                    s[dst] = UNKNOWN;
                } else if op == BPF_NEG {
                    if x || src != 0 || i.imm != 0 {
                        return Err(format!("BPF_NEG uses reserved fields at insn {pc}"));
                    }
                    let v = scalar_of(read(&s, dst)?, dst)?;
                    s[dst] = fold(op, is64, v, (0, 0));
                } else if op > BPF_END {
                    return Err(format!("invalid BPF_ALU opcode {op:#x}"));
                } else {
                    if (x && i.imm != 0) || (!x && src != 0) {
                        return Err(format!("BPF_ALU uses reserved fields at insn {pc}"));
                    }
                    let rhs = if x {
                        match read(&s, src)? {
                            // MOV of the context pointer copies it (64-bit only).
                            Reg::Ctx if op == BPF_MOV && is64 => {
                                s[dst] = Reg::Ctx;
                                flow(&mut states, pc + 1, &s);
                                pc += 1;
                                continue;
                            }
                            r => scalar_of(r, src)?,
                        }
                    } else {
                        let k = if is64 {
                            i.imm as i64 as u64
                        } else {
                            i.imm as u32 as u64
                        };
                        (k, k)
                    };
                    if !x && matches!(op, BPF_DIV | BPF_MOD) && i.imm == 0 {
                        return Err("division by zero".into());
                    }
                    let width = if is64 { 64 } else { 32 };
                    if !x
                        && matches!(op, BPF_LSH | BPF_RSH | BPF_ARSH)
                        && !(0..width).contains(&i.imm)
                    {
                        return Err(format!("invalid shift {}", i.imm));
                    }
                    let lhs = if op == BPF_MOV {
                        (0, 0)
                    } else {
                        scalar_of(read(&s, dst)?, dst)?
                    };
                    s[dst] = fold(op, is64, lhs, rhs);
                }
                flow(&mut states, pc + 1, &s);
                pc += 1;
            }
            BPF_LD => {
                if i.code != BPF_LD | BPF_IMM | BPF_DW {
                    return Err(format!("unknown opcode {:#04x}", i.code));
                }
                let Some(next) = prog.get(pc + 1) else {
                    return Err("invalid bpf_ld_imm64 insn".into());
                };
                if src != 0 {
                    return Err("map and BTF references are not supported here".into());
                }
                if next.code != 0 || next.regs != 0 || next.off != 0 || i.off != 0 {
                    return Err("invalid bpf_ld_imm64 insn".into());
                }
                if dst == 10 {
                    return Err("frame pointer is read only".into());
                }
                let k = i.imm as u32 as u64 | (next.imm as u32 as u64) << 32;
                s[dst] = Reg::Scalar(k, k);
                flow(&mut states, pc + 2, &s);
                pc += 2;
            }
            BPF_LDX => {
                if i.code & 0xe0 != BPF_MEM || i.imm != 0 {
                    return Err(format!("unknown opcode {:#04x}", i.code));
                }
                if dst == 10 {
                    return Err("frame pointer is read only".into());
                }
                match read(&s, src)? {
                    Reg::Ctx => {}
                    Reg::Frame => return Err(format!("invalid read from stack R{src}")),
                    Reg::Scalar(..) => return Err(format!("R{src} invalid mem access 'scalar'")),
                    Reg::Uninit => return Err(format!("R{src} !read_ok")),
                }
                let (off, size) = (i.off as i32, size_of(i.code));
                // cgroup_dev_is_valid_access.
                let ok = off >= 0
                    && off + size <= ctx_size
                    && off % size == 0
                    && (size == 4 || (off < 4 && size < 4));
                if !ok {
                    return Err(format!("invalid bpf_context access off={off} size={size}"));
                }
                // A field of at most `size` bytes.
                s[dst] = Reg::Scalar(0, u64::MAX >> (64 - 8 * size));
                flow(&mut states, pc + 1, &s);
                pc += 1;
            }
            BPF_JMP | BPF_JMP32 => {
                let op = i.code & 0xf0;
                let x = i.code & BPF_X != 0;
                match op {
                    BPF_EXIT => {
                        if class != BPF_JMP || x || src != 0 || dst != 0 || i.off != 0 || i.imm != 0
                        {
                            return Err("BPF_EXIT uses reserved fields".into());
                        }
                        match read(&s, 0) {
                            Ok(Reg::Scalar(_, 0 | 1)) => {}
                            Ok(Reg::Scalar(lo, hi)) => {
                                return Err(format!(
                                    "At program exit the register R0 has umin_value={lo} umax_value={hi} should have been in [0, 1]"
                                ));
                            }
                            Ok(_) => return Err("R0 leaks addr as return value".into()),
                            Err(_) => return Err("R0 !read_ok".into()),
                        }
                        pc += 1;
                    }
                    BPF_CALL => return Err(format!("unknown func {}", i.imm)),
                    BPF_JA => {
                        if class != BPF_JMP || x || src != 0 || dst != 0 || i.imm != 0 {
                            return Err("BPF_JA uses reserved fields".into());
                        }
                        let t = jump_to(i.off as i64)?;
                        flow(&mut states, t, &s);
                        pc += 1;
                    }
                    BPF_JEQ | BPF_JGT | BPF_JGE | BPF_JSET | BPF_JNE | BPF_JSGT | BPF_JSGE
                    | BPF_JLT | BPF_JLE | BPF_JSLT | BPF_JSLE => {
                        if (x && i.imm != 0) || (!x && src != 0) {
                            return Err(format!("BPF_JMP uses reserved fields at insn {pc}"));
                        }
                        scalar_of(read(&s, dst)?, dst)?;
                        if x {
                            scalar_of(read(&s, src)?, src)?;
                        }
                        let t = jump_to(i.off as i64)?;
                        flow(&mut states, t, &s);
                        flow(&mut states, pc + 1, &s);
                        pc += 1;
                    }
                    _ => return Err(format!("invalid BPF_JMP opcode {:#04x}", i.code)),
                }
            }
            _ => return Err(format!("stores and the stack are not allowed (insn {pc})")),
        }
    }
    if states[n].is_some() {
        return Err("last insn is not an exit or jmp".into());
    }
    Ok(())
}

/// A register read as a number: pointers are refused (no pointer arithmetic or compares).
fn scalar_of(r: Reg, n: usize) -> Result<(u64, u64), String> {
    match r {
        Reg::Scalar(lo, hi) => Ok((lo, hi)),
        Reg::Uninit => Err(format!("R{n} !read_ok")),
        _ => Err(format!("R{n} pointer arithmetic or comparison prohibited")),
    }
}

/// Any number.
const UNKNOWN: Reg = Reg::Scalar(0, u64::MAX);

/// The range of `op` on two ranges: exact for constants, `[0, k]` for an AND with a known
/// `k`, `[0, u32::MAX]` for another 32-bit result, unknown otherwise.
fn fold(op: u8, is64: bool, a: (u64, u64), b: (u64, u64)) -> Reg {
    if a.0 == a.1 && b.0 == b.1 {
        let v = alu(op, is64, a.0, b.0);
        return Reg::Scalar(v, v);
    }
    let top = if is64 { u64::MAX } else { u32::MAX as u64 };
    match op {
        BPF_MOV if b.1 <= top => Reg::Scalar(b.0, b.1),
        BPF_AND if b.0 == b.1 => Reg::Scalar(0, b.0 & top),
        BPF_AND if a.0 == a.1 => Reg::Scalar(0, a.0 & top),
        _ => Reg::Scalar(0, top),
    }
}

/// One ALU operation as the interpreter does it; 32-bit results are zero-extended. Division
/// by zero gives 0, modulo by zero leaves the dividend (`___bpf_prog_run`'s rules).
fn alu(op: u8, is64: bool, a: u64, b: u64) -> u64 {
    let (a, b) = if is64 {
        (a, b)
    } else {
        (a as u32 as u64, b as u32 as u64)
    };
    let sh = if is64 { b & 63 } else { b & 31 };
    let r = match op {
        BPF_ADD => a.wrapping_add(b),
        BPF_SUB => a.wrapping_sub(b),
        BPF_MUL => a.wrapping_mul(b),
        BPF_DIV => a.checked_div(b).unwrap_or(0),
        BPF_OR => a | b,
        BPF_AND => a & b,
        BPF_LSH => a << sh,
        BPF_RSH => a >> sh,
        BPF_NEG => a.wrapping_neg(),
        BPF_MOD => a.checked_rem(b).unwrap_or(a),
        BPF_XOR => a ^ b,
        BPF_MOV => b,
        BPF_ARSH if is64 => ((a as i64) >> sh) as u64,
        BPF_ARSH => ((a as u32 as i32) >> sh) as u32 as u64,
        _ => 0,
    };
    if is64 { r } else { r as u32 as u64 }
}

fn cond(op: u8, is64: bool, a: u64, b: u64) -> bool {
    let (a, b) = if is64 {
        (a, b)
    } else {
        (a as u32 as u64, b as u32 as u64)
    };
    let (sa, sb) = if is64 {
        (a as i64, b as i64)
    } else {
        (a as u32 as i32 as i64, b as u32 as i32 as i64)
    };
    match op {
        BPF_JEQ => a == b,
        BPF_JGT => a > b,
        BPF_JGE => a >= b,
        BPF_JSET => a & b != 0,
        BPF_JNE => a != b,
        BPF_JSGT => sa > sb,
        BPF_JSGE => sa >= sb,
        BPF_JLT => a < b,
        BPF_JLE => a <= b,
        BPF_JSLT => sa < sb,
        BPF_JSLE => sa <= sb,
        _ => false,
    }
}

/// Runs a verified program on the context's bytes; its R0. A program that somehow runs past
/// its step bound (impossible after [`verify`]) denies.
pub fn run(prog: &[BpfInsn], ctx: &[u8; 12]) -> u64 {
    let mut r = [0u64; 11];
    let mut pc = 0usize;
    let mut steps = 0usize;
    while pc < prog.len() && steps <= prog.len() {
        steps += 1;
        let i = prog[pc];
        let (dst, src) = (i.dst() as usize, i.src() as usize);
        let class = i.code & 7;
        match class {
            BPF_ALU | BPF_ALU64 => {
                let is64 = class == BPF_ALU64;
                let op = i.code & 0xf0;
                if op == BPF_END {
                    let v = r[dst];
                    let be = i.code & BPF_TO_BE != 0;
                    r[dst] = match (i.imm, be) {
                        (16, false) => v & 0xffff,
                        (32, false) => v & 0xffff_ffff,
                        (64, false) => v,
                        (16, true) => (v as u16).swap_bytes() as u64,
                        (32, true) => (v as u32).swap_bytes() as u64,
                        _ => v.swap_bytes(),
                    };
                } else {
                    let b = if i.code & BPF_X != 0 {
                        r[src]
                    } else if is64 {
                        i.imm as i64 as u64
                    } else {
                        i.imm as u32 as u64
                    };
                    r[dst] = alu(op, is64, r[dst], b);
                }
                pc += 1;
            }
            BPF_LD => {
                let hi = prog.get(pc + 1).map_or(0, |n| n.imm as u32 as u64);
                r[dst] = i.imm as u32 as u64 | hi << 32;
                pc += 2;
            }
            BPF_LDX => {
                let off = i.off as usize;
                let size = size_of(i.code) as usize;
                let mut v = [0u8; 8];
                if let Some(b) = ctx.get(off..off + size) {
                    v[..size].copy_from_slice(b);
                }
                r[dst] = u64::from_le_bytes(v);
                pc += 1;
            }
            BPF_JMP | BPF_JMP32 => {
                let op = i.code & 0xf0;
                match op {
                    BPF_EXIT => return r[0],
                    BPF_JA => pc = (pc as i64 + 1 + i.off as i64) as usize,
                    _ => {
                        let b = if i.code & BPF_X != 0 {
                            r[src]
                        } else {
                            i.imm as i64 as u64
                        };
                        if cond(op, class == BPF_JMP, r[dst], b) {
                            pc = (pc as i64 + 1 + i.off as i64) as usize;
                        } else {
                            pc += 1;
                        }
                    }
                }
            }
            _ => return 0,
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use um_uapi::abi::bpf::{
        BPF_DEVCG_ACC_MKNOD, BPF_DEVCG_ACC_READ, BPF_DEVCG_ACC_WRITE, BPF_DEVCG_DEV_BLOCK,
        BPF_DEVCG_DEV_CHAR,
    };

    /// The device program crun 1.8.1 loads for `crun spec`'s default rules (logged by the
    /// kernel during the containers gate): (code, regs, off, imm).
    const CRUN: &[(u8, u8, i16, i32)] = &[
        (97, 18, 0, 0),
        (84, 2, 0, 65535),
        (97, 19, 0, 0),
        (116, 3, 0, 16),
        (97, 20, 4, 0),
        (97, 21, 8, 0),
        (85, 2, 4, 2),
        (85, 4, 3, 5),
        (85, 5, 2, 2),
        (183, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 3, 2),
        (85, 4, 2, 136),
        (183, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 4, 2),
        (85, 4, 3, 5),
        (85, 5, 2, 1),
        (183, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 4, 2),
        (85, 4, 3, 1),
        (85, 5, 2, 9),
        (183, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 4, 2),
        (85, 4, 3, 1),
        (85, 5, 2, 5),
        (183, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 4, 2),
        (85, 4, 3, 5),
        (85, 5, 2, 0),
        (183, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 4, 2),
        (85, 4, 3, 1),
        (85, 5, 2, 7),
        (183, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 4, 2),
        (85, 4, 3, 1),
        (85, 5, 2, 8),
        (183, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 4, 2),
        (85, 4, 3, 1),
        (85, 5, 2, 3),
        (183, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 5, 1),
        (188, 49, 0, 0),
        (84, 1, 0, 1),
        (93, 49, 2, 0),
        (183, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 5, 2),
        (188, 49, 0, 0),
        (84, 1, 0, 1),
        (93, 49, 2, 0),
        (183, 0, 0, 1),
        (149, 0, 0, 0),
        (183, 0, 0, 0),
        (149, 0, 0, 0),
    ];
    /// runc 1.1.5's program for the same bundle (cilium/ebpf's assembler).
    const RUNC: &[(u8, u8, i16, i32)] = &[
        (97, 18, 0, 0),
        (84, 2, 0, 65535),
        (97, 19, 0, 0),
        (116, 3, 0, 16),
        (97, 20, 4, 0),
        (97, 21, 8, 0),
        (85, 2, 5, 1),
        (188, 49, 0, 0),
        (84, 1, 0, 1),
        (93, 49, 2, 0),
        (180, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 5, 2),
        (188, 49, 0, 0),
        (84, 1, 0, 1),
        (93, 49, 2, 0),
        (180, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 4, 2),
        (85, 4, 3, 1),
        (85, 5, 2, 3),
        (180, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 4, 2),
        (85, 4, 3, 1),
        (85, 5, 2, 5),
        (180, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 4, 2),
        (85, 4, 3, 1),
        (85, 5, 2, 7),
        (180, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 4, 2),
        (85, 4, 3, 1),
        (85, 5, 2, 8),
        (180, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 4, 2),
        (85, 4, 3, 1),
        (85, 5, 2, 9),
        (180, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 4, 2),
        (85, 4, 3, 5),
        (85, 5, 2, 0),
        (180, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 4, 2),
        (85, 4, 3, 5),
        (85, 5, 2, 2),
        (180, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 4, 2),
        (85, 4, 3, 10),
        (85, 5, 2, 200),
        (180, 0, 0, 1),
        (149, 0, 0, 0),
        (85, 2, 3, 2),
        (85, 4, 2, 136),
        (180, 0, 0, 1),
        (149, 0, 0, 0),
        (180, 0, 0, 0),
        (149, 0, 0, 0),
    ];

    fn prog(t: &[(u8, u8, i16, i32)]) -> Vec<BpfInsn> {
        t.iter()
            .map(|&(code, regs, off, imm)| BpfInsn {
                code,
                regs,
                off,
                imm,
            })
            .collect()
    }

    fn ctx(kind: u32, access: u32, major: u32, minor: u32) -> [u8; 12] {
        let mut b = [0u8; 12];
        b[..4].copy_from_slice(&(access << 16 | kind).to_le_bytes());
        b[4..8].copy_from_slice(&major.to_le_bytes());
        b[8..].copy_from_slice(&minor.to_le_bytes());
        b
    }

    fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> BpfInsn {
        BpfInsn {
            code,
            regs: src << 4 | dst,
            off,
            imm,
        }
    }
    const MOV64_K: u8 = BPF_ALU64 | BPF_MOV | BPF_K;
    const EXIT: u8 = BPF_JMP | BPF_EXIT;
    const LDXW: u8 = BPF_LDX | BPF_MEM | BPF_W;

    #[test]
    fn runtimes_programs_verify_and_enforce_the_default_rules() {
        for (name, t) in [("crun", CRUN), ("runc", RUNC)] {
            let p = prog(t);
            assert_eq!(verify(&p, DEV_CTX_SIZE), Ok(()), "{name}");
            let rw = BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE;
            // /dev/null, /dev/zero, /dev/tty, /dev/pts/N: allowed.
            for (maj, min) in [(1, 3), (1, 5), (5, 0), (136, 0)] {
                assert_eq!(
                    run(&p, &ctx(BPF_DEVCG_DEV_CHAR, rw, maj, min)),
                    1,
                    "{name} {maj}:{min}"
                );
            }
            // A disk: read and write denied, mknod allowed (`b *:* m`).
            assert_eq!(
                run(&p, &ctx(BPF_DEVCG_DEV_BLOCK, BPF_DEVCG_ACC_READ, 8, 0)),
                0,
                "{name}"
            );
            assert_eq!(
                run(&p, &ctx(BPF_DEVCG_DEV_BLOCK, BPF_DEVCG_ACC_MKNOD, 8, 0)),
                1,
                "{name}"
            );
            // /dev/mem (1:1) is not in the list.
            assert_eq!(
                run(&p, &ctx(BPF_DEVCG_DEV_CHAR, BPF_DEVCG_ACC_READ, 1, 1)),
                0,
                "{name}"
            );
        }
    }

    #[test]
    fn refuses_what_is_not_safe() {
        let exit0 = [i(MOV64_K, 0, 0, 0, 0), i(EXIT, 0, 0, 0, 0)];
        assert_eq!(verify(&exit0, DEV_CTX_SIZE), Ok(()));
        let bad: &[(&str, Vec<BpfInsn>)] = &[
            (
                "out of range",
                vec![i(BPF_JMP | BPF_JA, 0, 0, 5, 0), exit0[0], exit0[1]],
            ),
            (
                "back-edge",
                vec![exit0[0], i(BPF_JMP | BPF_JA, 0, 0, -2, 0), exit0[1]],
            ),
            (
                "uninit",
                vec![i(BPF_ALU64 | BPF_MOV | BPF_X, 0, 3, 0, 0), exit0[1]],
            ),
            ("uninit r0", vec![exit0[1]]),
            ("ctx off", vec![i(LDXW, 0, 1, 12, 0), exit0[0], exit0[1]]),
            (
                "ctx misaligned",
                vec![i(LDXW, 0, 1, 2, 0), exit0[0], exit0[1]],
            ),
            (
                "narrow major",
                vec![i(BPF_LDX | BPF_MEM | BPF_H, 0, 1, 4, 0), exit0[0], exit0[1]],
            ),
            (
                "wide ctx",
                vec![
                    i(BPF_LDX | BPF_MEM | BPF_DW, 0, 1, 0, 0),
                    exit0[0],
                    exit0[1],
                ],
            ),
            (
                "scalar deref",
                vec![exit0[0], i(LDXW, 2, 0, 0, 0), exit0[1]],
            ),
            ("ret 2", vec![i(MOV64_K, 0, 0, 0, 2), exit0[1]]),
            ("ret unknown", vec![i(LDXW, 0, 1, 4, 0), exit0[1]]),
            (
                "call",
                vec![i(BPF_JMP | BPF_CALL, 0, 0, 0, 15), exit0[0], exit0[1]],
            ),
            (
                "store",
                vec![
                    i(BPF_STX | BPF_MEM | BPF_W, 10, 1, -4, 0),
                    exit0[0],
                    exit0[1],
                ],
            ),
            ("fall off", vec![exit0[0]]),
            ("unreachable", vec![exit0[0], exit0[1], exit0[1]]),
            (
                "ptr arith",
                vec![
                    i(BPF_ALU64 | BPF_ADD | BPF_K, 1, 0, 0, 4),
                    exit0[0],
                    exit0[1],
                ],
            ),
            (
                "div by 0",
                vec![
                    exit0[0],
                    i(BPF_ALU64 | BPF_DIV | BPF_K, 0, 0, 0, 0),
                    exit0[1],
                ],
            ),
            ("bad reg", vec![i(MOV64_K, 11, 0, 0, 0), exit0[0], exit0[1]]),
            (
                "write r10",
                vec![i(MOV64_K, 10, 0, 0, 0), exit0[0], exit0[1]],
            ),
        ];
        for (what, p) in bad {
            assert!(verify(p, DEV_CTX_SIZE).is_err(), "{what} accepted");
        }
        // Without a context (CGROUP_SKB probe programs) even a valid device read is refused.
        assert!(verify(&[i(LDXW, 0, 1, 4, 0), exit0[0], exit0[1]], 0).is_err());
    }

    #[test]
    fn narrow_access_type_reads_and_alu_semantics() {
        // r0 = *(u16 *)(ctx + 2) (the access bits); r0 &= 1; ... exit with a known value.
        let p = [
            i(BPF_LDX | BPF_MEM | BPF_H, 2, 1, 2, 0),
            i(MOV64_K, 0, 0, 0, 0),
            i(
                BPF_JMP | BPF_JSET | BPF_K,
                2,
                0,
                1,
                BPF_DEVCG_ACC_WRITE as i32,
            ),
            i(MOV64_K, 0, 0, 0, 1),
            i(EXIT, 0, 0, 0, 0),
        ];
        assert_eq!(verify(&p, DEV_CTX_SIZE), Ok(()));
        assert_eq!(
            run(&p, &ctx(BPF_DEVCG_DEV_CHAR, BPF_DEVCG_ACC_WRITE, 1, 3)),
            0
        );
        assert_eq!(
            run(&p, &ctx(BPF_DEVCG_DEV_CHAR, BPF_DEVCG_ACC_READ, 1, 3)),
            1
        );
        assert_eq!(alu(BPF_DIV, true, 7, 0), 0);
        assert_eq!(alu(BPF_MOD, false, 7, 0), 7);
        assert_eq!(alu(BPF_ARSH, false, 0x8000_0000, 4), 0xf800_0000);
        assert_eq!(alu(BPF_SUB, false, 0, 1), 0xffff_ffff);
    }
}
