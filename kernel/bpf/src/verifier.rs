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
    /// A number, with its value when it is known.
    Scalar(Option<u64>),
}

fn meet(a: Reg, b: Reg) -> Reg {
    match (a, b) {
        _ if a == b => a,
        (Reg::Scalar(_), Reg::Scalar(_)) => Reg::Scalar(None),
        _ => Reg::Uninit,
    }
}

type State = [Reg; 11];

/// The context's size (`sizeof(struct bpf_cgroup_dev_ctx)`).
const CTX_SIZE: i32 = 12;

fn size_of(code: u8) -> i32 {
    match code & 0x18 {
        BPF_W => 4,
        BPF_H => 2,
        BPF_B => 1,
        _ => 8,
    }
}

/// Checks `prog`; on refusal the message Linux's verifier log would end with.
pub fn verify(prog: &[BpfInsn]) -> Result<(), String> {
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
                    s[dst] = Reg::Scalar(None);
                } else if op == BPF_NEG {
                    if x || src != 0 || i.imm != 0 {
                        return Err(format!("BPF_NEG uses reserved fields at insn {pc}"));
                    }
                    let v = scalar_of(read(&s, dst)?, dst)?;
                    s[dst] = Reg::Scalar(v.map(|v| alu(op, is64, v, 0)));
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
                        Some(if is64 {
                            i.imm as i64 as u64
                        } else {
                            i.imm as u32 as u64
                        })
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
                        Some(0)
                    } else {
                        scalar_of(read(&s, dst)?, dst)?
                    };
                    s[dst] = Reg::Scalar(match (lhs, rhs) {
                        (Some(a), Some(b)) => Some(alu(op, is64, a, b)),
                        _ => None,
                    });
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
                s[dst] = Reg::Scalar(Some(i.imm as u32 as u64 | (next.imm as u32 as u64) << 32));
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
                    Reg::Scalar(_) => return Err(format!("R{src} invalid mem access 'scalar'")),
                    Reg::Uninit => unreachable!(),
                }
                let (off, size) = (i.off as i32, size_of(i.code));
                // cgroup_dev_is_valid_access.
                let ok = off >= 0
                    && off + size <= CTX_SIZE
                    && off % size == 0
                    && (size == 4 || (off < 4 && size < 4));
                if !ok {
                    return Err(format!("invalid bpf_context access off={off} size={size}"));
                }
                s[dst] = Reg::Scalar(None);
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
                            Ok(Reg::Scalar(Some(0 | 1))) => {}
                            Ok(Reg::Scalar(Some(v))) => {
                                return Err(format!(
                                    "At program exit the register R0 has value {v:#x} should have been in [0, 1]"
                                ));
                            }
                            Ok(Reg::Scalar(None)) => {
                                return Err("At program exit the register R0 has unknown scalar value should have been in [0, 1]".into());
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
fn scalar_of(r: Reg, n: usize) -> Result<Option<u64>, String> {
    match r {
        Reg::Scalar(v) => Ok(v),
        Reg::Uninit => Err(format!("R{n} !read_ok")),
        _ => Err(format!("R{n} pointer arithmetic or comparison prohibited")),
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
