//! x86_64 general registers as ptrace sees them: `struct user_regs_struct`
//! (arch/x86/include/asm/user_64.h), 27 words, 216 bytes, the `NT_PRSTATUS` regset.

/// Indexes into [`Regs::w`], in `user_regs_struct` order.
#[allow(missing_docs)]
pub mod idx {
    pub const R15: usize = 0;
    pub const R14: usize = 1;
    pub const R13: usize = 2;
    pub const R12: usize = 3;
    pub const RBP: usize = 4;
    pub const RBX: usize = 5;
    pub const R11: usize = 6;
    pub const R10: usize = 7;
    pub const R9: usize = 8;
    pub const R8: usize = 9;
    pub const RAX: usize = 10;
    pub const RCX: usize = 11;
    pub const RDX: usize = 12;
    pub const RSI: usize = 13;
    pub const RDI: usize = 14;
    pub const ORIG_RAX: usize = 15;
    pub const RIP: usize = 16;
    pub const CS: usize = 17;
    pub const EFLAGS: usize = 18;
    pub const RSP: usize = 19;
    pub const SS: usize = 20;
    pub const FS_BASE: usize = 21;
    pub const GS_BASE: usize = 22;
    pub const DS: usize = 23;
    pub const ES: usize = 24;
    pub const FS: usize = 25;
    pub const GS: usize = 26;
}

/// Number of words in `user_regs_struct`.
pub const NREGS: usize = 27;
/// Size in bytes of `user_regs_struct`.
pub const REGS_SIZE: usize = NREGS * 8;

/// A guest thread's general registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Regs {
    /// The words, in `user_regs_struct` order (see [`idx`]).
    pub w: [u64; NREGS],
}

impl Default for Regs {
    fn default() -> Self {
        Regs { w: [0; NREGS] }
    }
}

impl Regs {
    /// Decodes the `NT_PRSTATUS` bytes.
    pub fn from_bytes(b: &[u8; REGS_SIZE]) -> Regs {
        let mut w = [0u64; NREGS];
        for (i, v) in w.iter_mut().enumerate() {
            *v = u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
        }
        Regs { w }
    }

    /// Encodes as `NT_PRSTATUS` bytes.
    pub fn to_bytes(&self) -> [u8; REGS_SIZE] {
        let mut b = [0u8; REGS_SIZE];
        for (i, v) in self.w.iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    /// The syscall number at a syscall stop (`orig_rax`).
    pub fn syscall_nr(&self) -> u64 {
        self.w[idx::ORIG_RAX]
    }

    /// Sets the syscall number (`orig_rax`), for restarts and substitution.
    pub fn set_syscall_nr(&mut self, nr: u64) {
        self.w[idx::ORIG_RAX] = nr;
    }

    /// The six syscall arguments: rdi, rsi, rdx, r10, r8, r9 (x86_64 syscall convention).
    pub fn syscall_args(&self) -> [u64; 6] {
        use idx::*;
        [
            self.w[RDI],
            self.w[RSI],
            self.w[RDX],
            self.w[R10],
            self.w[R8],
            self.w[R9],
        ]
    }

    /// Sets the return value register (rax).
    pub fn set_return(&mut self, v: u64) {
        self.w[idx::RAX] = v;
    }

    /// The return value register (rax).
    pub fn return_value(&self) -> u64 {
        self.w[idx::RAX]
    }

    /// Program counter.
    pub fn pc(&self) -> u64 {
        self.w[idx::RIP]
    }

    /// Sets the program counter.
    pub fn set_pc(&mut self, v: u64) {
        self.w[idx::RIP] = v;
    }

    /// Stack pointer.
    pub fn sp(&self) -> u64 {
        self.w[idx::RSP]
    }

    /// Sets the stack pointer.
    pub fn set_sp(&mut self, v: u64) {
        self.w[idx::RSP] = v;
    }

    /// The thread pointer (fs base on x86_64).
    pub fn tls(&self) -> u64 {
        self.w[idx::FS_BASE]
    }

    /// Sets the thread pointer.
    pub fn set_tls(&mut self, v: u64) {
        self.w[idx::FS_BASE] = v;
    }

    /// Registers for a freshly exec'd thread, as Linux `start_thread()` leaves them
    /// (arch/x86/kernel/process_64.c): every general register zero, the given pc and sp, the
    /// user segments of `template` (taken from a live stub so they match the host), IF set.
    pub fn for_exec(template: &Regs, pc: u64, sp: u64) -> Regs {
        use idx::*;
        let mut r = Regs::default();
        r.w[CS] = template.w[CS];
        r.w[SS] = template.w[SS];
        r.w[DS] = 0;
        r.w[ES] = 0;
        r.w[FS] = 0;
        r.w[GS] = 0;
        r.w[EFLAGS] = 0x202;
        r.w[RIP] = pc;
        r.w[RSP] = sp;
        r.w[ORIG_RAX] = u64::MAX;
        r
    }

    /// Size of the instruction that enters the kernel (`syscall`: 2 bytes), for restarts.
    pub const SYSCALL_INSN_LEN: u64 = 2;
}

#[cfg(test)]
mod tests {
    use super::*;
    static_assertions::const_assert_eq!(REGS_SIZE, 216);

    #[test]
    fn bytes_round_trip_and_args_order() {
        let mut r = Regs::default();
        for (i, w) in r.w.iter_mut().enumerate() {
            *w = i as u64 * 0x1111;
        }
        assert_eq!(Regs::from_bytes(&r.to_bytes()), r);
        // rdi, rsi, rdx, r10, r8, r9
        assert_eq!(
            r.syscall_args(),
            [
                14 * 0x1111,
                13 * 0x1111,
                12 * 0x1111,
                7 * 0x1111,
                9 * 0x1111,
                8 * 0x1111
            ]
        );
        assert_eq!(r.syscall_nr(), 15 * 0x1111);
    }
}
