//! Module parameters: decoding the `__param` section (`struct um_kernel_param` entries, see
//! `include/module/um_module.h`) and setting values from the insmod argument string the way
//! Linux's `kernel/params.c` does (`parse_args`, `next_arg`, `parameq`, the `param_set_*`
//! setters with `kstrtoint`-family parsing from `lib/kstrtox.c`, `kstrtobool` from
//! `lib/kstrtox.c`, and `param_set_charp`'s 1024-byte limit).
//!
//! Neighbours: [`crate::elf`] decodes the entries at parse time; [`crate::link`](mod@crate::link) converts the
//! argument string and writes the values into the relocated images; [`crate::layout`]
//! reserves the `charp` string space.

use um_uapi::Errno;

use crate::LoadError;
use crate::elf::{RelaSection, Section, Symbol};

/// `sizeof(struct um_kernel_param)`: name pointer, arg pointer, type, perm.
pub const PARAM_ENTRY_SIZE: u64 = 24;
/// The section holding the entries.
pub const PARAM_SECTION: &str = "__param";
/// `param_set_charp`: "string parameter too long" beyond 1024 bytes (-ENOSPC).
pub const CHARP_MAX: usize = 1024;
/// Bytes reserved per `charp` parameter for its copy of the string (with the NUL).
pub const CHARP_SLOT: u64 = CHARP_MAX as u64 + 1;

/// `enum um_param_type` in the header; the C type of the variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamType {
    /// `int`
    Int,
    /// `unsigned int`
    Uint,
    /// `long`
    Long,
    /// `unsigned long`
    Ulong,
    /// `char *` (points at a kernel-owned copy of the string)
    Charp,
    /// `bool` (one byte)
    Bool,
    /// `short`
    Short,
    /// `unsigned short`
    Ushort,
}

impl ParamType {
    /// From the `type` field of an entry.
    pub fn from_u32(v: u32) -> Option<ParamType> {
        Some(match v {
            0 => ParamType::Int,
            1 => ParamType::Uint,
            2 => ParamType::Long,
            3 => ParamType::Ulong,
            4 => ParamType::Charp,
            5 => ParamType::Bool,
            6 => ParamType::Short,
            7 => ParamType::Ushort,
            _ => return None,
        })
    }

    /// The name `parmtype=` and `modinfo` use.
    pub fn name(self) -> &'static str {
        match self {
            ParamType::Int => "int",
            ParamType::Uint => "uint",
            ParamType::Long => "long",
            ParamType::Ulong => "ulong",
            ParamType::Charp => "charp",
            ParamType::Bool => "bool",
            ParamType::Short => "short",
            ParamType::Ushort => "ushort",
        }
    }

    /// Size of the variable in bytes (LP64 on both arches).
    pub fn size(self) -> usize {
        match self {
            ParamType::Int | ParamType::Uint => 4,
            ParamType::Long | ParamType::Ulong | ParamType::Charp => 8,
            ParamType::Bool => 1,
            ParamType::Short | ParamType::Ushort => 2,
        }
    }

    /// Formats a variable's bytes as `/sys/module/<m>/parameters/<p>` shows it (Linux
    /// `param_get_*`: decimal, `Y`/`N` for bools). For `charp` this gives the pointer; the
    /// caller reads the string it points to.
    pub fn format(self, bytes: &[u8]) -> Option<String> {
        let b = bytes.get(..self.size())?;
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        let u = u64::from_le_bytes(w);
        Some(match self {
            ParamType::Int => (u as u32 as i32).to_string(),
            ParamType::Uint => (u as u32).to_string(),
            ParamType::Long => (u as i64).to_string(),
            ParamType::Ulong | ParamType::Charp => u.to_string(),
            ParamType::Bool => if u & 0xff != 0 { "Y" } else { "N" }.to_string(),
            ParamType::Short => (u as u16 as i16).to_string(),
            ParamType::Ushort => (u as u16).to_string(),
        })
    }
}

/// One parameter of a linked module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    /// Its name (`/sys/module/<m>/parameters/<name>`).
    pub name: String,
    /// The C type.
    pub ty: ParamType,
    /// The sysfs mode from `module_param` (0 = not shown).
    pub perm: u32,
    /// Address of the variable.
    pub addr: u64,
}

/// One `__param` entry as found in the object (before addresses).
#[derive(Clone, Debug)]
pub(crate) struct ParamDecl {
    pub name: String,
    pub ty: ParamType,
    pub perm: u32,
    /// The section holding the variable, and its offset there.
    pub var_section: usize,
    pub var_offset: u64,
    /// Index among `charp` parameters (its string slot), if `charp`.
    pub charp_slot: Option<u64>,
}

/// The (section, offset) an absolute 64-bit relocation at `__param`+`at` points to.
fn pointer_target(
    param_sec: usize,
    at: u64,
    sections: &[Section],
    symbols: &[Symbol],
    relas: &[RelaSection],
    module: &str,
    what: &str,
) -> Result<(usize, u64), LoadError> {
    let r = relas
        .iter()
        .filter(|rs| rs.target == param_sec)
        .flat_map(|rs| rs.entries.iter())
        .find(|r| r.offset == at)
        .ok_or_else(|| {
            LoadError::noexec(format!(
                "{module}: {PARAM_SECTION}+{at:#x}: no relocation for the {what}"
            ))
        })?;
    if !r.reloc.is_abs64() {
        return Err(LoadError::noexec(format!(
            "{module}: {PARAM_SECTION}+{at:#x}: the {what} uses {} instead of a 64-bit pointer",
            r.reloc.name()
        )));
    }
    let sym = symbols
        .get(r.sym)
        .ok_or_else(|| LoadError::noexec("bad symbol"))?;
    let sec = sym
        .section()
        .filter(|&i| i < sections.len())
        .ok_or_else(|| {
            LoadError::noexec(format!(
                "{module}: {PARAM_SECTION}+{at:#x}: the {what} points outside the module ({})",
                sym.name
            ))
        })?;
    let off = sym.value.wrapping_add(r.addend as u64);
    Ok((sec, off))
}

/// Decodes the `__param` section: for each entry, its name (the string its name pointer
/// points to), type, permissions and where its variable is.
pub(crate) fn decode(
    sections: &[Section],
    symbols: &[Symbol],
    relas: &[RelaSection],
    module: &str,
) -> Result<Vec<ParamDecl>, LoadError> {
    let Some(pi) = sections.iter().position(|s| s.name == PARAM_SECTION) else {
        return Ok(Vec::new());
    };
    let psec = &sections[pi];
    if psec.size % PARAM_ENTRY_SIZE != 0 || psec.data.len() as u64 != psec.size {
        return Err(LoadError::noexec(format!(
            "{module}: {PARAM_SECTION} is {} bytes, not a whole number of {PARAM_ENTRY_SIZE}-byte entries",
            psec.size
        )));
    }
    let mut out = Vec::new();
    let mut charps = 0;
    for (i, e) in psec
        .data
        .chunks_exact(PARAM_ENTRY_SIZE as usize)
        .enumerate()
    {
        let at = i as u64 * PARAM_ENTRY_SIZE;
        let word = |o: usize| u32::from_le_bytes([e[o], e[o + 1], e[o + 2], e[o + 3]]);
        let raw_type = word(16);
        let perm = word(20);
        let ty = ParamType::from_u32(raw_type).ok_or_else(|| {
            LoadError::noexec(format!(
                "{module}: {PARAM_SECTION} entry {i}: unknown type {raw_type}"
            ))
        })?;
        let (nsec, noff) = pointer_target(pi, at, sections, symbols, relas, module, "name")?;
        let name = sections
            .get(nsec)
            .and_then(|s| s.data.get(usize::try_from(noff).ok()?..))
            .and_then(|t| t.iter().position(|&b| b == 0).map(|n| &t[..n]))
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                LoadError::noexec(format!(
                    "{module}: {PARAM_SECTION} entry {i}: bad name pointer"
                ))
            })?;
        let (vsec, voff) =
            pointer_target(pi, at + 8, sections, symbols, relas, module, "variable")?;
        let fits = sections.get(vsec).is_some_and(|s| {
            voff.checked_add(ty.size() as u64)
                .is_some_and(|end| end <= s.size)
        });
        if !fits {
            return Err(LoadError::noexec(format!(
                "{module}: parameter {name}: variable lies outside its section"
            )));
        }
        let charp_slot = (ty == ParamType::Charp).then(|| {
            charps += 1;
            charps - 1
        });
        out.push(ParamDecl {
            name,
            ty,
            perm,
            var_section: vsec,
            var_offset: voff,
            charp_slot,
        });
    }
    Ok(out)
}

/// Splits the argument string like `parse_args`/`next_arg`: whitespace-separated
/// `name[=value]`, double quotes group (and are removed around a value or a whole argument),
/// a bare `--` ends the list.
pub fn split_args(args: &str) -> Vec<(String, Option<String>)> {
    let b = args.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    let skip_spaces = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    i = skip_spaces(i);
    while i < b.len() {
        let mut start = i;
        let mut quoted = false;
        if b[start] == b'"' {
            start += 1;
            quoted = true;
        }
        let mut in_quote = quoted;
        let mut equals = None;
        let mut j = start;
        while j < b.len() {
            if b[j].is_ascii_whitespace() && !in_quote {
                break;
            }
            if equals.is_none() && b[j] == b'=' {
                equals = Some(j);
            }
            if b[j] == b'"' {
                in_quote = !in_quote;
            }
            j += 1;
        }
        // b[start..j] is the argument.
        let mut end = j;
        let (param, val) = match equals {
            None => {
                if quoted && end > start && b[end - 1] == b'"' {
                    end -= 1;
                }
                (&b[start..end], None)
            }
            Some(eq) => {
                let mut vs = eq + 1;
                if vs < end && b[vs] == b'"' {
                    vs += 1;
                    if end > vs && b[end - 1] == b'"' {
                        end -= 1;
                    }
                } else if quoted && end > vs && b[end - 1] == b'"' {
                    end -= 1;
                }
                (&b[start..eq], Some(&b[vs..end.max(vs)]))
            }
        };
        let param = String::from_utf8_lossy(param).into_owned();
        if val.is_none() && param == "--" {
            break;
        }
        out.push((param, val.map(|v| String::from_utf8_lossy(v).into_owned())));
        i = skip_spaces(j.saturating_add(1).min(b.len()));
    }
    out
}

/// `parameq`: names compare equal with `-` and `_` interchangeable.
pub fn param_eq(a: &str, b: &str) -> bool {
    let norm = |c: u8| if c == b'-' { b'_' } else { c };
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| norm(x) == norm(y))
}

/// `_parse_integer_fixup_radix` + `_parse_integer` (lib/kstrtox.c) with base 0: `0x` hex,
/// leading `0` octal, else decimal; one trailing newline allowed. EINVAL for junk, ERANGE for
/// values past 64 bits.
fn parse_u64(s: &str) -> Result<u64, Errno> {
    let s = s.strip_suffix('\n').unwrap_or(s);
    let s = s.strip_prefix('+').unwrap_or(s);
    let b = s.as_bytes();
    let (radix, digits) = if b.first() == Some(&b'0') {
        if b.get(1).is_some_and(|c| c.eq_ignore_ascii_case(&b'x'))
            && b.get(2).is_some_and(u8::is_ascii_hexdigit)
        {
            (16, &s[2..])
        } else {
            (8, s)
        }
    } else {
        (10, s)
    };
    if digits.is_empty() {
        return Err(Errno::EINVAL);
    }
    let mut v: u64 = 0;
    for c in digits.chars() {
        let d = c.to_digit(radix).ok_or(Errno::EINVAL)?;
        v = v
            .checked_mul(u64::from(radix))
            .and_then(|v| v.checked_add(u64::from(d)))
            .ok_or(Errno::ERANGE)?;
    }
    Ok(v)
}

/// `kstrtoll`: an optional `-`, then [`parse_u64`].
fn parse_i64(s: &str) -> Result<i64, Errno> {
    match s.strip_prefix('-') {
        Some(rest) => {
            let u = parse_u64(rest)?;
            if u > i64::MAX as u64 + 1 {
                return Err(Errno::ERANGE);
            }
            Ok((u as i64).wrapping_neg())
        }
        None => i64::try_from(parse_u64(s)?).map_err(|_| Errno::ERANGE),
    }
}

/// `kstrtobool`: y/Y/t/T/1, n/N/f/F/0, on/off (first characters only).
fn parse_bool(s: &str) -> Result<bool, Errno> {
    let b = s.as_bytes();
    match b.first() {
        Some(b'y' | b'Y' | b't' | b'T' | b'1') => Ok(true),
        Some(b'n' | b'N' | b'f' | b'F' | b'0') => Ok(false),
        Some(b'o' | b'O') => match b.get(1) {
            Some(b'n' | b'N') => Ok(true),
            Some(b'f' | b'F') => Ok(false),
            _ => Err(Errno::EINVAL),
        },
        _ => Err(Errno::EINVAL),
    }
}

/// What setting one parameter writes: the variable's bytes, and for `charp` the string to
/// copy into its slot (the variable then holds the slot's address).
pub(crate) enum Value {
    Bytes(Vec<u8>),
    Charp(Vec<u8>),
}

/// `param_set_*` for one value. `None` is a bare `name` (only bools accept it: "set").
pub(crate) fn convert(ty: ParamType, val: Option<&str>) -> Result<Value, Errno> {
    let Some(v) = val else {
        return if ty == ParamType::Bool {
            Ok(Value::Bytes(vec![1]))
        } else {
            Err(Errno::EINVAL)
        };
    };
    let int = |min: i64, max: i64, size: usize| -> Result<Value, Errno> {
        let x = parse_i64(v)?;
        if x < min || x > max {
            return Err(Errno::ERANGE);
        }
        Ok(Value::Bytes(x.to_le_bytes()[..size].to_vec()))
    };
    let uint = |max: u64, size: usize| -> Result<Value, Errno> {
        if v.starts_with('-') {
            return Err(Errno::EINVAL);
        }
        let x = parse_u64(v)?;
        if x > max {
            return Err(Errno::ERANGE);
        }
        Ok(Value::Bytes(x.to_le_bytes()[..size].to_vec()))
    };
    match ty {
        ParamType::Int => int(i64::from(i32::MIN), i64::from(i32::MAX), 4),
        ParamType::Uint => uint(u64::from(u32::MAX), 4),
        ParamType::Long => int(i64::MIN, i64::MAX, 8),
        ParamType::Ulong => uint(u64::MAX, 8),
        ParamType::Short => int(i64::from(i16::MIN), i64::from(i16::MAX), 2),
        ParamType::Ushort => uint(u64::from(u16::MAX), 2),
        ParamType::Bool => Ok(Value::Bytes(vec![u8::from(parse_bool(v)?)])),
        ParamType::Charp => {
            if v.len() > CHARP_MAX {
                return Err(Errno::ENOSPC);
            }
            Ok(Value::Charp(v.as_bytes().to_vec()))
        }
    }
}

/// One parameter setting to apply: which declaration, and its new value.
pub(crate) struct Setting {
    pub decl: usize,
    pub value: Value,
}

/// `parse_args` for a module: every `name=value` for a known parameter is converted (the
/// first bad one fails the load with the setter's errno and Linux's message); unknown names
/// are logged and ignored (`unknown_module_param_cb`).
pub(crate) fn settings(
    decls: &[ParamDecl],
    args: &str,
    module: &str,
) -> Result<Vec<Setting>, LoadError> {
    let mut out = Vec::new();
    for (name, val) in split_args(args) {
        let Some(decl) = decls.iter().position(|d| param_eq(&d.name, &name)) else {
            log::warn!("{module}: unknown parameter '{name}' ignored");
            continue;
        };
        let ty = decls[decl].ty;
        let value = convert(ty, val.as_deref()).map_err(|e| {
            let shown = val.as_deref().unwrap_or("");
            let msg = if e == Errno::ENOSPC {
                format!("{module}: `{shown}' too large for parameter `{name}'")
            } else {
                format!("{module}: `{shown}' invalid for parameter `{name}'")
            };
            LoadError::new(e, msg)
        })?;
        out.push(Setting { decl, value });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<(String, Option<String>)> {
        split_args(s)
    }

    fn p(n: &str, v: Option<&str>) -> (String, Option<String>) {
        (n.to_string(), v.map(String::from))
    }

    #[test]
    fn splits_like_next_arg() {
        assert_eq!(args(""), vec![]);
        assert_eq!(args("   "), vec![]);
        assert_eq!(
            args("a=1 b=str  flag"),
            vec![p("a", Some("1")), p("b", Some("str")), p("flag", None)]
        );
        assert_eq!(
            args("greeting=\"hello there\" x=2"),
            vec![p("greeting", Some("hello there")), p("x", Some("2"))]
        );
        assert_eq!(args("\"g=a b\""), vec![p("g", Some("a b"))]);
        assert_eq!(args("a= b=="), vec![p("a", Some("")), p("b", Some("="))]);
        assert_eq!(args("a=1 -- b=2"), vec![p("a", Some("1"))]);
        assert_eq!(args("\tx=1\n"), vec![p("x", Some("1"))]);
        assert_eq!(
            args("q=\"unterminated value"),
            vec![p("q", Some("unterminated value"))]
        );
    }

    #[test]
    fn dashes_and_underscores_match() {
        assert!(param_eq("fw_name", "fw-name"));
        assert!(!param_eq("fw_name", "fwname"));
    }

    #[test]
    fn integers_like_kstrtox() {
        assert_eq!(parse_i64("42"), Ok(42));
        assert_eq!(parse_i64("-42"), Ok(-42));
        assert_eq!(parse_i64("+7\n"), Ok(7));
        assert_eq!(parse_i64("0x1f"), Ok(31));
        assert_eq!(parse_i64("010"), Ok(8));
        assert_eq!(parse_i64("0"), Ok(0));
        assert_eq!(parse_i64("-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(parse_i64("9223372036854775808"), Err(Errno::ERANGE));
        assert_eq!(parse_i64(""), Err(Errno::EINVAL));
        assert_eq!(parse_i64("12a"), Err(Errno::EINVAL));
        assert_eq!(parse_i64("09"), Err(Errno::EINVAL));
        assert_eq!(parse_u64("99999999999999999999"), Err(Errno::ERANGE));
    }

    #[test]
    fn conversions() {
        let bytes = |r: Result<Value, Errno>| match r {
            Ok(Value::Bytes(b)) => Ok(b),
            Ok(Value::Charp(_)) => panic!("charp"),
            Err(e) => Err(e),
        };
        assert_eq!(
            bytes(convert(ParamType::Int, Some("-2"))),
            Ok(vec![0xfe, 0xff, 0xff, 0xff])
        );
        assert_eq!(
            bytes(convert(ParamType::Int, Some("2147483648"))),
            Err(Errno::ERANGE)
        );
        assert_eq!(
            bytes(convert(ParamType::Uint, Some("-1"))),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            bytes(convert(ParamType::Ushort, Some("65536"))),
            Err(Errno::ERANGE)
        );
        assert_eq!(
            bytes(convert(ParamType::Short, Some("-32768"))),
            Ok(vec![0x00, 0x80])
        );
        assert_eq!(bytes(convert(ParamType::Bool, None)), Ok(vec![1]));
        assert_eq!(bytes(convert(ParamType::Bool, Some("off"))), Ok(vec![0]));
        assert_eq!(bytes(convert(ParamType::Bool, Some("Y"))), Ok(vec![1]));
        assert_eq!(
            bytes(convert(ParamType::Bool, Some("maybe"))),
            Err(Errno::EINVAL)
        );
        assert_eq!(bytes(convert(ParamType::Int, None)), Err(Errno::EINVAL));
        assert!(matches!(convert(ParamType::Charp, Some("x")), Ok(Value::Charp(v)) if v == b"x"));
        let long = "a".repeat(CHARP_MAX + 1);
        assert!(matches!(convert(ParamType::Charp, Some(&long)), Err(e) if e == Errno::ENOSPC));
    }

    #[test]
    fn formats_like_param_get() {
        assert_eq!(
            ParamType::Int.format(&[0xfe, 0xff, 0xff, 0xff]).as_deref(),
            Some("-2")
        );
        assert_eq!(ParamType::Bool.format(&[1]).as_deref(), Some("Y"));
        assert_eq!(
            ParamType::Ushort.format(&[0xff, 0xff]).as_deref(),
            Some("65535")
        );
        assert_eq!(ParamType::Long.format(&[0; 4]), None);
    }
}
