#!/usr/bin/env python3
"""Generate include/uapi/src/errno.rs from the Linux UAPI errno headers.

Source: /usr/include/asm-generic/errno-base.h and /usr/include/asm-generic/errno.h
(Debian package linux-libc-dev; kernel tree: include/uapi/asm-generic/errno-base.h, errno.h).
These numbers are identical on x86_64 and arm64. The kernel-internal restart codes
(include/linux/errno.h, not shipped in the UAPI headers) are listed below by hand.

Usage:
    tools/gen-uapi-errno.py           rewrite include/uapi/src/errno.rs
    tools/gen-uapi-errno.py --check   exit 1 if the checked-in file differs from the output
    tools/gen-uapi-errno.py --stdout  print the output instead of writing it
Options: --include DIR (default /usr/include) to read the headers from elsewhere.
"""

import argparse
import difflib
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "include", "uapi", "src", "errno.rs")

# Kernel-internal codes (include/linux/errno.h): never seen by user space, used for syscall restart.
RESTART = [
    ("ERESTARTSYS", 512,
     "Restart the call if the signal handler has SA_RESTART (kernel-internal, `include/linux/errno.h`)."),
    ("ERESTARTNOINTR", 513, "Restart the call unless a handler ran (kernel-internal)."),
    ("ERESTARTNOHAND", 514, "Restart if no handler ran (kernel-internal)."),
    ("ERESTART_RESTARTBLOCK", 516, "Restart through `restart_syscall` (kernel-internal)."),
]

HEAD = """\
//! Linux error numbers (`include/uapi/asm-generic/errno-base.h`, `errno.h`), identical on x86_64
//! and arm64, plus the kernel-internal restart codes (`include/linux/errno.h`) that never reach
//! user space. Generated from the UAPI headers by `tools/gen-uapi-errno.py`; do not edit by hand.

/// A Linux errno value. Syscall handlers return `Result<_, Errno>`; the dispatcher turns it into
/// `-errno` exactly once.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(i32);

impl Errno {
"""

METHODS = """
    /// Builds an errno from its number; `None` outside 1..=4095.
    pub const fn new(n: i32) -> Option<Errno> {
        if n > 0 && n < 4096 { Some(Errno(n)) } else { None }
    }

    /// The positive errno number.
    pub const fn get(self) -> i32 {
        self.0
    }

    /// The value a syscall returns in its result register: `-errno` as an unsigned word.
    pub const fn to_return(self) -> u64 {
        (-(self.0 as i64)) as u64
    }

    /// The symbolic name (`"ENOENT"`), for logs.
    pub fn name(self) -> &'static str {
        match self.0 {
"""

TAIL = """\
            _ => "E?",
        }
    }
}

impl core::fmt::Debug for Errno {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

impl core::fmt::Display for Errno {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(self, f)
    }
}

impl std::error::Error for Errno {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_match_linux() {
        assert_eq!(Errno::EPERM.get(), 1);
        assert_eq!(Errno::ENOENT.get(), 2);
        assert_eq!(Errno::EFAULT.get(), 14);
        assert_eq!(Errno::EINVAL.get(), 22);
        assert_eq!(Errno::ENOSYS.get(), 38);
        assert_eq!(Errno::ELOOP.get(), 40);
        assert_eq!(Errno::EWOULDBLOCK, Errno::EAGAIN);
        assert_eq!(Errno::EHWPOISON.get(), 133);
    }

    #[test]
    fn return_value_is_negative() {
        assert_eq!(Errno::ENOENT.to_return() as i64, -2);
        assert_eq!(Errno::ENOSYS.name(), "ENOSYS");
    }
}
"""

DEFINE = re.compile(r"^#define\s+(E[A-Z0-9_]+)\s+(\S+)\s*(?:/\*\s*(.*?)\s*\*/)?\s*$")


def parse(paths):
    """Returns ([(name, number, comment)], [(alias, target)]) in header order."""
    numbered, aliases = [], []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = DEFINE.match(line.rstrip("\n"))
                if not m:
                    continue
                name, value, comment = m.group(1), m.group(2), m.group(3) or ""
                if value.isdigit():
                    numbered.append((name, int(value), comment))
                elif re.fullmatch(r"E[A-Z0-9_]+", value):
                    aliases.append((name, value))
                else:
                    sys.exit(f"{path}: cannot parse: {line.strip()}")
    return numbered, aliases


def generate(include):
    base = os.path.join(include, "asm-generic")
    numbered, aliases = parse([os.path.join(base, "errno-base.h"), os.path.join(base, "errno.h")])
    known = {n for n, _, _ in numbered}
    out = [HEAD]
    for name, num, comment in numbered:
        out.append(f"    /// {comment}\n    pub const {name}: Errno = Errno({num});\n")
    for name, target in aliases:
        if target not in known:
            sys.exit(f"alias {name} -> unknown {target}")
        out.append(f"    /// Alias of [`Errno::{target}`].\n    pub const {name}: Errno = Errno::{target};\n")
    for name, num, doc in RESTART:
        out.append(f"    /// {doc}\n    pub const {name}: Errno = Errno({num});\n")
    out.append(METHODS)
    for name, num, _ in numbered + [(n, v, d) for n, v, d in RESTART]:
        out.append(f'            {num} => "{name}",\n')
    out.append(TAIL)
    return "".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="fail if the checked-in file is stale")
    ap.add_argument("--stdout", action="store_true", help="print instead of writing")
    ap.add_argument("--include", default="/usr/include", help="UAPI header root")
    args = ap.parse_args()
    text = generate(args.include)
    if args.stdout:
        sys.stdout.write(text)
        return 0
    if args.check:
        try:
            with open(OUT, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = ""
        if current != text:
            sys.stdout.writelines(difflib.unified_diff(
                current.splitlines(True), text.splitlines(True), OUT, "generated"))
            print(f"{OUT} is stale: run tools/gen-uapi-errno.py", file=sys.stderr)
            return 1
        return 0
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
