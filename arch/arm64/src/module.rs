//! arm64 module relocations and PLT veneers: the formulas Linux applies in
//! `arch/arm64/kernel/module.c` (`apply_relocate_add`, `reloc_data`, `reloc_insn_movw`,
//! `reloc_insn_imm`) and the veneer of `arch/arm64/kernel/module-plts.c` (`get_plt_entry`).
//!
//! Pure functions over bytes: given the place's bytes, its address P and the value S + A, patch
//! the place or report an overflow. Nothing here knows about ELF files, sections or symbols;
//! the module loader (`um-module`) parses the object, decides addresses, counts and places the
//! veneers, and calls [`apply`]. Relocation numbers are those of "ELF for the Arm 64-bit
//! Architecture" (aaelf64). On an error the place is left untouched.
//!
//! Neighbours: `um-module` (the only caller); `arch/x86/src/module.rs` is the x86_64 twin.

/// `R_ARM_NONE`, which Linux also accepts in arm64 modules.
pub const R_ARM_NONE: u32 = 0;
/// `R_AARCH64_NONE`.
pub const R_AARCH64_NONE: u32 = 256;
/// `R_AARCH64_ABS64`: S + A, 64 bits.
pub const R_AARCH64_ABS64: u32 = 257;
/// `R_AARCH64_ABS32`: S + A, 32 bits, unsigned.
pub const R_AARCH64_ABS32: u32 = 258;
/// `R_AARCH64_ABS16`: S + A, 16 bits, unsigned.
pub const R_AARCH64_ABS16: u32 = 259;
/// `R_AARCH64_PREL64`: S + A - P, 64 bits.
pub const R_AARCH64_PREL64: u32 = 260;
/// `R_AARCH64_PREL32`: S + A - P, 32 bits, signed.
pub const R_AARCH64_PREL32: u32 = 261;
/// `R_AARCH64_PREL16`: S + A - P, 16 bits, signed.
pub const R_AARCH64_PREL16: u32 = 262;
/// `R_AARCH64_MOVW_UABS_G0`: bits \[15:0\] of S + A into MOVZ/MOVK, checked.
pub const R_AARCH64_MOVW_UABS_G0: u32 = 263;
/// `R_AARCH64_MOVW_UABS_G0_NC`: bits \[15:0\], not checked.
pub const R_AARCH64_MOVW_UABS_G0_NC: u32 = 264;
/// `R_AARCH64_MOVW_UABS_G1`: bits \[31:16\], checked.
pub const R_AARCH64_MOVW_UABS_G1: u32 = 265;
/// `R_AARCH64_MOVW_UABS_G1_NC`: bits \[31:16\], not checked.
pub const R_AARCH64_MOVW_UABS_G1_NC: u32 = 266;
/// `R_AARCH64_MOVW_UABS_G2`: bits \[47:32\], checked.
pub const R_AARCH64_MOVW_UABS_G2: u32 = 267;
/// `R_AARCH64_MOVW_UABS_G2_NC`: bits \[47:32\], not checked.
pub const R_AARCH64_MOVW_UABS_G2_NC: u32 = 268;
/// `R_AARCH64_MOVW_UABS_G3`: bits \[63:48\] (cannot overflow).
pub const R_AARCH64_MOVW_UABS_G3: u32 = 269;
/// `R_AARCH64_LD_PREL_LO19`: LDR (literal), (S + A - P) >> 2 in 19 signed bits.
pub const R_AARCH64_LD_PREL_LO19: u32 = 273;
/// `R_AARCH64_ADR_PREL_LO21`: ADR, S + A - P in 21 signed bits.
pub const R_AARCH64_ADR_PREL_LO21: u32 = 274;
/// `R_AARCH64_ADR_PREL_PG_HI21`: ADRP, Page(S + A) - Page(P) in 21+12 signed bits.
pub const R_AARCH64_ADR_PREL_PG_HI21: u32 = 275;
/// `R_AARCH64_ADR_PREL_PG_HI21_NC`: the same, not checked.
pub const R_AARCH64_ADR_PREL_PG_HI21_NC: u32 = 276;
/// `R_AARCH64_ADD_ABS_LO12_NC`: ADD, bits \[11:0\] of S + A.
pub const R_AARCH64_ADD_ABS_LO12_NC: u32 = 277;
/// `R_AARCH64_LDST8_ABS_LO12_NC`: LD/ST byte, bits \[11:0\].
pub const R_AARCH64_LDST8_ABS_LO12_NC: u32 = 278;
/// `R_AARCH64_JUMP26`: B, (S + A - P) >> 2 in 26 signed bits (+-128 MiB).
pub const R_AARCH64_JUMP26: u32 = 282;
/// `R_AARCH64_CALL26`: BL, like JUMP26.
pub const R_AARCH64_CALL26: u32 = 283;
/// `R_AARCH64_LDST16_ABS_LO12_NC`: LD/ST halfword, bits \[11:1\].
pub const R_AARCH64_LDST16_ABS_LO12_NC: u32 = 284;
/// `R_AARCH64_LDST32_ABS_LO12_NC`: LD/ST word, bits \[11:2\].
pub const R_AARCH64_LDST32_ABS_LO12_NC: u32 = 285;
/// `R_AARCH64_LDST64_ABS_LO12_NC`: LD/ST doubleword, bits \[11:3\].
pub const R_AARCH64_LDST64_ABS_LO12_NC: u32 = 286;
/// `R_AARCH64_LDST128_ABS_LO12_NC`: LD/ST quadword, bits \[11:4\].
pub const R_AARCH64_LDST128_ABS_LO12_NC: u32 = 299;

/// The relocations a module may use (the set Linux's `apply_relocate_add` handles, less the
/// signed MOVW, PREL MOVW, TSTBR14 and CONDBR19 forms, which compilers do not emit for modules).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reloc {
    /// `R_AARCH64_NONE` / `R_ARM_NONE`: nothing to do.
    None,
    /// `R_AARCH64_ABS64`.
    Abs64,
    /// `R_AARCH64_ABS32`.
    Abs32,
    /// `R_AARCH64_ABS16`.
    Abs16,
    /// `R_AARCH64_PREL64`.
    Prel64,
    /// `R_AARCH64_PREL32`.
    Prel32,
    /// `R_AARCH64_PREL16`.
    Prel16,
    /// `R_AARCH64_MOVW_UABS_G0`.
    MovwUabsG0,
    /// `R_AARCH64_MOVW_UABS_G0_NC`.
    MovwUabsG0Nc,
    /// `R_AARCH64_MOVW_UABS_G1`.
    MovwUabsG1,
    /// `R_AARCH64_MOVW_UABS_G1_NC`.
    MovwUabsG1Nc,
    /// `R_AARCH64_MOVW_UABS_G2`.
    MovwUabsG2,
    /// `R_AARCH64_MOVW_UABS_G2_NC`.
    MovwUabsG2Nc,
    /// `R_AARCH64_MOVW_UABS_G3`.
    MovwUabsG3,
    /// `R_AARCH64_LD_PREL_LO19`.
    LdPrelLo19,
    /// `R_AARCH64_ADR_PREL_LO21`.
    AdrPrelLo21,
    /// `R_AARCH64_ADR_PREL_PG_HI21`.
    AdrPrelPgHi21,
    /// `R_AARCH64_ADR_PREL_PG_HI21_NC`.
    AdrPrelPgHi21Nc,
    /// `R_AARCH64_ADD_ABS_LO12_NC`.
    AddAbsLo12Nc,
    /// `R_AARCH64_LDST8_ABS_LO12_NC`.
    Ldst8AbsLo12Nc,
    /// `R_AARCH64_LDST16_ABS_LO12_NC`.
    Ldst16AbsLo12Nc,
    /// `R_AARCH64_LDST32_ABS_LO12_NC`.
    Ldst32AbsLo12Nc,
    /// `R_AARCH64_LDST64_ABS_LO12_NC`.
    Ldst64AbsLo12Nc,
    /// `R_AARCH64_LDST128_ABS_LO12_NC`.
    Ldst128AbsLo12Nc,
    /// `R_AARCH64_JUMP26`.
    Jump26,
    /// `R_AARCH64_CALL26`.
    Call26,
}

/// Why a relocation could not be applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelocError {
    /// The value does not fit the field (Linux: `-ERANGE`, reported as "overflow in relocation
    /// type %d val %Lx" and `-ENOEXEC`).
    Overflow,
    /// The place is shorter than the relocation's field (a malformed object).
    Truncated,
}

impl Reloc {
    /// The relocation for an ELF `r_type`, or `None` if modules may not use it.
    pub fn from_type(r_type: u32) -> Option<Reloc> {
        Some(match r_type {
            R_ARM_NONE | R_AARCH64_NONE => Reloc::None,
            R_AARCH64_ABS64 => Reloc::Abs64,
            R_AARCH64_ABS32 => Reloc::Abs32,
            R_AARCH64_ABS16 => Reloc::Abs16,
            R_AARCH64_PREL64 => Reloc::Prel64,
            R_AARCH64_PREL32 => Reloc::Prel32,
            R_AARCH64_PREL16 => Reloc::Prel16,
            R_AARCH64_MOVW_UABS_G0 => Reloc::MovwUabsG0,
            R_AARCH64_MOVW_UABS_G0_NC => Reloc::MovwUabsG0Nc,
            R_AARCH64_MOVW_UABS_G1 => Reloc::MovwUabsG1,
            R_AARCH64_MOVW_UABS_G1_NC => Reloc::MovwUabsG1Nc,
            R_AARCH64_MOVW_UABS_G2 => Reloc::MovwUabsG2,
            R_AARCH64_MOVW_UABS_G2_NC => Reloc::MovwUabsG2Nc,
            R_AARCH64_MOVW_UABS_G3 => Reloc::MovwUabsG3,
            R_AARCH64_LD_PREL_LO19 => Reloc::LdPrelLo19,
            R_AARCH64_ADR_PREL_LO21 => Reloc::AdrPrelLo21,
            R_AARCH64_ADR_PREL_PG_HI21 => Reloc::AdrPrelPgHi21,
            R_AARCH64_ADR_PREL_PG_HI21_NC => Reloc::AdrPrelPgHi21Nc,
            R_AARCH64_ADD_ABS_LO12_NC => Reloc::AddAbsLo12Nc,
            R_AARCH64_LDST8_ABS_LO12_NC => Reloc::Ldst8AbsLo12Nc,
            R_AARCH64_LDST16_ABS_LO12_NC => Reloc::Ldst16AbsLo12Nc,
            R_AARCH64_LDST32_ABS_LO12_NC => Reloc::Ldst32AbsLo12Nc,
            R_AARCH64_LDST64_ABS_LO12_NC => Reloc::Ldst64AbsLo12Nc,
            R_AARCH64_LDST128_ABS_LO12_NC => Reloc::Ldst128AbsLo12Nc,
            R_AARCH64_JUMP26 => Reloc::Jump26,
            R_AARCH64_CALL26 => Reloc::Call26,
            _ => return None,
        })
    }

    /// The ELF name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Reloc::None => "R_AARCH64_NONE",
            Reloc::Abs64 => "R_AARCH64_ABS64",
            Reloc::Abs32 => "R_AARCH64_ABS32",
            Reloc::Abs16 => "R_AARCH64_ABS16",
            Reloc::Prel64 => "R_AARCH64_PREL64",
            Reloc::Prel32 => "R_AARCH64_PREL32",
            Reloc::Prel16 => "R_AARCH64_PREL16",
            Reloc::MovwUabsG0 => "R_AARCH64_MOVW_UABS_G0",
            Reloc::MovwUabsG0Nc => "R_AARCH64_MOVW_UABS_G0_NC",
            Reloc::MovwUabsG1 => "R_AARCH64_MOVW_UABS_G1",
            Reloc::MovwUabsG1Nc => "R_AARCH64_MOVW_UABS_G1_NC",
            Reloc::MovwUabsG2 => "R_AARCH64_MOVW_UABS_G2",
            Reloc::MovwUabsG2Nc => "R_AARCH64_MOVW_UABS_G2_NC",
            Reloc::MovwUabsG3 => "R_AARCH64_MOVW_UABS_G3",
            Reloc::LdPrelLo19 => "R_AARCH64_LD_PREL_LO19",
            Reloc::AdrPrelLo21 => "R_AARCH64_ADR_PREL_LO21",
            Reloc::AdrPrelPgHi21 => "R_AARCH64_ADR_PREL_PG_HI21",
            Reloc::AdrPrelPgHi21Nc => "R_AARCH64_ADR_PREL_PG_HI21_NC",
            Reloc::AddAbsLo12Nc => "R_AARCH64_ADD_ABS_LO12_NC",
            Reloc::Ldst8AbsLo12Nc => "R_AARCH64_LDST8_ABS_LO12_NC",
            Reloc::Ldst16AbsLo12Nc => "R_AARCH64_LDST16_ABS_LO12_NC",
            Reloc::Ldst32AbsLo12Nc => "R_AARCH64_LDST32_ABS_LO12_NC",
            Reloc::Ldst64AbsLo12Nc => "R_AARCH64_LDST64_ABS_LO12_NC",
            Reloc::Ldst128AbsLo12Nc => "R_AARCH64_LDST128_ABS_LO12_NC",
            Reloc::Jump26 => "R_AARCH64_JUMP26",
            Reloc::Call26 => "R_AARCH64_CALL26",
        }
    }

    /// How many bytes at the place the relocation reads and writes.
    pub fn size(self) -> usize {
        match self {
            Reloc::None => 0,
            Reloc::Abs64 | Reloc::Prel64 => 8,
            Reloc::Abs16 | Reloc::Prel16 => 2,
            _ => 4,
        }
    }

    /// CALL26 or JUMP26: a direct branch that may need a veneer.
    pub fn is_branch26(self) -> bool {
        matches!(self, Reloc::Call26 | Reloc::Jump26)
    }
}

/// `enum aarch64_reloc_op` in module.c.
#[derive(Clone, Copy)]
enum Op {
    Abs,
    Prel,
    Page,
}

/// `enum aarch64_insn_imm_type`: where an immediate lives in the instruction.
#[derive(Clone, Copy)]
enum Imm {
    /// B/BL: bits \[25:0\].
    Imm26,
    /// LDR (literal): bits \[23:5\].
    Imm19,
    /// ADD/LDR/STR (unsigned offset): bits \[21:10\].
    Imm12,
    /// ADR/ADRP: immlo in \[30:29\], immhi in \[23:5\].
    Adr,
    /// MOVZ/MOVK: bits \[20:5\].
    Imm16,
}

/// `do_reloc`: the value before shifting, as a two's-complement 64-bit quantity.
fn do_reloc(op: Op, p: u64, val: u64) -> u64 {
    match op {
        Op::Abs => val,
        Op::Prel => val.wrapping_sub(p),
        Op::Page => (val & !0xfff).wrapping_sub(p & !0xfff),
    }
}

/// `aarch64_insn_encode_immediate` for the fields used here.
fn encode(imm_type: Imm, insn: u32, imm: u64) -> u32 {
    let (mask, field) = match imm_type {
        Imm::Imm26 => (0x03ff_ffff, imm as u32 & 0x03ff_ffff),
        Imm::Imm19 => (0x7_ffff << 5, (imm as u32 & 0x7_ffff) << 5),
        Imm::Imm12 => (0xfff << 10, (imm as u32 & 0xfff) << 10),
        Imm::Imm16 => (0xffff << 5, (imm as u32 & 0xffff) << 5),
        Imm::Adr => (
            (3 << 29) | (0x7_ffff << 5),
            ((imm as u32 & 3) << 29) | (((imm >> 2) as u32 & 0x7_ffff) << 5),
        ),
    };
    (insn & !mask) | field
}

fn read_u32(place: &[u8]) -> Result<u32, RelocError> {
    let b: [u8; 4] = place
        .get(..4)
        .and_then(|s| s.try_into().ok())
        .ok_or(RelocError::Truncated)?;
    Ok(u32::from_le_bytes(b))
}

fn write(place: &mut [u8], bytes: &[u8]) -> Result<(), RelocError> {
    place
        .get_mut(..bytes.len())
        .ok_or(RelocError::Truncated)?
        .copy_from_slice(bytes);
    Ok(())
}

/// `reloc_data`: 16/32-bit ABS are unsigned ([0, 2^n)), PREL signed, as Linux chooses; 64-bit
/// fields are never checked.
fn reloc_data(op: Op, place: &mut [u8], p: u64, val: u64, bits: u32) -> Result<(), RelocError> {
    let sval = do_reloc(op, p, val) as i64;
    let fits = match (bits, op) {
        (16, Op::Abs) => (0..=i64::from(u16::MAX)).contains(&sval),
        (16, _) => i16::try_from(sval).is_ok(),
        (32, Op::Abs) => (0..=i64::from(u32::MAX)).contains(&sval),
        (32, _) => i32::try_from(sval).is_ok(),
        _ => true,
    };
    if !fits {
        return Err(RelocError::Overflow);
    }
    match bits {
        16 => write(place, &(sval as u16).to_le_bytes()),
        32 => write(place, &(sval as u32).to_le_bytes()),
        _ => write(place, &(sval as u64).to_le_bytes()),
    }
}

/// `reloc_insn_movw` for the unsigned (MOVZ/MOVK, opcode kept) forms: the 16 bits at `lsb`; a
/// checked form overflows when the value shifted right by `lsb` exceeds 16 bits.
fn reloc_movw(place: &mut [u8], val: u64, lsb: u32, check: bool) -> Result<(), RelocError> {
    let insn = read_u32(place)?;
    let imm = ((val as i64) >> lsb) as u64;
    if check && imm > u64::from(u16::MAX) {
        return Err(RelocError::Overflow);
    }
    write(place, &encode(Imm::Imm16, insn, imm).to_le_bytes())
}

/// `reloc_insn_imm`: `len` bits of the value from bit `lsb`; when checked, the bits above
/// must all equal the sign bit (the value fits `len` signed bits after the shift).
fn reloc_imm(
    op: Op,
    place: &mut [u8],
    p: u64,
    val: u64,
    lsb: u32,
    len: u32,
    imm_type: Imm,
    check: bool,
) -> Result<(), RelocError> {
    let insn = read_u32(place)?;
    let sval = (do_reloc(op, p, val) as i64) >> lsb;
    if check {
        let min = -(1i64 << (len - 1));
        let max = (1i64 << (len - 1)) - 1;
        if sval < min || sval > max {
            return Err(RelocError::Overflow);
        }
    }
    let mask = (1u64 << len) - 1;
    write(
        place,
        &encode(imm_type, insn, sval as u64 & mask).to_le_bytes(),
    )
}

/// Applies `reloc` to `place`, the bytes at address `p` (at least [`Reloc::size`] of them),
/// with `val` = S + A. CALL26/JUMP26 report [`RelocError::Overflow`] when the target is out of
/// +-128 MiB: the caller then retries with the address of a [`veneer`] (module.c does the same
/// through `module_emit_plt_entry`). On an error the place is unchanged.
pub fn apply(reloc: Reloc, place: &mut [u8], p: u64, val: u64) -> Result<(), RelocError> {
    use Imm::*;
    use Op::*;
    match reloc {
        Reloc::None => Ok(()),
        Reloc::Abs64 => reloc_data(Abs, place, p, val, 64),
        Reloc::Abs32 => reloc_data(Abs, place, p, val, 32),
        Reloc::Abs16 => reloc_data(Abs, place, p, val, 16),
        Reloc::Prel64 => reloc_data(Prel, place, p, val, 64),
        Reloc::Prel32 => reloc_data(Prel, place, p, val, 32),
        Reloc::Prel16 => reloc_data(Prel, place, p, val, 16),
        Reloc::MovwUabsG0 => reloc_movw(place, val, 0, true),
        Reloc::MovwUabsG0Nc => reloc_movw(place, val, 0, false),
        Reloc::MovwUabsG1 => reloc_movw(place, val, 16, true),
        Reloc::MovwUabsG1Nc => reloc_movw(place, val, 16, false),
        Reloc::MovwUabsG2 => reloc_movw(place, val, 32, true),
        Reloc::MovwUabsG2Nc => reloc_movw(place, val, 32, false),
        Reloc::MovwUabsG3 => reloc_movw(place, val, 48, false),
        Reloc::LdPrelLo19 => reloc_imm(Prel, place, p, val, 2, 19, Imm19, true),
        Reloc::AdrPrelLo21 => reloc_imm(Prel, place, p, val, 0, 21, Adr, true),
        Reloc::AdrPrelPgHi21 => reloc_imm(Page, place, p, val, 12, 21, Adr, true),
        Reloc::AdrPrelPgHi21Nc => reloc_imm(Page, place, p, val, 12, 21, Adr, false),
        Reloc::AddAbsLo12Nc | Reloc::Ldst8AbsLo12Nc => {
            reloc_imm(Abs, place, p, val, 0, 12, Imm12, false)
        }
        Reloc::Ldst16AbsLo12Nc => reloc_imm(Abs, place, p, val, 1, 11, Imm12, false),
        Reloc::Ldst32AbsLo12Nc => reloc_imm(Abs, place, p, val, 2, 10, Imm12, false),
        Reloc::Ldst64AbsLo12Nc => reloc_imm(Abs, place, p, val, 3, 9, Imm12, false),
        Reloc::Ldst128AbsLo12Nc => reloc_imm(Abs, place, p, val, 4, 8, Imm12, false),
        Reloc::Jump26 | Reloc::Call26 => reloc_imm(Prel, place, p, val, 2, 26, Imm26, true),
    }
}

/// Whether a B/BL at `p` reaches `target` directly (+-128 MiB).
pub fn branch26_reaches(p: u64, target: u64) -> bool {
    let d = target.wrapping_sub(p) as i64;
    (-(1i64 << 27)..(1i64 << 27)).contains(&d)
}

/// Bytes per veneer slot. A veneer is `adrp x16, target; add x16, x16, :lo12:target; br x16`
/// (module-plts.c `get_plt_entry`) padded with a `udf #0`, or, when the target is beyond
/// ADRP's +-4 GiB (module-plts.c never needs this: Linux keeps modules within 2 GiB of the
/// kernel, but host address spaces place us where they like), `ldr x16, 8; br x16; .quad target`.
pub const VENEER_SIZE: u64 = 16;

/// Alignment of a veneer slot.
pub const VENEER_ALIGN: u64 = 16;

/// `adrp x16, #0`.
const ADRP_X16: u32 = 0x9000_0010;
/// `add x16, x16, #0`.
const ADD_X16_X16: u32 = 0x9100_0210;
/// `br x16` (`aarch64_insn_gen_branch_reg(AARCH64_INSN_REG_16, ..._NOLINK)`).
const BR_X16: u32 = 0xd61f_0200;
/// `ldr x16, .+8`.
const LDR_X16_LIT8: u32 = 0x5800_0050;
/// `udf #0`.
const UDF: u32 = 0;

/// The veneer placed at `at` that jumps to `target` (x16 is the intra-procedure-call scratch
/// register the AAPCS64 gives linkers and veneers).
pub fn veneer(at: u64, target: u64) -> [u8; VENEER_SIZE as usize] {
    let pages = ((target & !0xfff).wrapping_sub(at & !0xfff) as i64) >> 12;
    let words = if (-(1i64 << 20)..(1i64 << 20)).contains(&pages) {
        [
            encode(Imm::Adr, ADRP_X16, pages as u64),
            encode(Imm::Imm12, ADD_X16_X16, target & 0xfff),
            BR_X16,
            UDF,
        ]
    } else {
        [LDR_X16_LIT8, BR_X16, target as u32, (target >> 32) as u32]
    };
    let mut out = [0u8; VENEER_SIZE as usize];
    for (chunk, w) in out.chunks_exact_mut(4).zip(words) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    //! Expected encodings come from GNU ld 2.40 (aarch64-linux-gnu) linking the same
    //! instructions at the same addresses (`-Ttext=0x10400000 -Tdata=0x10500000` and
    //! `--defsym` for the targets), so they are independent of the formulas above.
    use super::*;

    const TEXT: u64 = 0x1040_0000;

    fn run(reloc: Reloc, insn: u32, p: u64, val: u64) -> Result<u32, RelocError> {
        let mut b = insn.to_le_bytes();
        apply(reloc, &mut b, p, val)?;
        Ok(u32::from_le_bytes(b))
    }

    #[test]
    fn types_round_trip() {
        for t in 0..400 {
            if let Some(r) = Reloc::from_type(t) {
                assert!(r.name().starts_with("R_AARCH64_"));
                assert!(r.size() <= 8);
            }
        }
        assert_eq!(Reloc::from_type(283), Some(Reloc::Call26));
        assert_eq!(Reloc::from_type(0), Some(Reloc::None));
        assert_eq!(Reloc::from_type(256), Some(Reloc::None));
        // TLS and GOT relocations are not for modules.
        assert_eq!(Reloc::from_type(311), None); // ADR_GOT_PAGE
        assert_eq!(Reloc::from_type(1024), None); // COPY
    }

    #[test]
    fn branches_match_ld() {
        assert_eq!(
            run(Reloc::Call26, 0x9400_0000, TEXT, 0x1040_1234),
            Ok(0x9400_048d)
        );
        assert_eq!(
            run(Reloc::Call26, 0x9400_0000, TEXT + 4, 0x0840_0004),
            Ok(0x9600_0000)
        );
        assert_eq!(
            run(Reloc::Jump26, 0x1400_0000, TEXT + 8, 0x1040_1234),
            Ok(0x1400_048b)
        );
    }

    #[test]
    fn branch_range_limits() {
        // The last reachable word each way, and one past it.
        let p = 0x4000_0000u64;
        assert!(run(Reloc::Call26, 0x9400_0000, p, p + (1 << 27) - 4).is_ok());
        assert!(run(Reloc::Call26, 0x9400_0000, p, p - (1 << 27)).is_ok());
        assert_eq!(
            run(Reloc::Call26, 0x9400_0000, p, p + (1 << 27)),
            Err(RelocError::Overflow)
        );
        assert_eq!(
            run(Reloc::Jump26, 0x1400_0000, p, p - (1 << 27) - 4),
            Err(RelocError::Overflow)
        );
        assert!(branch26_reaches(p, p + (1 << 27) - 4));
        assert!(!branch26_reaches(p, p + (1 << 27)));
        assert!(branch26_reaches(p, p - (1 << 27)));
        assert!(!branch26_reaches(p, 0xffff_0000_0000_0000));
    }

    #[test]
    fn adrp_and_lo12_match_ld() {
        let dat = 0x2345_6ff0;
        assert_eq!(
            run(Reloc::AdrPrelPgHi21, 0x9000_0001, TEXT + 0xc, dat),
            Ok(0xd009_82a1)
        );
        assert_eq!(
            run(Reloc::AdrPrelPgHi21Nc, 0x9000_0001, TEXT + 0xc, dat),
            Ok(0xd009_82a1)
        );
        assert_eq!(
            run(Reloc::AddAbsLo12Nc, 0x9100_0021, 0, dat),
            Ok(0x913f_c021)
        );
        assert_eq!(
            run(Reloc::Ldst8AbsLo12Nc, 0x3940_0022, 0, dat),
            Ok(0x397f_c022)
        );
        assert_eq!(
            run(Reloc::Ldst16AbsLo12Nc, 0x7940_0022, 0, dat),
            Ok(0x795f_e022)
        );
        assert_eq!(
            run(Reloc::Ldst32AbsLo12Nc, 0xb940_0022, 0, dat),
            Ok(0xb94f_f022)
        );
        assert_eq!(
            run(Reloc::Ldst64AbsLo12Nc, 0xf940_0022, 0, dat),
            Ok(0xf947_f822)
        );
        assert_eq!(
            run(Reloc::Ldst128AbsLo12Nc, 0x3dc0_0022, 0, dat),
            Ok(0x3dc3_fc22)
        );
        // Backwards, to page 1.
        assert_eq!(
            run(Reloc::AdrPrelPgHi21, 0x9000_0005, TEXT + 0x54, 0x1000),
            Ok(0xb0f7_e005)
        );
    }

    #[test]
    fn adrp_range() {
        let p = 0x1_0000_0000u64;
        assert!(run(Reloc::AdrPrelPgHi21, 0x9000_0000, p, p + (1 << 32) - 0x1000).is_ok());
        assert_eq!(
            run(Reloc::AdrPrelPgHi21, 0x9000_0000, p, p + (1 << 32)),
            Err(RelocError::Overflow)
        );
        // The _NC form does not check.
        assert!(run(Reloc::AdrPrelPgHi21Nc, 0x9000_0000, p, p + (1 << 32)).is_ok());
    }

    #[test]
    fn adr_and_literal_match_ld() {
        assert_eq!(
            run(Reloc::AdrPrelLo21, 0x1000_0003, TEXT + 0x28, 0x104f_fff8),
            Ok(0x107f_fe83)
        );
        assert_eq!(
            run(Reloc::LdPrelLo19, 0x5800_0004, TEXT + 0x2c, 0x104f_fff8),
            Ok(0x587f_fe64)
        );
        assert_eq!(
            run(Reloc::AdrPrelLo21, 0x1000_0003, TEXT + 0x30, 0x1030_0040),
            Ok(0x1080_0083)
        );
        assert_eq!(
            run(Reloc::LdPrelLo19, 0x5800_0004, TEXT + 0x34, 0x1030_0040),
            Ok(0x5880_0064)
        );
        // +-1 MiB.
        assert_eq!(
            run(Reloc::AdrPrelLo21, 0x1000_0003, TEXT, TEXT + (1 << 20)),
            Err(RelocError::Overflow)
        );
        assert_eq!(
            run(Reloc::LdPrelLo19, 0x5800_0004, TEXT, TEXT - (1 << 20) - 4),
            Err(RelocError::Overflow)
        );
    }

    #[test]
    fn movw_match_ld() {
        let big = 0x1234_5678_9abc_def0;
        assert_eq!(
            run(Reloc::MovwUabsG0, 0xd280_0000, 0, 0xbeef),
            Ok(0xd297_dde0)
        );
        assert_eq!(
            run(Reloc::MovwUabsG1, 0xd2a0_0000, 0, 0xdead_beef),
            Ok(0xd2bb_d5a0)
        );
        assert_eq!(
            run(Reloc::MovwUabsG2, 0xd2c0_0000, 0, 0xcafe_1234_5678),
            Ok(0xd2d9_5fc0)
        );
        assert_eq!(run(Reloc::MovwUabsG3, 0xf2e0_0000, 0, big), Ok(0xf2e2_4680));
        assert_eq!(
            run(Reloc::MovwUabsG2Nc, 0xf2c0_0000, 0, big),
            Ok(0xf2ca_cf00)
        );
        assert_eq!(
            run(Reloc::MovwUabsG1Nc, 0xf2a0_0000, 0, big),
            Ok(0xf2b3_5780)
        );
        assert_eq!(
            run(Reloc::MovwUabsG0Nc, 0xf280_0000, 0, big),
            Ok(0xf29b_de00)
        );
    }

    #[test]
    fn movw_overflow() {
        assert_eq!(
            run(Reloc::MovwUabsG0, 0xd280_0000, 0, 0x1_0000),
            Err(RelocError::Overflow)
        );
        assert_eq!(
            run(Reloc::MovwUabsG1, 0xd2a0_0000, 0, 0x1_0000_0000),
            Err(RelocError::Overflow)
        );
        assert_eq!(
            run(Reloc::MovwUabsG2, 0xd2c0_0000, 0, 1 << 48),
            Err(RelocError::Overflow)
        );
        // A value with the top bit set is negative to Linux's signed shift: overflow too.
        assert_eq!(
            run(Reloc::MovwUabsG2, 0xd2c0_0000, 0, 1 << 63),
            Err(RelocError::Overflow)
        );
        assert!(run(Reloc::MovwUabsG3, 0xf2e0_0000, 0, u64::MAX).is_ok());
        assert!(run(Reloc::MovwUabsG0Nc, 0xf280_0000, 0, u64::MAX).is_ok());
    }

    #[test]
    fn data_match_ld() {
        let data = 0x1050_0000u64;
        let mut b = [0u8; 8];
        apply(Reloc::Abs64, &mut b, data, 0x1234_5678_9abc_def0).unwrap();
        assert_eq!(b, [0xf0, 0xde, 0xbc, 0x9a, 0x78, 0x56, 0x34, 0x12]);
        let mut b = [0u8; 4];
        apply(Reloc::Abs32, &mut b, data + 8, 0xdead_beef).unwrap();
        assert_eq!(b, [0xef, 0xbe, 0xad, 0xde]);
        let mut b = [0u8; 2];
        apply(Reloc::Abs16, &mut b, data + 12, 0xbeef).unwrap();
        assert_eq!(b, [0xef, 0xbe]);
        let mut b = [0u8; 2];
        apply(Reloc::Prel16, &mut b, data + 14, 0x104f_fff8).unwrap();
        assert_eq!(b, [0xea, 0xff]);
        let mut b = [0u8; 4];
        apply(Reloc::Prel32, &mut b, data + 16, 0x0840_0004).unwrap();
        assert_eq!(b, [0xf4, 0xff, 0xef, 0xf7]);
        let mut b = [0u8; 8];
        apply(Reloc::Prel64, &mut b, data + 20, 0x1234_5678_9abc_def0).unwrap();
        assert_eq!(b, [0xdc, 0xde, 0x6c, 0x8a, 0x78, 0x56, 0x34, 0x12]);
    }

    #[test]
    fn data_overflow_follows_linux() {
        let mut b = [0x55u8; 4];
        // ABS16/ABS32 are unsigned: negative values and values past 2^n overflow.
        assert_eq!(
            apply(Reloc::Abs16, &mut b, 0, 0x1_0000),
            Err(RelocError::Overflow)
        );
        assert_eq!(
            apply(Reloc::Abs16, &mut b, 0, u64::MAX),
            Err(RelocError::Overflow)
        );
        assert_eq!(
            apply(Reloc::Abs32, &mut b, 0, 0x1_0000_0000),
            Err(RelocError::Overflow)
        );
        // PREL16/PREL32 are signed.
        assert_eq!(
            apply(Reloc::Prel16, &mut b, 0x1_0000, 0x1_8000),
            Err(RelocError::Overflow)
        );
        assert!(apply(Reloc::Prel16, &mut b, 0x1_0000, 0x1_7fff).is_ok());
        assert!(apply(Reloc::Prel16, &mut b, 0x1_0000, 0x8000).is_ok());
        assert_eq!(
            apply(Reloc::Prel16, &mut b, 0x1_0000, 0x7fff),
            Err(RelocError::Overflow)
        );
        let mut b = [0x55u8; 4];
        assert_eq!(
            apply(Reloc::Prel32, &mut b, 0, 0x8000_0000),
            Err(RelocError::Overflow)
        );
        // Nothing was written on error.
        assert_eq!(b, [0x55; 4]);
    }

    #[test]
    fn short_place_is_truncated_not_a_panic() {
        let mut b = [0u8; 3];
        assert_eq!(
            apply(Reloc::Call26, &mut b, 0, 0),
            Err(RelocError::Truncated)
        );
        assert_eq!(
            apply(Reloc::Abs64, &mut b, 0, 0),
            Err(RelocError::Truncated)
        );
        assert_eq!(apply(Reloc::None, &mut [], 0, 0), Ok(()));
    }

    fn words(v: &[u8; 16]) -> [u32; 4] {
        let mut w = [0u32; 4];
        for (i, c) in v.chunks_exact(4).enumerate() {
            w[i] = u32::from_le_bytes(c.try_into().unwrap());
        }
        w
    }

    #[test]
    fn veneer_adrp_add_br() {
        // Decode the veneer independently: ADRP page delta, ADD immediate, BR x16.
        let at = 0x7f00_1234_5000u64;
        let target = 0x7f00_9876_5abcu64;
        let w = words(&veneer(at, target));
        assert_eq!(w[0] & 0x9f00_001f, 0x9000_0010, "adrp x16");
        let immlo = u64::from((w[0] >> 29) & 3);
        let immhi = u64::from((w[0] >> 5) & 0x7_ffff);
        let pages = (((immhi << 2 | immlo) << 43) as i64) >> 43;
        let page = ((at & !0xfff) as i64 + (pages << 12)) as u64;
        assert_eq!(w[1] & 0xffc0_03ff, 0x9100_0210, "add x16, x16, #imm");
        let lo = u64::from((w[1] >> 10) & 0xfff);
        assert_eq!(page + lo, target);
        assert_eq!(w[2], 0xd61f_0200, "br x16");
        // Backwards too.
        let w = words(&veneer(target, at + 8));
        let immlo = u64::from((w[0] >> 29) & 3);
        let immhi = u64::from((w[0] >> 5) & 0x7_ffff);
        let pages = (((immhi << 2 | immlo) << 43) as i64) >> 43;
        let page = ((target & !0xfff) as i64 + (pages << 12)) as u64;
        assert_eq!(page + u64::from((w[1] >> 10) & 0xfff), at + 8);
    }

    #[test]
    fn veneer_far_uses_a_literal() {
        let at = 0x10_0000_0000u64;
        let target = 0xaaaa_0000_1234u64;
        let v = veneer(at, target);
        let w = words(&v);
        assert_eq!(w[0], 0x5800_0050, "ldr x16, .+8");
        assert_eq!(w[1], 0xd61f_0200, "br x16");
        assert_eq!(u64::from_le_bytes(v[8..].try_into().unwrap()), target);
    }
}
