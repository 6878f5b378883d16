//! ptrace(2) requests, options, events and `struct ptrace_syscall_info`
//! (`include/uapi/linux/ptrace.h`, `include/uapi/linux/elf.h` for the regset note types,
//! `include/uapi/linux/audit.h` for the `AUDIT_ARCH_*` values).

pub const PTRACE_TRACEME: u64 = 0;
pub const PTRACE_PEEKTEXT: u64 = 1;
pub const PTRACE_PEEKDATA: u64 = 2;
pub const PTRACE_PEEKUSR: u64 = 3;
pub const PTRACE_POKETEXT: u64 = 4;
pub const PTRACE_POKEDATA: u64 = 5;
pub const PTRACE_POKEUSR: u64 = 6;
pub const PTRACE_CONT: u64 = 7;
pub const PTRACE_KILL: u64 = 8;
pub const PTRACE_SINGLESTEP: u64 = 9;
/// x86 only (arch/x86/include/uapi/asm/ptrace-abi.h).
pub const PTRACE_GETREGS: u64 = 12;
pub const PTRACE_SETREGS: u64 = 13;
pub const PTRACE_GETFPREGS: u64 = 14;
pub const PTRACE_SETFPREGS: u64 = 15;
pub const PTRACE_ATTACH: u64 = 16;
pub const PTRACE_DETACH: u64 = 17;
pub const PTRACE_SYSCALL: u64 = 24;
pub const PTRACE_SYSEMU: u64 = 31;
pub const PTRACE_SYSEMU_SINGLESTEP: u64 = 32;
pub const PTRACE_SETOPTIONS: u64 = 0x4200;
pub const PTRACE_GETEVENTMSG: u64 = 0x4201;
pub const PTRACE_GETSIGINFO: u64 = 0x4202;
pub const PTRACE_SETSIGINFO: u64 = 0x4203;
pub const PTRACE_GETREGSET: u64 = 0x4204;
pub const PTRACE_SETREGSET: u64 = 0x4205;
pub const PTRACE_SEIZE: u64 = 0x4206;
pub const PTRACE_INTERRUPT: u64 = 0x4207;
pub const PTRACE_LISTEN: u64 = 0x4208;
pub const PTRACE_PEEKSIGINFO: u64 = 0x4209;
/// `ptrace_peeksiginfo_args.flags`: read the process-wide queue, not the thread's.
pub const PTRACE_PEEKSIGINFO_SHARED: u32 = 1;
pub const PTRACE_GETSIGMASK: u64 = 0x420a;
pub const PTRACE_SETSIGMASK: u64 = 0x420b;
pub const PTRACE_GET_SYSCALL_INFO: u64 = 0x420e;

/// Wait-status events (`status >> 16`).
pub const PTRACE_EVENT_FORK: u32 = 1;
pub const PTRACE_EVENT_VFORK: u32 = 2;
pub const PTRACE_EVENT_CLONE: u32 = 3;
pub const PTRACE_EVENT_EXEC: u32 = 4;
pub const PTRACE_EVENT_VFORK_DONE: u32 = 5;
pub const PTRACE_EVENT_EXIT: u32 = 6;
pub const PTRACE_EVENT_SECCOMP: u32 = 7;
pub const PTRACE_EVENT_STOP: u32 = 128;

/// Options (PTRACE_SETOPTIONS, PTRACE_SEIZE's data).
pub const PTRACE_O_TRACESYSGOOD: u32 = 1;
pub const PTRACE_O_TRACEFORK: u32 = 1 << PTRACE_EVENT_FORK;
pub const PTRACE_O_TRACEVFORK: u32 = 1 << PTRACE_EVENT_VFORK;
pub const PTRACE_O_TRACECLONE: u32 = 1 << PTRACE_EVENT_CLONE;
pub const PTRACE_O_TRACEEXEC: u32 = 1 << PTRACE_EVENT_EXEC;
pub const PTRACE_O_TRACEVFORKDONE: u32 = 1 << PTRACE_EVENT_VFORK_DONE;
pub const PTRACE_O_TRACEEXIT: u32 = 1 << PTRACE_EVENT_EXIT;
pub const PTRACE_O_TRACESECCOMP: u32 = 1 << PTRACE_EVENT_SECCOMP;
pub const PTRACE_O_EXITKILL: u32 = 1 << 20;
pub const PTRACE_O_SUSPEND_SECCOMP: u32 = 1 << 21;
/// Every option bit Linux knows (`PTRACE_O_MASK`).
pub const PTRACE_O_MASK: u32 = 0xff | PTRACE_O_EXITKILL | PTRACE_O_SUSPEND_SECCOMP;

/// `ptrace_message` at syscall stops, and `ptrace_syscall_info.op`.
pub const PTRACE_SYSCALL_INFO_NONE: u8 = 0;
pub const PTRACE_SYSCALL_INFO_ENTRY: u8 = 1;
pub const PTRACE_SYSCALL_INFO_EXIT: u8 = 2;
pub const PTRACE_SYSCALL_INFO_SECCOMP: u8 = 3;

/// Regset note types (include/uapi/linux/elf.h).
pub const NT_PRSTATUS: u64 = 1;
pub const NT_PRFPREG: u64 = 2;
/// x86's XSAVE area (include/uapi/linux/elf.h `NT_X86_XSTATE`).
pub const NT_X86_XSTATE: u64 = 0x202;
pub const NT_ARM_TLS: u64 = 0x401;
pub const NT_ARM_SYSTEM_CALL: u64 = 0x404;

/// `AUDIT_ARCH_X86_64` and `AUDIT_ARCH_AARCH64` (EM_* | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE).
pub const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
pub const AUDIT_ARCH_AARCH64: u32 = 0xc000_00b7;
/// `AUDIT_ARCH_I386` (EM_386 | __AUDIT_ARCH_LE, include/uapi/linux/audit.h): what the host
/// reports for an `int $0x80` call of a 64-bit x86 process.
pub const AUDIT_ARCH_I386: u32 = 0x4000_0003;

/// Size of `struct ptrace_syscall_info` up to the end of each op's part: the header
/// (op, pad, arch, instruction_pointer, stack_pointer) is 24 bytes; `entry` adds nr and six
/// args (80), `exit` rval and is_error (33), `seccomp` also ret_data (84).
pub const SYSCALL_INFO_HEADER: usize = 24;
pub const SYSCALL_INFO_ENTRY_SIZE: usize = 80;
pub const SYSCALL_INFO_EXIT_SIZE: usize = 33;
pub const SYSCALL_INFO_SECCOMP_SIZE: usize = 84;

/// Encodes `struct ptrace_syscall_info` (88 bytes in full); the caller copies out the prefix
/// the op defines.
pub fn syscall_info_bytes(op: u8, arch: u32, ip: u64, sp: u64, words: &[u64]) -> [u8; 88] {
    let mut b = [0u8; 88];
    b[0] = op;
    b[4..8].copy_from_slice(&arch.to_le_bytes());
    b[8..16].copy_from_slice(&ip.to_le_bytes());
    b[16..24].copy_from_slice(&sp.to_le_bytes());
    for (i, w) in words.iter().take(8).enumerate() {
        b[24 + i * 8..32 + i * 8].copy_from_slice(&w.to_le_bytes());
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syscall_info_layout() {
        let b = syscall_info_bytes(1, AUDIT_ARCH_X86_64, 0x10, 0x20, &[39, 1, 2, 3, 4, 5, 6]);
        assert_eq!(b[0], 1);
        assert_eq!(u32::from_le_bytes(b[4..8].try_into().unwrap()), 0xc000_003e);
        assert_eq!(u64::from_le_bytes(b[24..32].try_into().unwrap()), 39);
        assert_eq!(u64::from_le_bytes(b[72..80].try_into().unwrap()), 6);
        assert_eq!(PTRACE_O_MASK, 0x3000ff);
    }
}
