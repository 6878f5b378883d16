//! x86_64 module relocations: the formulas of Linux's `arch/x86/kernel/module.c`
//! (`__write_relocate_add`) plus the GOT-relative ones (`R_X86_64_GOTPCREL`, `GOTPCRELX`,
//! `REX_GOTPCRELX`) that Linux's kbuild avoids but position-independent module code uses, and
//! the PLT stub a far `R_X86_64_PLT32` call goes through.
//!
//! Pure functions over bytes: given the place's bytes, its address P, the symbol value S, the
//! addend A and (for the GOT forms) the address of the symbol's GOT entry, patch the place or
//! report an overflow. The module loader (`um-module`) parses the object, allocates and fills
//! the GOT, places the stubs and calls [`apply`]. Numbers are those of the x86-64 psABI. On an
//! error the place is left untouched.
//!
//! Neighbours: `um-module` (the only caller); `arch/arm64/src/module.rs` is the arm64 twin.

/// `R_X86_64_NONE`.
pub const R_X86_64_NONE: u32 = 0;
/// `R_X86_64_64`: S + A, 64 bits.
pub const R_X86_64_64: u32 = 1;
/// `R_X86_64_PC32`: S + A - P, 32 bits signed.
pub const R_X86_64_PC32: u32 = 2;
/// `R_X86_64_PLT32`: L + A - P (L = S, or a PLT stub when S is out of reach).
pub const R_X86_64_PLT32: u32 = 4;
/// `R_X86_64_GOTPCREL`: G + GOT + A - P, 32 bits signed.
pub const R_X86_64_GOTPCREL: u32 = 9;
/// `R_X86_64_32`: S + A, zero-extended 32 bits.
pub const R_X86_64_32: u32 = 10;
/// `R_X86_64_32S`: S + A, sign-extended 32 bits.
pub const R_X86_64_32S: u32 = 11;
/// `R_X86_64_PC64`: S + A - P, 64 bits.
pub const R_X86_64_PC64: u32 = 24;
/// `R_X86_64_GOTPCRELX`: GOTPCREL on a relaxable instruction (we never relax: the GOT is real).
pub const R_X86_64_GOTPCRELX: u32 = 41;
/// `R_X86_64_REX_GOTPCRELX`: the same with a REX prefix.
pub const R_X86_64_REX_GOTPCRELX: u32 = 42;

/// The relocations a module may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reloc {
    /// `R_X86_64_NONE`: nothing to do.
    None,
    /// `R_X86_64_64`.
    Abs64,
    /// `R_X86_64_PC32`.
    Pc32,
    /// `R_X86_64_PLT32`.
    Plt32,
    /// `R_X86_64_32`.
    Abs32,
    /// `R_X86_64_32S`.
    Abs32S,
    /// `R_X86_64_PC64`.
    Pc64,
    /// `R_X86_64_GOTPCREL`.
    GotPcRel,
    /// `R_X86_64_GOTPCRELX`.
    GotPcRelX,
    /// `R_X86_64_REX_GOTPCRELX`.
    RexGotPcRelX,
}

/// Why a relocation could not be applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelocError {
    /// The value does not fit the field (module.c: "overflow in relocation type %d val %Lx",
    /// `-ENOEXEC`).
    Overflow,
    /// The place is shorter than the relocation's field (a malformed object).
    Truncated,
    /// The place already holds a nonzero value (module.c: "Invalid relocation target, existing
    /// value is nonzero", `-ENOEXEC`): the object was relocated twice or is corrupt.
    NotZero,
    /// A GOT relocation was applied without a GOT entry address.
    NoGotEntry,
}

impl Reloc {
    /// The relocation for an ELF `r_type`, or `None` if modules may not use it.
    pub fn from_type(r_type: u32) -> Option<Reloc> {
        Some(match r_type {
            R_X86_64_NONE => Reloc::None,
            R_X86_64_64 => Reloc::Abs64,
            R_X86_64_PC32 => Reloc::Pc32,
            R_X86_64_PLT32 => Reloc::Plt32,
            R_X86_64_32 => Reloc::Abs32,
            R_X86_64_32S => Reloc::Abs32S,
            R_X86_64_PC64 => Reloc::Pc64,
            R_X86_64_GOTPCREL => Reloc::GotPcRel,
            R_X86_64_GOTPCRELX => Reloc::GotPcRelX,
            R_X86_64_REX_GOTPCRELX => Reloc::RexGotPcRelX,
            _ => return None,
        })
    }

    /// The ELF name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Reloc::None => "R_X86_64_NONE",
            Reloc::Abs64 => "R_X86_64_64",
            Reloc::Pc32 => "R_X86_64_PC32",
            Reloc::Plt32 => "R_X86_64_PLT32",
            Reloc::Abs32 => "R_X86_64_32",
            Reloc::Abs32S => "R_X86_64_32S",
            Reloc::Pc64 => "R_X86_64_PC64",
            Reloc::GotPcRel => "R_X86_64_GOTPCREL",
            Reloc::GotPcRelX => "R_X86_64_GOTPCRELX",
            Reloc::RexGotPcRelX => "R_X86_64_REX_GOTPCRELX",
        }
    }

    /// How many bytes at the place the relocation writes.
    pub fn size(self) -> usize {
        match self {
            Reloc::None => 0,
            Reloc::Abs64 | Reloc::Pc64 => 8,
            _ => 4,
        }
    }

    /// Whether the relocation needs a GOT entry for its symbol.
    pub fn uses_got(self) -> bool {
        matches!(
            self,
            Reloc::GotPcRel | Reloc::GotPcRelX | Reloc::RexGotPcRelX
        )
    }
}

/// Applies `reloc` to `place`, the bytes at address `p`, with symbol value `s`, addend `a` and,
/// for the GOT forms, `got` = the address of the GOT entry holding `s`. Unlike module.c (which
/// trusts `-mcmodel=kernel` for PC32/PLT32), 32-bit PC-relative values are checked too:
/// [`RelocError::Overflow`] on a far PLT32 tells the caller to retry with a [`plt_stub`].
pub fn apply(
    reloc: Reloc,
    place: &mut [u8],
    p: u64,
    s: u64,
    a: i64,
    got: Option<u64>,
) -> Result<(), RelocError> {
    let val = s.wrapping_add(a as u64);
    let bytes: ([u8; 8], usize) = match reloc {
        Reloc::None => return Ok(()),
        Reloc::Abs64 => (val.to_le_bytes(), 8),
        Reloc::Pc64 => (val.wrapping_sub(p).to_le_bytes(), 8),
        Reloc::Abs32 => {
            let v = u32::try_from(val).map_err(|_| RelocError::Overflow)?;
            (u64::from(v).to_le_bytes(), 4)
        }
        Reloc::Abs32S => {
            let v = i32::try_from(val as i64).map_err(|_| RelocError::Overflow)?;
            (i64::from(v).to_le_bytes(), 4)
        }
        Reloc::Pc32 | Reloc::Plt32 => (pc32(val, p)?, 4),
        Reloc::GotPcRel | Reloc::GotPcRelX | Reloc::RexGotPcRelX => {
            let g = got.ok_or(RelocError::NoGotEntry)?;
            (pc32(g.wrapping_add(a as u64), p)?, 4)
        }
    };
    let (bytes, n) = bytes;
    let dst = place.get_mut(..n).ok_or(RelocError::Truncated)?;
    if dst.iter().any(|&b| b != 0) {
        return Err(RelocError::NotZero);
    }
    dst.copy_from_slice(&bytes[..n]);
    Ok(())
}

/// `target - p` as a signed 32-bit field, or an overflow.
fn pc32(target: u64, p: u64) -> Result<[u8; 8], RelocError> {
    let d = i32::try_from(target.wrapping_sub(p) as i64).map_err(|_| RelocError::Overflow)?;
    Ok(i64::from(d).to_le_bytes())
}

/// Whether a rel32 field at `p` reaches `target` (+-2 GiB).
pub fn rel32_reaches(p: u64, target: u64) -> bool {
    i32::try_from(target.wrapping_sub(p) as i64).is_ok()
}

/// Bytes per PLT stub slot.
pub const PLT_STUB_SIZE: u64 = 16;

/// Alignment of a PLT stub slot.
pub const PLT_STUB_ALIGN: u64 = 16;

/// A PLT stub at any address that jumps to `target`: `jmp *0(%rip)` followed by the 64-bit
/// target, padded with `int3`. A far `call sym` (PLT32) is pointed at the stub instead.
pub fn plt_stub(target: u64) -> [u8; PLT_STUB_SIZE as usize] {
    let mut out = [0xccu8; PLT_STUB_SIZE as usize];
    out[..6].copy_from_slice(&[0xff, 0x25, 0, 0, 0, 0]);
    out[6..14].copy_from_slice(&target.to_le_bytes());
    out
}

/// Where the instruction holding a PLT32 field at `p` with addend `a` really branches to when
/// the field holds `L + A - P`: `L + A + 4` relative to the field's end. For `call`/`jmp`
/// (`A` = -4) that is L itself. The stub for a far PLT32 must jump to `S + A + 4`.
pub fn plt32_target(s: u64, a: i64) -> u64 {
    s.wrapping_add(a as u64).wrapping_add(4)
}

#[cfg(test)]
mod tests {
    //! Expected bytes come from GNU ld 2.40 linking the same instructions at the same
    //! addresses (`-Ttext=0x10400000 -Tdata=0x10500000`, `--defsym` for the targets).
    use super::*;

    fn run(reloc: Reloc, p: u64, s: u64, a: i64, got: Option<u64>) -> Result<Vec<u8>, RelocError> {
        let mut b = vec![0u8; reloc.size()];
        apply(reloc, &mut b, p, s, a, got)?;
        Ok(b)
    }

    #[test]
    fn types_round_trip() {
        for t in 0..64 {
            if let Some(r) = Reloc::from_type(t) {
                assert!(r.name().starts_with("R_X86_64_"));
            }
        }
        assert_eq!(Reloc::from_type(42), Some(Reloc::RexGotPcRelX));
        assert_eq!(Reloc::from_type(3), None); // GOT32
        assert_eq!(Reloc::from_type(19), None); // TLSGD
        assert_eq!(Reloc::from_type(12), None); // R_X86_64_16
    }

    #[test]
    fn pc_relative_match_ld() {
        // call fn_fwd at 0x10400000 (field at +1), jmp fn_back at 0x10400005 (field at +6)
        assert_eq!(
            run(Reloc::Plt32, 0x1040_0001, 0x1040_1234, -4, None),
            Ok(vec![0x2f, 0x12, 0, 0])
        );
        assert_eq!(
            run(Reloc::Plt32, 0x1040_0006, 0x0040_0004, -4, None),
            Ok(vec![0xfa, 0xff, 0xff, 0xef])
        );
        // lea dat(%rip), %rax at 0x1040000a (field at +3)
        assert_eq!(
            run(Reloc::Pc32, 0x1040_000d, 0x7fff_0000, -4, None),
            Ok(vec![0xef, 0xff, 0xbe, 0x6f])
        );
        // .quad big - . at 0x10500008; .long fn_fwd - . at 0x10500010
        assert_eq!(
            run(Reloc::Pc64, 0x1050_0008, 0x1234_5678_9abc_def0, 0, None),
            Ok(vec![0xe8, 0xde, 0x6c, 0x8a, 0x78, 0x56, 0x34, 0x12])
        );
        assert_eq!(
            run(Reloc::Pc32, 0x1050_0010, 0x1040_1234, 0, None),
            Ok(vec![0x24, 0x12, 0xf0, 0xff])
        );
    }

    #[test]
    fn absolute_match_ld() {
        assert_eq!(
            run(Reloc::Abs64, 0, 0x1234_5678_9abc_def0, 0, None),
            Ok(vec![0xf0, 0xde, 0xbc, 0x9a, 0x78, 0x56, 0x34, 0x12])
        );
        assert_eq!(
            run(Reloc::Abs32, 0, 0xdead_beef, 0, None),
            Ok(vec![0xef, 0xbe, 0xad, 0xde])
        );
        assert_eq!(
            run(Reloc::Abs32S, 0, 0xffff_ffff_8000_1234, 0, None),
            Ok(vec![0x34, 0x12, 0x00, 0x80])
        );
        // An addend is added to S.
        assert_eq!(
            run(Reloc::Abs32, 0, 0x1000, 0x10, None),
            Ok(vec![0x10, 0x10, 0, 0])
        );
    }

    #[test]
    fn overflow() {
        assert_eq!(
            run(Reloc::Abs32, 0, 0x1_0000_0000, 0, None),
            Err(RelocError::Overflow)
        );
        assert_eq!(run(Reloc::Abs32, 0, 0, -1, None), Err(RelocError::Overflow));
        assert_eq!(
            run(Reloc::Abs32S, 0, 0x8000_0000, 0, None),
            Err(RelocError::Overflow)
        );
        assert!(run(Reloc::Abs32S, 0, 0x7fff_ffff, 0, None).is_ok());
        assert!(run(Reloc::Abs32S, 0, 0xffff_ffff_8000_0000, 0, None).is_ok());
        let p = 0x7f00_0000_0000u64;
        assert_eq!(
            run(Reloc::Pc32, p, p + 0x8000_0000, 0, None),
            Err(RelocError::Overflow)
        );
        assert!(run(Reloc::Pc32, p, p + 0x7fff_ffff, 0, None).is_ok());
        assert!(run(Reloc::Pc32, p, p - 0x8000_0000, 0, None).is_ok());
        assert_eq!(
            run(Reloc::Plt32, p, 0x5555_0000_0000, -4, None),
            Err(RelocError::Overflow)
        );
        assert!(rel32_reaches(p, p + 0x7fff_ffff));
        assert!(!rel32_reaches(p, p + 0x8000_0000));
    }

    #[test]
    fn got_forms_point_at_the_entry() {
        let p = 0x4000_1003u64;
        let got = 0x4000_2000u64;
        for r in [Reloc::GotPcRel, Reloc::GotPcRelX, Reloc::RexGotPcRelX] {
            assert!(r.uses_got());
            let b = run(r, p, 0xdead_0000_0000, -4, Some(got)).unwrap();
            let d = i32::from_le_bytes(b.try_into().unwrap());
            // The CPU adds the field to the end of the instruction (p + 4).
            assert_eq!((p + 4).wrapping_add(d as i64 as u64), got);
            assert_eq!(run(r, p, 0, -4, None), Err(RelocError::NoGotEntry));
            assert_eq!(
                run(r, p, 0, -4, Some(p + (1 << 32))),
                Err(RelocError::Overflow)
            );
        }
        assert!(!Reloc::Pc32.uses_got());
    }

    #[test]
    fn refuses_nonzero_place_and_short_place() {
        let mut b = [0u8, 0, 1, 0];
        assert_eq!(
            apply(Reloc::Pc32, &mut b, 0, 8, 0, None),
            Err(RelocError::NotZero)
        );
        assert_eq!(b, [0, 0, 1, 0]);
        let mut b = [0u8; 2];
        assert_eq!(
            apply(Reloc::Abs32, &mut b, 0, 8, 0, None),
            Err(RelocError::Truncated)
        );
        assert_eq!(apply(Reloc::None, &mut [], 0, 8, 0, None), Ok(()));
    }

    #[test]
    fn plt_stub_jumps_to_target() {
        let s = plt_stub(0x5555_1234_5678);
        // jmp *0(%rip): ff 25 rel32=0, so it reads the 8 bytes right after itself.
        assert_eq!(&s[..6], &[0xff, 0x25, 0, 0, 0, 0]);
        assert_eq!(
            u64::from_le_bytes(s[6..14].try_into().unwrap()),
            0x5555_1234_5678
        );
        assert_eq!(&s[14..], &[0xcc, 0xcc]);
        assert_eq!(plt32_target(0x1000, -4), 0x1000);
        assert_eq!(plt32_target(0x1000, 12), 0x1010);
    }
}
