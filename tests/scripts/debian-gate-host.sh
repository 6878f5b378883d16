#!/usr/bin/env bash
# The host side of the Debian gate: from a Debian tree made by tools/mkrootfs-debian, write into
# OUTDIR what tests/scripts/debian-gate.sh compares the guest against. tests/tests/debian.rs
# and tools/arm64/lane run it once and copy OUTDIR into each boot's copy of the tree as
# /opt/um/debian-gate/. The tree is only read.
#
# OUTDIR gets:
#   debian-gate.sh   the guest script
#   prog.c           tests/scripts/debian-gate.c
#   prog.expected    its output, compiled with the host's cc and run natively (the program
#                    prints the same on every architecture, so an x86_64 host serves an arm64 tree)
#   dpkg.expected    the packages the tree's /var/lib/dpkg/status has installed, sorted
#   gate.conf        the size of the guest's work: FIND_DIRS, SORT_LINES, TAR_DIRS (see
#                    debian-gate.sh); with --light (the arm64 lane, under TCG emulation) a find
#                    over usr/bin, usr/sbin and etc instead of usr and etc, 60000 lines to sort
#                    instead of 300000, and only etc/apt in the tar archive
#   find.expected    `debian-gate.sh --listing TREE FIND_DIRS`: the find step's listing
#   sha256.expected  sha256sum of every regular file under the given PATHs of the tree (default
#                    usr etc), paths relative to the tree's root
# It first checks that the tree is intact: every file the packages' md5sums list (those that
# mkrootfs-debian did not leave out) has its packaged content; the gates hardlink the tree's usr/
# into their copies, so a kernel that wrote into one would show here.
# Prints one line per product; on failure one `debian-gate-host: error: ...` line, exit status 1.
set -euo pipefail

PROG=debian-gate-host
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

die() {
    echo "$PROG: error: $*" >&2
    exit 1
}

LIGHT=0
if [[ "${1:-}" == --light ]]; then
    LIGHT=1
    shift
fi
if [[ $# -lt 2 || "$1" == -h || "$1" == --help ]]; then
    echo "usage: tests/scripts/debian-gate-host.sh [--light] TREE OUTDIR [PATH...]  (PATHs relative to TREE for sha256.expected; default: usr etc)"
    [[ $# -ge 1 && ("$1" == -h || "$1" == --help) ]] && exit 0
    exit 2
fi
TREE="${1%/}"
OUT="$2"
shift 2
PATHS=("$@")
[[ ${#PATHS[@]} -gt 0 ]] || PATHS=(usr etc)

[[ -x "$TREE/bin/bash" && -f "$TREE/var/lib/dpkg/status" ]] ||
    die "$TREE is not a Debian tree (no bin/bash or var/lib/dpkg/status); make it with tools/mkrootfs-debian"
for p in "${PATHS[@]}"; do
    [[ "$p" != /* && -e "$TREE/$p" ]] || die "no $p in $TREE (PATHs are relative to the tree)"
done
CC="${CC:-cc}"
command -v "$CC" >/dev/null 2>&1 || die "no C compiler '$CC' on the host (install gcc, or set CC)"

N_MD5="$(cat "$TREE"/var/lib/dpkg/info/*.md5sums | wc -l)"
BAD="$(cd "$TREE" && cat var/lib/dpkg/info/*.md5sums | md5sum -c --quiet --ignore-missing 2>&1 | head -3 | tr '\n' ' ')" ||
    die "$TREE differs from its packages (${BAD}...); rebuild it with tools/mkrootfs-debian --force"
echo "$PROG: the tree is intact ($N_MD5 packaged files checked against the packages' md5sums)"

rm -rf "$OUT"
mkdir -p "$OUT"
install -m 0755 "$HERE/debian-gate.sh" "$OUT/debian-gate.sh"
install -m 0644 "$HERE/debian-gate.c" "$OUT/prog.c"
if [[ $LIGHT == 1 ]]; then
    FIND_DIRS="usr/bin usr/sbin etc" SORT_LINES=60000 TAR_DIRS="etc/apt"
else
    FIND_DIRS="usr etc" SORT_LINES=300000 TAR_DIRS="etc/apt usr/include/linux"
fi
for d in $FIND_DIRS $TAR_DIRS; do
    [[ -e "$TREE/$d" ]] || die "no $d in $TREE"
done
{
    echo "# Written by tests/scripts/debian-gate-host.sh$([[ $LIGHT == 1 ]] && echo " --light"); sourced by debian-gate.sh."
    echo "FIND_DIRS=\"$FIND_DIRS\""
    echo "SORT_LINES=$SORT_LINES"
    echo "TAR_DIRS=\"$TAR_DIRS\""
} >"$OUT/gate.conf"

"$CC" -O2 -pthread -o "$OUT/prog.host" "$HERE/debian-gate.c" -lm || die "$CC failed on debian-gate.c"
"$OUT/prog.host" >"$OUT/prog.expected" || die "the host's build of debian-gate.c failed to run"
rm -f "$OUT/prog.host"
echo "$PROG: prog.expected: $(wc -l <"$OUT/prog.expected") lines from the host's $CC"

awk '
    /^Package: / { pkg = $2 }
    /^Status: install ok installed$/ { print pkg }
    /^$/ { pkg = "" }
' "$TREE/var/lib/dpkg/status" | LC_ALL=C sort >"$OUT/dpkg.expected"
[[ -s "$OUT/dpkg.expected" ]] || die "no installed packages in $TREE/var/lib/dpkg/status"
echo "$PROG: dpkg.expected: $(wc -l <"$OUT/dpkg.expected") installed packages"

# shellcheck disable=SC2086 # FIND_DIRS is a list
bash "$HERE/debian-gate.sh" --listing "$TREE" $FIND_DIRS >"$OUT/find.expected" ||
    die "find over $FIND_DIRS in $TREE failed"
echo "$PROG: find.expected: $(wc -l <"$OUT/find.expected") entries under $FIND_DIRS"

(cd "$TREE" && find "${PATHS[@]}" -xdev -type f -print0 | LC_ALL=C sort -z |
    xargs -0 -r sha256sum) >"$OUT/sha256.expected" || die "sha256sum over $TREE (${PATHS[*]}) failed"
echo "$PROG: sha256.expected: $(wc -l <"$OUT/sha256.expected") files under ${PATHS[*]} ($(cd "$TREE" && du -sch "${PATHS[@]}" | tail -1 | cut -f1))"
