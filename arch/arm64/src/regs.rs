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

    /// Rewinds a syscall that returned a restart code so that it runs again
    /// (arch/arm64/kernel/signal.c `do_signal`): pc back over the `svc`, x0 back to `orig_x0`.
    /// The number needs no restoring: x8 still holds it and the host reads it again at the `svc`.
    pub fn restart_syscall(&mut self) {
        self.w[0] = self.orig_x0;
        self.w[PC] = self.w[PC].wrapping_sub(Self::SYSCALL_INSN_LEN);
    }
}

/// `PSTATE` bits (arch/arm64/include/uapi/asm/ptrace.h).
pub mod pstate {
    /// Mode field M[3:0] plus M[4] (AArch32): 0 is EL0t, the only valid user mode here.
    pub const MODE_MASK: u64 = 0x1f;
    /// Debug, SError, IRQ and FIQ masks: must be clear in user mode.
    pub const DAIF: u64 = 0x3c0;
    /// Software step.
    pub const SS: u64 = 1 << 21;
    /// Tag check override (MTE).
    pub const TCO: u64 = 1 << 25;
    /// Branch type (BTI).
    pub const BTYPE_MASK: u64 = 0xc00;
    /// Condition flags N, Z, C, V.
    pub const NZCV: u64 = 0xf000_0000;
    /// `SPSR_EL1_AARCH64_RES0_BITS` (arch/arm64/include/asm/ptrace.h, Linux 6.1): bits a user
    /// can never set; cleared by `valid_user_regs`.
    pub const RES0: u64 = 0xffff_ffff_0000_0000 | 0x0c00_0000 | 0x00c0_0000 | 0x001f_e000 | 0x20;

    /// Linux `valid_native_regs` (arch/arm64/kernel/ptrace.c) for a value a user supplied (in a
    /// signal frame): the RES0 bits and a stale single-step bit are dropped; a value that is not
    /// EL0t with DAIF clear is rejected (`None`, which makes rt_sigreturn a bad frame).
    pub fn filter_user(v: u64) -> Option<u64> {
        let v = v & !RES0 & !SS;
        if v & MODE_MASK != 0 || v & DAIF != 0 {
            return None;
        }
        Some(v)
    }
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

    #[test]
    fn restart_rewinds_pc_and_x0() {
        let mut r = Regs::default();
        r.w[PC] = 0x40_1004;
        r.w[0] = (-4i64) as u64; // EINTR-ish result
        r.orig_x0 = 3;
        r.syscallno = 63;
        r.restart_syscall();
        assert_eq!((r.pc(), r.w[0], r.syscall_nr()), (0x40_1000, 3, 63));
        assert_eq!(r.syscall_args()[0], 3);
    }

    #[test]
    fn pstate_filter() {
        // NZCV survive, mode/DAIF make a frame bad, RES0 and SS are dropped.
        assert_eq!(pstate::filter_user(0xf000_0000), Some(0xf000_0000));
        assert_eq!(
            pstate::filter_user(0x6000_0000 | (1 << 21) | (1 << 40)),
            Some(0x6000_0000)
        );
        assert_eq!(pstate::filter_user(0x5), None); // EL1h
        assert_eq!(pstate::filter_user(0x80), None); // I bit
        assert_eq!(pstate::filter_user(0x10), None); // AArch32
    }
}
