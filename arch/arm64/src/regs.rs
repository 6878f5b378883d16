//! arm64 general registers as ptrace sees them: `struct user_pt_regs`
//! (arch/arm64/include/uapi/asm/ptrace.h): x0..x30, sp, pc, pstate; 34 words, 272 bytes.
//! The syscall number is not in here: it is the separate `NT_ARM_SYSTEM_CALL` regset, and
//! x0 is overwritten by the result, so the kernel keeps `orig_x0` itself.

/// Number of words.
pub const NREGS: usize = 34;
/// Size in bytes of `user_pt_regs`.
pub const REGS_SIZE: usize = NREGS * 8;
/// Index of sp.
pub const SP: usize = 31;
/// Index of pc.
pub const PC: usize = 32;
/// Index of pstate.
pub const PSTATE: usize = 33;

/// A guest thread's general registers, plus what arm64 keeps outside `user_pt_regs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Regs {
    /// x0..x30, sp, pc, pstate.
    pub w: [u64; NREGS],
    /// The syscall number (from `NT_ARM_SYSTEM_CALL`; x8 at entry).
    pub syscallno: u64,
    /// x0 at syscall entry (for restarts).
    pub orig_x0: u64,
    /// tpidr_el0.
    pub tls: u64,
}

impl Default for Regs {
    fn default() -> Self {
        Regs {
            w: [0; NREGS],
            syscallno: 0,
            orig_x0: 0,
            tls: 0,
        }
    }
}

impl Regs {
    /// Decodes the `NT_PRSTATUS` bytes (the extra fields are left as they were).
    pub fn load_prstatus(&mut self, b: &[u8; REGS_SIZE]) {
        for (i, v) in self.w.iter_mut().enumerate() {
            *v = u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
        }
    }

    /// Encodes `user_pt_regs`.
    pub fn prstatus(&self) -> [u8; REGS_SIZE] {
        let mut b = [0u8; REGS_SIZE];
        for (i, v) in self.w.iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    /// Syscall number.
    pub fn syscall_nr(&self) -> u64 {
        self.syscallno
    }

    /// Sets the syscall number.
    pub fn set_syscall_nr(&mut self, nr: u64) {
        self.syscallno = nr;
    }

    /// Arguments x0..x5 (x0 as it was at entry).
    pub fn syscall_args(&self) -> [u64; 6] {
        [
            self.orig_x0,
            self.w[1],
            self.w[2],
            self.w[3],
            self.w[4],
            self.w[5],
        ]
    }

    /// Sets the return value (x0).
    pub fn set_return(&mut self, v: u64) {
        self.w[0] = v;
    }

    /// The return value register (x0).
    pub fn return_value(&self) -> u64 {
        self.w[0]
    }

    /// Program counter.
    pub fn pc(&self) -> u64 {
        self.w[PC]
    }

    /// Sets the program counter.
    pub fn set_pc(&mut self, v: u64) {
        self.w[PC] = v;
    }

    /// Stack pointer.
    pub fn sp(&self) -> u64 {
        self.w[SP]
    }

    /// Sets the stack pointer.
    pub fn set_sp(&mut self, v: u64) {
        self.w[SP] = v;
    }

    /// tpidr_el0.
    pub fn tls(&self) -> u64 {
        self.tls
    }

    /// Sets tpidr_el0.
    pub fn set_tls(&mut self, v: u64) {
        self.tls = v;
    }

    /// Registers for a freshly exec'd thread (arch/arm64/include/asm/processor.h
    /// `start_thread`): all zero, pc and sp set, PSTATE = EL0t (0).
    pub fn for_exec(_template: &Regs, pc: u64, sp: u64) -> Regs {
        let mut r = Regs::default();
        r.w[PC] = pc;
        r.w[SP] = sp;
        r
    }

    /// Size of the `svc #0` instruction, for restarts.
    pub const SYSCALL_INSN_LEN: u64 = 4;
}

#[cfg(test)]
mod tests {
    use super::*;
    static_assertions::const_assert_eq!(REGS_SIZE, 272);

    #[test]
    fn prstatus_round_trip_and_args() {
        let mut r = Regs::default();
        for (i, w) in r.w.iter_mut().enumerate() {
            *w = i as u64 + 100;
        }
        let mut back = Regs::default();
        back.load_prstatus(&r.prstatus());
        assert_eq!(back.w, r.w);
        r.orig_x0 = 7;
        assert_eq!(r.syscall_args(), [7, 101, 102, 103, 104, 105]);
        assert_eq!(r.pc(), 132);
        assert_eq!(r.sp(), 131);
    }
}
