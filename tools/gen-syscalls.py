#!/usr/bin/env python3
"""Generate the per-arch syscall number tables from the host's Linux UAPI headers.

Outputs (checked in, do not edit by hand):
    arch/x86/src/syscalls.rs     from /usr/include/x86_64-linux-gnu/asm/unistd_64.h
    arch/arm64/src/syscalls.rs   from /usr/include/asm-generic/unistd.h, evaluated as arm64 does

arm64 has no table of its own (up to Linux 6.10): arch/arm64/include/uapi/asm/unistd.h defines
__ARCH_WANT_RENAMEAT, __ARCH_WANT_NEW_STAT, __ARCH_WANT_SET_GET_RLIMIT,
__ARCH_WANT_TIME32_SYSCALLS, __ARCH_WANT_SYS_CLONE3 and __ARCH_WANT_MEMFD_SECRET, then includes
asm-generic/unistd.h with __BITS_PER_LONG == 64 (and without __SYSCALL_COMPAT). The __NR3264_*
numbers get their 64-bit names through the `#define __NR_fcntl __NR3264_fcntl` block at the end
of that header (fcntl, statfs, fstatfs, truncate, ftruncate, lseek, sendfile, newfstatat, fstat,
mmap, fadvise64). This script implements just enough of the C preprocessor (#if/#ifdef/#ifndef/
#else/#elif/#endif with defined(), ||, &&, !, ==, !=) to evaluate that header.

The headers come from the Debian package linux-libc-dev; its version is recorded in the output so
a header upgrade shows up as a --check failure.

Usage:
    tools/gen-syscalls.py           rewrite both files
    tools/gen-syscalls.py --check   exit 1 if a checked-in file differs from what would be generated
    tools/gen-syscalls.py --stdout  print both outputs instead of writing them
Options: --include DIR (default /usr/include), --libc-dev-version V (default: ask dpkg-query).
"""

import argparse
import difflib
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Macros arm64 defines before including asm-generic/unistd.h (arch/arm64/include/uapi/asm/unistd.h).
# Not syscalls: placeholders in asm-generic/unistd.h (`__NR_arch_specific_syscall` 244 marks the
# start of a per-arch range that arm64 leaves empty).
NOT_SYSCALLS = {"arch_specific_syscall"}

ARM64_DEFINES = {
    "__ARCH_WANT_RENAMEAT",
    "__ARCH_WANT_NEW_STAT",
    "__ARCH_WANT_SET_GET_RLIMIT",
    "__ARCH_WANT_TIME32_SYSCALLS",
    "__ARCH_WANT_SYS_CLONE3",
    "__ARCH_WANT_MEMFD_SECRET",
}

# Well-known numbers each generated file unit-tests (and this script double-checks).
KNOWN = {
    "x86": [("read", 0), ("write", 1), ("openat", 257), ("exit_group", 231), ("clone3", 435),
            ("rseq", 334), ("rt_sigreturn", 15), ("arch_prctl", 158)],
    "arm64": [("openat", 56), ("read", 63), ("write", 64), ("exit_group", 94), ("clone", 220),
              ("execve", 221), ("mmap", 222), ("clone3", 435), ("rseq", 293), ("fstat", 80),
              ("newfstatat", 79), ("lseek", 62), ("fcntl", 25), ("rt_sigreturn", 139)],
}


def libc_dev_version():
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "linux-libc-dev"],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def linux_version(include):
    """The LINUX_VERSION_CODE of the headers as "a.b.c", or "unknown"."""
    try:
        with open(os.path.join(include, "linux", "version.h"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return "unknown"
    m = re.search(r"#define\s+LINUX_VERSION_MAJOR\s+(\d+)\s*\n#define\s+LINUX_VERSION_PATCHLEVEL\s+(\d+)"
                  r"\s*\n#define\s+LINUX_VERSION_SUBLEVEL\s+(\d+)", text)
    if m:
        return ".".join(m.groups())
    m = re.search(r"#define\s+LINUX_VERSION_CODE\s+(\d+)", text)
    if m:
        code = int(m.group(1))
        return f"{code >> 16}.{(code >> 8) & 0xff}.{code & 0xff}"
    return "unknown"


def logical_lines(path):
    """Lines with backslash continuations joined and comments removed."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = text.replace("\\\n", " ")
    for line in text.split("\n"):
        line = re.sub(r"//.*", "", line).strip()
        if line:
            yield line


def eval_cond(expr, defined, values):
    def repl_defined(m):
        return " 1 " if m.group(1) in defined else " 0 "

    e = re.sub(r"defined\s*\(\s*(\w+)\s*\)", repl_defined, expr)
    e = re.sub(r"defined\s+(\w+)", repl_defined, e)

    def repl_ident(m):
        name = m.group(0)
        if name in values:
            return str(values[name])
        return "0"  # undefined identifiers are 0 in #if

    e = re.sub(r"[A-Za-z_]\w*", repl_ident, e)
    e = e.replace("&&", " and ").replace("||", " or ")
    e = re.sub(r"!(?!=)", " not ", e)
    if not re.fullmatch(r"[\d\s()<>=!andortn]*", e):
        sys.exit(f"cannot evaluate #if {expr!r} -> {e!r}")
    return bool(eval(e, {"__builtins__": {}}, {}))  # noqa: S307 - digits and operators only


def parse_generic(path, predefined):
    """Evaluates asm-generic/unistd.h; returns {name: number} for the active __NR_* macros."""
    defined = set(predefined)
    values = {"__BITS_PER_LONG": 64}
    stack = []  # (this branch active, some branch taken, parent active)
    active = True
    nr = {}
    for line in logical_lines(path):
        if not line.startswith("#"):
            continue
        m = re.match(r"#\s*(\w+)\s*(.*)", line)
        directive, rest = m.group(1), m.group(2).strip()
        if directive in ("if", "ifdef", "ifndef"):
            if directive == "ifdef":
                cond = rest in defined
            elif directive == "ifndef":
                cond = rest not in defined
            else:
                cond = eval_cond(rest, defined, values) if active else False
            stack.append((active and cond, cond, active))
            active = active and cond
        elif directive == "elif":
            _, taken, parent = stack.pop()
            cond = (not taken) and parent and eval_cond(rest, defined, values)
            stack.append((cond, taken or cond, parent))
            active = cond
        elif directive == "else":
            _, taken, parent = stack.pop()
            stack.append((parent and not taken, True, parent))
            active = parent and not taken
        elif directive == "endif":
            _, _, parent = stack.pop()
            active = parent
        elif not active:
            continue
        elif directive == "define":
            d = re.match(r"(\w+)(\([^)]*\))?\s*(.*)", rest)
            name, args, body = d.group(1), d.group(2), d.group(3).strip()
            defined.add(name)
            if args:
                continue
            if re.fullmatch(r"\d+", body):
                values[name] = int(body)
            elif body in values:
                values[name] = values[body]
            if name.startswith("__NR_") and name != "__NR_syscalls" and name[5:] not in NOT_SYSCALLS:
                if name not in values:
                    sys.exit(f"{path}: cannot resolve {line}")
                nr[name[len("__NR_"):]] = values[name]
        elif directive == "undef":
            defined.discard(rest)
            values.pop(rest, None)
    if stack:
        sys.exit(f"{path}: unbalanced #if")
    return nr


def parse_flat(path):
    nr = {}
    for line in logical_lines(path):
        m = re.fullmatch(r"#define\s+__NR_(\w+)\s+(\d+)", line)
        if m:
            nr[m.group(1)] = int(m.group(2))
    return nr


def render(arch, nr, header, cmd, pkg_version, kver):
    by_nr = sorted(nr.items(), key=lambda kv: kv[1])
    numbers = [n for _, n in by_nr]
    if len(set(numbers)) != len(numbers):
        sys.exit(f"{arch}: duplicate syscall numbers")
    for name, want in KNOWN[arch]:
        if nr.get(name) != want:
            sys.exit(f"{arch}: {name} is {nr.get(name)}, expected {want}")
    max_nr = numbers[-1]
    arch_name = {"x86": "x86_64", "arm64": "arm64"}[arch]
    o = []
    o.append(f"//! Syscall numbers of Linux on {arch_name}: GENERATED, do not edit by hand.\n")
    o.append("//!\n")
    o.append(f"//! Source: `{header}` from the Debian package `linux-libc-dev` {pkg_version}\n")
    o.append(f"//! (Linux {kver} UAPI headers")
    if arch == "arm64":
        o.append(";\n//! evaluated as `arch/arm64/include/uapi/asm/unistd.h` does for 64-bit tasks:\n")
        o.append("//! `__ARCH_WANT_RENAMEAT`, `__ARCH_WANT_NEW_STAT`, `__ARCH_WANT_SET_GET_RLIMIT`,\n")
        o.append("//! `__ARCH_WANT_TIME32_SYSCALLS`, `__ARCH_WANT_SYS_CLONE3`, `__ARCH_WANT_MEMFD_SECRET`,\n")
        o.append("//! `__BITS_PER_LONG == 64`, with the `__NR3264_*` numbers under their 64-bit names).\n")
    else:
        o.append(").\n")
    o.append(f"//! Regenerate with `{cmd}`;\n//! `{cmd} --check` fails when this file is stale.\n")
    o.append("//!\n")
    o.append("//! [`nr`] holds one constant per syscall (`nr::OPENAT`), [`TABLE`] lists `(number, name)`\n")
    o.append("//! sorted by number, and [`name`]/[`number`] translate between the two.\n")
    o.append("\n")
    o.append("/// One constant per syscall, named after the Linux syscall in upper case.\n")
    o.append("pub mod nr {\n")
    for name, n in by_nr:
        o.append(f"    pub const {name.upper()}: u32 = {n};\n")
    o.append("}\n\n")
    o.append("/// The largest syscall number in the table.\n")
    o.append(f"pub const MAX_NR: u32 = {max_nr};\n\n")
    o.append("/// Every syscall as `(number, name)`, sorted by number.\n")
    o.append("pub static TABLE: &[(u32, &str)] = &[\n")
    for name, n in by_nr:
        o.append(f'    ({n}, "{name}"),\n')
    o.append("];\n\n")
    o.append("/// Every syscall as `(name, number)`, sorted by name (for [`number`]).\n")
    o.append("static BY_NAME: &[(&str, u32)] = &[\n")
    for name, n in sorted(nr.items(), key=lambda kv: kv[0].encode()):
        o.append(f'    ("{name}", {n}),\n')
    o.append("];\n\n")
    o.append("""\
/// The Linux name of syscall `nr` (`"openat"`), or `None` if the number is unassigned.
pub fn name(nr: u32) -> Option<&'static str> {
    TABLE
        .binary_search_by_key(&nr, |&(n, _)| n)
        .ok()
        .map(|i| TABLE[i].1)
}

/// The number of the syscall called `name` in Linux (`"openat"`), if this arch has it.
pub fn number(name: &str) -> Option<u32> {
    BY_NAME
        .binary_search_by(|&(n, _)| n.cmp(name))
        .ok()
        .map(|i| BY_NAME[i].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_numbers() {
""")
    for name, n in KNOWN[arch]:
        o.append(f"        assert_eq!(nr::{name.upper()}, {n});\n")
        o.append(f'        assert_eq!(number("{name}"), Some({n}));\n')
    o.append("""\
    }

    #[test]
    fn tables_are_sorted_and_round_trip() {
        assert!(TABLE.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(BY_NAME.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(TABLE.len(), BY_NAME.len());
        assert_eq!(TABLE.last().map(|e| e.0), Some(MAX_NR));
        for &(nr, nm) in TABLE {
            assert_eq!(name(nr), Some(nm));
            assert_eq!(number(nm), Some(nr));
        }
        assert_eq!(name(MAX_NR + 1), None);
        assert_eq!(number("no_such_syscall"), None);
    }
}
""")
    return "".join(o)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="fail if a checked-in file is stale")
    ap.add_argument("--stdout", action="store_true", help="print instead of writing")
    ap.add_argument("--include", default="/usr/include", help="UAPI header root")
    ap.add_argument("--libc-dev-version", default=None, help="override the linux-libc-dev version")
    args = ap.parse_args()

    pkg = args.libc_dev_version or libc_dev_version()
    kver = linux_version(args.include)
    cmd = "tools/gen-syscalls.py"
    x86_hdr = os.path.join(args.include, "x86_64-linux-gnu", "asm", "unistd_64.h")
    gen_hdr = os.path.join(args.include, "asm-generic", "unistd.h")
    outputs = {
        os.path.join(ROOT, "arch", "x86", "src", "syscalls.rs"):
            render("x86", parse_flat(x86_hdr), "/usr/include/x86_64-linux-gnu/asm/unistd_64.h", cmd, pkg, kver),
        os.path.join(ROOT, "arch", "arm64", "src", "syscalls.rs"):
            render("arm64", parse_generic(gen_hdr, ARM64_DEFINES), "/usr/include/asm-generic/unistd.h",
                   cmd, pkg, kver),
    }
    status = 0
    for path, text in outputs.items():
        if args.stdout:
            sys.stdout.write(f"// ==== {path}\n{text}")
        elif args.check:
            try:
                with open(path, encoding="utf-8") as f:
                    current = f.read()
            except FileNotFoundError:
                current = ""
            # A newer linux-libc-dev on the checking machine changes only the provenance
            # lines; the tables are what must be current. Compare with the recorded versions.
            m = re.search(r"`linux-libc-dev` (\S+)\n//! \(Linux (\S+) UAPI", current)
            if m and not args.libc_dev_version:
                text = text.replace(f"`linux-libc-dev` {pkg}\n//! (Linux {kver} UAPI",
                                    f"`linux-libc-dev` {m.group(1)}\n//! (Linux {m.group(2)} UAPI")
            if current != text:
                sys.stdout.writelines(difflib.unified_diff(
                    current.splitlines(True), text.splitlines(True), path, "generated"))
                print(f"{path} is stale: run {cmd}", file=sys.stderr)
                status = 1
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
