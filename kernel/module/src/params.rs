//! Module parameter values as text (Linux `kernel/params.c`: `param_get_*`, `param_set_*`,
//! `lib/kstrtox.c`): what `/sys/module/<mod>/parameters/<name>` shows, and what a write to it
//! stores. Pure; the bytes come from and go to module memory through `um-modshim`. The types
//! and their formatting are the loader's (`um_module::ParamType`).

use um_uapi::{Errno, SysResult};

pub use um_module::ParamType;

/// The sysfs text of a numeric or bool parameter whose variable holds `raw` (little-endian,
/// [`ParamType::size`] bytes). Not for `charp`, whose text is the string it points to.
pub fn format(t: ParamType, raw: &[u8]) -> String {
    match t.format(raw) {
        Some(s) if t != ParamType::Charp => s + "\n",
        _ => String::new(),
    }
}

/// `kstrtoull(s, 0, ..)`: an unsigned number in base 16 (`0x`), 8 (leading `0`) or 10,
/// with one optional trailing newline.
fn parse_unsigned(s: &str) -> SysResult<u64> {
    let s = s.strip_suffix('\n').unwrap_or(s);
    let s = s.strip_prefix('+').unwrap_or(s);
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (h, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    if digits.is_empty() {
        return Err(Errno::EINVAL);
    }
    u64::from_str_radix(digits, radix).map_err(|e| match e.kind() {
        std::num::IntErrorKind::PosOverflow => Errno::ERANGE,
        _ => Errno::EINVAL,
    })
}

/// `kstrtoll(s, 0, ..)`.
fn parse_signed(s: &str) -> SysResult<i64> {
    match s.strip_prefix('-') {
        Some(rest) => {
            let v = parse_unsigned(rest)?;
            if v > i64::MAX as u64 + 1 {
                return Err(Errno::ERANGE);
            }
            Ok((v as i64).wrapping_neg())
        }
        None => {
            let v = parse_unsigned(s)?;
            i64::try_from(v).map_err(|_| Errno::ERANGE)
        }
    }
}

/// `kstrtobool`: y/Y/1/on true, n/N/0/off false (by the first one or two characters).
pub fn parse_bool(s: &str) -> SysResult<bool> {
    let b = s.as_bytes();
    match b.first() {
        Some(b'y' | b'Y' | b'1') => Ok(true),
        Some(b'n' | b'N' | b'0') => Ok(false),
        Some(b'o' | b'O') => match b.get(1) {
            Some(b'n' | b'N') => Ok(true),
            Some(b'f' | b'F') => Ok(false),
            _ => Err(Errno::EINVAL),
        },
        _ => Err(Errno::EINVAL),
    }
}

/// The bytes a numeric or bool parameter's variable gets for text `s` (`param_set_*`);
/// EINVAL or ERANGE for text that does not fit the type. Not for `charp`.
pub fn parse(t: ParamType, s: &str) -> SysResult<Vec<u8>> {
    let signed = |lo: i64, hi: i64| -> SysResult<i64> {
        let v = parse_signed(s)?;
        if v < lo || v > hi {
            return Err(Errno::ERANGE);
        }
        Ok(v)
    };
    let unsigned = |hi: u64| -> SysResult<u64> {
        let v = parse_unsigned(s)?;
        if v > hi {
            return Err(Errno::ERANGE);
        }
        Ok(v)
    };
    Ok(match t {
        ParamType::Int => (signed(i32::MIN as i64, i32::MAX as i64)? as i32)
            .to_le_bytes()
            .to_vec(),
        ParamType::Uint => (unsigned(u32::MAX as u64)? as u32).to_le_bytes().to_vec(),
        ParamType::Long => signed(i64::MIN, i64::MAX)?.to_le_bytes().to_vec(),
        ParamType::Ulong => unsigned(u64::MAX)?.to_le_bytes().to_vec(),
        ParamType::Short => (signed(i16::MIN as i64, i16::MAX as i64)? as i16)
            .to_le_bytes()
            .to_vec(),
        ParamType::Ushort => (unsigned(u16::MAX as u64)? as u16).to_le_bytes().to_vec(),
        ParamType::Bool => vec![parse_bool(s)? as u8],
        ParamType::Charp => return Err(Errno::EINVAL),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_linux() {
        assert_eq!(format(ParamType::Int, &(-5i32).to_le_bytes()), "-5\n");
        assert_eq!(
            format(ParamType::Uint, &u32::MAX.to_le_bytes()),
            "4294967295\n"
        );
        assert_eq!(format(ParamType::Long, &(-1i64).to_le_bytes()), "-1\n");
        assert_eq!(format(ParamType::Short, &(-2i16).to_le_bytes()), "-2\n");
        assert_eq!(format(ParamType::Ushort, &7u16.to_le_bytes()), "7\n");
        assert_eq!(format(ParamType::Bool, &[1]), "Y\n");
        assert_eq!(format(ParamType::Bool, &[0]), "N\n");
    }

    #[test]
    fn parses_like_kstrto() {
        assert_eq!(parse(ParamType::Int, "42\n").unwrap(), 42i32.to_le_bytes());
        assert_eq!(
            parse(ParamType::Int, "-0x10").unwrap(),
            (-16i32).to_le_bytes()
        );
        assert_eq!(parse(ParamType::Uint, "010").unwrap(), 8u32.to_le_bytes());
        assert_eq!(parse(ParamType::Int, "2147483648"), Err(Errno::ERANGE));
        assert_eq!(parse(ParamType::Uint, "-1"), Err(Errno::EINVAL));
        assert_eq!(parse(ParamType::Ushort, "65536"), Err(Errno::ERANGE));
        assert_eq!(parse(ParamType::Long, "x"), Err(Errno::EINVAL));
        assert_eq!(parse(ParamType::Bool, "on").unwrap(), [1]);
        assert_eq!(parse(ParamType::Bool, "N").unwrap(), [0]);
        assert_eq!(parse(ParamType::Bool, "maybe"), Err(Errno::EINVAL));
    }
}
