//! `.modinfo` and exports: the `key=value` strings `MODULE_INFO` puts in `.modinfo` (Linux
//! `kernel/module/main.c` `get_modinfo`/`get_next_modinfo`), the module name, and the names
//! `EXPORT_SYMBOL` puts in `__ksymtab_strings`.
//!
//! Neighbours: [`crate::elf`] finds the sections and calls in here; `modinfo`/`modprobe` in the
//! guest read the same strings straight from the file.

use crate::LoadError;
use crate::elf::Section;

/// `.modinfo`: never loaded (Linux clears its SHF_ALLOC), only read.
pub const MODINFO: &str = ".modinfo";
/// `__ksymtab_strings`: the exported names; read here, not loaded (nothing refers to it).
pub const KSYMTAB_STRINGS: &str = "__ksymtab_strings";

/// Linux `MODULE_NAME_LEN` (64) less the terminating NUL and `sizeof(unsigned long)` padding
/// `struct module` keeps: names are at most 55 bytes.
pub const MODULE_NAME_MAX: usize = 55;

/// Whether [`crate::elf`] must keep the bytes of a section it does not load.
pub(crate) fn is_read_section(name: &str) -> bool {
    name == MODINFO || name == KSYMTAB_STRINGS
}

/// The NUL-separated strings of a section, empty ones skipped.
fn strings(sec: &Section) -> impl Iterator<Item = String> + '_ {
    sec.data
        .split(|&b| b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
}

/// All `key=value` pairs of `.modinfo`, in order (a string without `=` is a key with an
/// empty value).
pub(crate) fn parse(sections: &[Section]) -> Vec<(String, String)> {
    sections
        .iter()
        .filter(|s| s.name == MODINFO)
        .flat_map(strings)
        .map(|s| match s.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (s, String::new()),
        })
        .collect()
}

/// The `name=` entry, which the header always emits: required, at most
/// [`MODULE_NAME_MAX`] bytes of `[A-Za-z0-9_-]` (it becomes a directory under /sys/module).
pub(crate) fn module_name(modinfo: &[(String, String)]) -> Result<String, LoadError> {
    let name = modinfo
        .iter()
        .find(|(k, _)| k == "name")
        .map(|(_, v)| v.clone())
        .ok_or_else(|| LoadError::noexec("module has no name (no name= in .modinfo)"))?;
    let ok = !name.is_empty()
        && name.len() <= MODULE_NAME_MAX
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !ok {
        return Err(LoadError::noexec(format!(
            "invalid module name {name:?} in .modinfo"
        )));
    }
    Ok(name)
}

/// Names from `__ksymtab_strings`, each once, in order.
pub(crate) fn exports(sections: &[Section]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in sections
        .iter()
        .filter(|s| s.name == KSYMTAB_STRINGS)
        .flat_map(strings)
    {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}
