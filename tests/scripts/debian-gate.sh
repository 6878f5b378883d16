#!/bin/bash
# Debian gate (issue 7): run as init (`linux ... init=/bin/bash -- /opt/um/debian-gate/debian-gate.sh`)
# on a Debian 12 tree made by tools/mkrootfs-debian; tests/tests/debian.rs boots it on x86_64 in
# every engine, tools/arm64/gates.sh in the arm64 lane. Each boot gets a fresh copy of the tree.
#
# Needs, next to this script (/opt/um/debian-gate/, written by tests/scripts/debian-gate-host.sh
# on the host from the same tree): prog.c and prog.expected (the host's output of it),
# dpkg.expected (installed packages from the tree's dpkg status), find.expected (`listing`
# below, run on the host), sha256.expected (the host's sha256sum of a set of the tree's files),
# and gate.conf, which sizes the work: FIND_DIRS (what the find step lists), SORT_LINES,
# TAR_DIRS (copied into the tar step's archive); the arm64 lane uses a lighter one than x86_64.
#
# Steps, in order, each printing `STEP <name> ok (<secs>s)` or `STEP <name> FAIL (<secs>s) <detail>`
# (with the step's last output lines indented under it), after a `RUN <name>` progress line:
#   boot       bash is pid 1 of Debian 12 (glibc), /proc mounted
#   dpkg       `dpkg -l` lists exactly the packages the host finds installed in the tree;
#              `dpkg --verify` of a few packages
#   find       `find` over FIND_DIRS lists what the host's find lists in the tree
#   sha256sum  `sha256sum -c` of the host's digests of the tree's files
#   coreutils  chown to non-root users and groups shows in `ls -l` (names and numbers), setuid
#              and setgid modes, cp -a/install/mkdir -m/touch -d/ln -s/mv/stat/du/df and friends
#   tar        tar czf of TAR_DIRS and a file owned by nobody:nogroup, listing, extraction
#              (owners kept), diff -r
#   sort       `sort -S` of SORT_LINES lines, small enough to merge through temporary files
#   python3    `python3 -c` with threads, subprocess, a thread pool running subprocesses, a pipe,
#              fchown/fchmod of a pipe (runc chowns its stdio pipes), os.execve of a memfd and
#              of an unlinked file's O_PATH fd (execveat AT_EMPTY_PATH)
#   xattr      extended attributes (issue 24) on the hostfs root and on the tmpfs /dev/shm:
#              python3's os.setxattr/getxattr/listxattr/removexattr (flags, errors),
#              shutil.copystat copies them, cp -a and cp --preserve=xattr keep them (plain cp
#              does not), within hostfs and across to tmpfs, mv keeps them, tar --xattrs too
#   gcc        gcc -O2 -pthread prog.c, its output equal to the host's
#   apt        a .deb built here with dpkg-deb (a script, a file owned by nobody:nogroup,
#              maintainer scripts), `apt-get install` of it, then `apt-get purge`
# At the end `UM-DEBIAN-OK` if every step passed, else `UM-DEBIAN-FAILED: <names>`; exit status 0
# or 1.
#
# `debian-gate.sh --steps a,b,...` runs only those steps (in the order of STEPS; the arm64 lane
# runs a short set in the ptrace fallbacks to stay in CI's time).
# `debian-gate.sh --listing ROOT DIR...` prints the find step's listing of DIRs (relative to
# ROOT); the host side makes find.expected with it.

STEPS="boot dpkg find sha256sum coreutils tar sort python3 xattr gcc apt"

# The listing of the find step: every entry under the DIRs with its type, regular files with
# their size, symlinks with their target; sorted bytewise.
listing() {
    cd "$1" || return 1
    shift
    {
        find "$@" -xdev -type f -printf 'f %s %p\n'
        find "$@" -xdev ! -type f -printf '%y %p %l\n'
    } | LC_ALL=C sort
}

if [ "${1:-}" = --listing ]; then
    [ -d "${2:-}" ] && [ $# -ge 3 ] || {
        echo "debian-gate.sh: error: --listing needs a directory and what to list in it" >&2
        exit 2
    }
    set -o pipefail
    shift
    listing "$@"
    exit
fi

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LC_ALL=C TERM=dumb DEBIAN_FRONTEND=noninteractive
unset LANG LANGUAGE
D=$(cd "$(dirname "$0")" && pwd)
FIND_DIRS="usr etc"
SORT_LINES=300000
TAR_DIRS="etc/apt usr/include/linux"
if [ -f "$D/gate.conf" ]; then
    . "$D/gate.conf"
fi
W=/tmp/um-debian-gate
FAILED=""
LOG=/tmp/.um-debian-step.out

now() { echo "${EPOCHREALTIME:-$(date +%s)}"; }

# step NAME: run t_NAME in a subshell (from /, with pipefail), its output kept in $LOG.
step() {
    local name=$1 t0 rc secs
    echo "RUN $name"
    t0=$(now)
    (
        set -o pipefail
        cd / && "t_$name"
    ) >"$LOG" 2>&1
    rc=$?
    secs=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
    if [ $rc = 0 ]; then
        echo "STEP $name ok (${secs}s)"
    else
        echo "STEP $name FAIL (${secs}s, status $rc) $(tail -n 3 "$LOG" | tr '\n' '|')"
        tail -n 20 "$LOG" | sed 's/^/  | /'
        FAILED="$FAILED $name"
    fi
}

fail() {
    echo "$*"
    return 1
}

# want WHAT GOT EXPECTED: fail unless equal.
want() {
    [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}

t_boot() {
    want "pid of init" "$$" 1 || return 1
    want "bash major version" "${BASH_VERSINFO[0]}" 5 || return 1
    grep -q '^12\.' /etc/debian_version || fail "/etc/debian_version is $(cat /etc/debian_version)" || return 1
    grep -qx 'VERSION_CODENAME=bookworm' /etc/os-release || fail "not bookworm: $(cat /etc/os-release)" || return 1
    mountpoint -q /proc || mount -t proc proc /proc || fail "mount -t proc failed" || return 1
    if ! mountpoint -q /dev/pts; then
        mkdir -p /dev/pts && mount -t devpts devpts /dev/pts || fail "mount -t devpts failed" || return 1
    fi
    [ -c /dev/null ] || fail "/dev/null is not a character device" || return 1
    want "init's executable" "$(readlink /proc/1/exe)" /usr/bin/bash || return 1
    local libc
    libc=$(getconf GNU_LIBC_VERSION) || fail "getconf GNU_LIBC_VERSION failed" || return 1
    want "libc" "$libc" "glibc 2.36" || return 1
    echo "Debian $(cat /etc/debian_version), bash $BASH_VERSION, $libc, $(uname -srm)"
    rm -rf "$W" && mkdir -p "$W" || fail "cannot make $W" || return 1
}

t_dpkg() {
    dpkg -l >"$W/dpkg-l" || fail "dpkg -l failed" || return 1
    head -n 7 "$W/dpkg-l"
    awk '$1 == "ii" { sub(/:.*/, "", $2); print $2 }' "$W/dpkg-l" | LC_ALL=C sort >"$W/dpkg.got"
    diff "$D/dpkg.expected" "$W/dpkg.got" >"$W/dpkg.diff" || {
        head -n 10 "$W/dpkg.diff"
        fail "dpkg -l does not list what the tree's dpkg status has installed (< host, > guest)"
        return 1
    }
    local p
    for p in bash coreutils dpkg apt python3 gcc libc6 tar findutils; do
        grep -qx "$p" "$W/dpkg.got" || fail "dpkg -l does not list $p" || return 1
    done
    dpkg --verify bash coreutils dpkg tar >"$W/verify" 2>&1 || {
        cat "$W/verify"
        fail "dpkg --verify failed"
        return 1
    }
    # Documentation, man pages and translations are left out by mkrootfs-debian (dpkg
    # path-exclude): those are missing; anything else reported (a changed checksum) is not.
    if grep -vE '^missing +/usr/share/(doc|man|locale)(/|$)' "$W/verify"; then
        fail "dpkg --verify found changed files"
        return 1
    fi
    echo "dpkg -l lists $(wc -l <"$W/dpkg.got") installed packages, as on the host"
}

t_find() {
    listing / $FIND_DIRS >"$W/find.got" || fail "find failed" || return 1
    diff "$D/find.expected" "$W/find.got" >"$W/find.diff" || {
        head -n 10 "$W/find.diff"
        fail "find's listing of $FIND_DIRS differs from the host's (< host, > guest)"
        return 1
    }
    want "find -name python3 under /usr/bin" "$(find /usr/bin -name python3 -type l -printf '%p -> %l')" \
        "/usr/bin/python3 -> python3.11" || return 1
    want "find /usr/include -maxdepth 1 -name stdio.h -size +1k" \
        "$(find /usr/include -maxdepth 1 -name stdio.h -size +1k)" \
        /usr/include/stdio.h || return 1
    want "find -maxdepth -name -exec" "$(find /etc -maxdepth 1 -name debian_version -exec cat {} +)" \
        "$(cat /etc/debian_version)" || return 1
    echo "find lists $(wc -l <"$W/find.got") entries under $FIND_DIRS, as on the host"
}

t_sha256sum() {
    local n
    n=$(wc -l <"$D/sha256.expected")
    [ "$n" -ge 10 ] || fail "only $n digests in sha256.expected" || return 1
    cd / && sha256sum --quiet --strict -c "$D/sha256.expected" || fail "sha256sum -c: digests differ from the host's" || return 1
    echo "sha256sum: $n files match the host's digests"
}

t_coreutils() {
    mkdir -p "$W/cu" && cd "$W/cu" || return 1
    echo hello >f && chown nobody:nogroup f || fail "chown nobody:nogroup failed" || return 1
    local l
    l=$(ls -l f) && echo "$l"
    set -- $l
    want "ls -l owner and group of a file chowned to nobody:nogroup" "$3 $4" "nobody nogroup" || return 1
    set -- $(ls -ln f)
    want "ls -ln of it" "$3 $4" "65534 65534" || return 1
    touch g && chown 1234:2345 g || fail "chown 1234:2345 failed" || return 1
    set -- $(ls -l g)
    want "ls -l owner and group of a file chowned to 1234:2345 (no names)" "$3 $4" "1234 2345" || return 1
    touch h && chown daemon:adm h && chmod 4750 h || fail "chown daemon:adm + chmod 4750 failed" || return 1
    l=$(ls -l h) && echo "$l"
    set -- $l
    want "ls -l of a setuid file owned by daemon:adm" "$1 $3 $4" "-rwsr-x--- daemon adm" || return 1
    want "stat -c '%U:%G %a'" "$(stat -c '%U:%G %a' h)" "daemon:adm 4750" || return 1
    mkdir -m 2775 dir && chgrp adm dir || fail "mkdir -m 2775 / chgrp adm failed" || return 1
    set -- $(ls -ld dir)
    want "ls -ld of a setgid directory of group adm" "$1 $3 $4" "drwxrwsr-x root adm" || return 1
    touch dir/x || return 1
    want "group of a new file in a setgid directory" "$(stat -c '%U:%G' dir/x)" "root:adm" || return 1
    chown -R daemon dir || return 1
    want "owner after chown -R daemon" "$(stat -c '%U:%G' dir/x)" "daemon:adm" || return 1
    cp -a h h2 || return 1
    want "owner after cp -a" "$(stat -c '%U:%G %a' h2)" "daemon:adm 4750" || return 1
    install -o nobody -g nogroup -m 0640 f i || return 1
    want "owner after install -o -g -m" "$(stat -c '%U:%G %a' i)" "nobody:nogroup 640" || return 1
    touch -d '2001-02-03 04:05:06' f || return 1
    want "ls -l --time-style after touch -d" "$(ls -l --time-style=+%F_%T f | awk '{ print $6 }')" \
        "2001-02-03_04:05:06" || return 1
    ln -s f link && want "readlink" "$(readlink link)" f || return 1
    want "ls -l of a symlink" "$(ls -l link | sed 's/.* link/link/')" "link -> f" || return 1
    mv i j && [ -e j ] && [ ! -e i ] || fail "mv i j failed" || return 1
    want "wc -c" "$(wc -c <f)" 6 || return 1
    want "cat, tr, cut" "$(cat f | tr a-z A-Z | cut -c2-4)" ELL || return 1
    want "seq, paste, sort -rn, head" "$(seq 10 | sort -rn | head -n 3 | paste -sd,)" "10,9,8" || return 1
    want "factor" "$(factor 1234567891011)" "1234567891011: 3 7 13 67 107 630803" || return 1
    want "md5sum" "$(printf abc | md5sum)" "900150983cd24fb0d6963f7d28e17f72  -" || return 1
    want "base64" "$(printf 'Debian' | base64)" "RGViaWFu" || return 1
    want "expr" "$(expr 6 \* 7)" 42 || return 1
    want "date -u -d @0" "$(date -u -d @0 +%F)" 1970-01-01 || return 1
    want "id -un" "$(id -un)" root || return 1
    du -sk /usr/bin >/dev/null || fail "du failed" || return 1
    df -k / >/dev/null || fail "df / failed" || return 1
    timeout 0.2 sleep 5
    want "timeout 0.2 sleep 5" "$?" 124 || return 1
    echo "coreutils: guest owners nobody:nogroup, 1234:2345, daemon:adm shown by ls -l; modes and tools ok"
}

t_tar() {
    mkdir -p "$W/tar/src" && cd "$W/tar" || return 1
    local d
    for d in $TAR_DIRS; do
        mkdir -p "src/$(dirname "$d")" && cp -a "/$d" "src/$d" || fail "cp -a /$d failed" || return 1
    done
    echo owned >src/owned && chown nobody:nogroup src/owned && chmod 640 src/owned || return 1
    ln -s owned src/link
    tar -czf a.tgz -C src . || fail "tar -czf failed" || return 1
    local v
    v=$(tar -tzvf a.tgz ./owned) || fail "tar -tzvf failed" || return 1
    echo "$v"
    set -- $v
    want "tar -tv owner of ./owned" "$1 $2" "-rw-r----- nobody/nogroup" || return 1
    local n m
    n=$(tar -tzf a.tgz | wc -l)
    m=$( (cd src && find . | wc -l))
    want "entries in the archive (find . | wc -l)" "$n" "$m" || return 1
    mkdir out && tar -xzf a.tgz -C out || fail "tar -xzf failed" || return 1
    diff -r src out || fail "diff -r after extraction found differences" || return 1
    want "owner of the extracted file" "$(stat -c '%U:%G %a' out/owned)" "nobody:nogroup 640" || return 1
    tar -cf - -C /usr lib/python3.11/json | tar -xf - -C out || fail "tar through a pipe failed" || return 1
    diff -r /usr/lib/python3.11/json out/lib/python3.11/json || fail "diff -r of the piped copy" || return 1
    echo "tar: $n entries, owners kept, extraction identical"
}

t_sort() {
    local n=$SORT_LINES
    seq "$n" >"$W/seq" && shuf --random-source=/usr/bin/bash "$W/seq" >"$W/shuf" || return 1
    cmp -s "$W/seq" "$W/shuf" && fail "shuf did not shuffle" && return 1
    sort -n -S 64K -T "$W" "$W/shuf" >"$W/sorted" || fail "sort -n -S 64K failed" || return 1
    cmp "$W/seq" "$W/sorted" || fail "sort -n -S 64K output is not seq's" || return 1
    want "sort -rn -S 64K --parallel=2 | head -1" "$(sort -rn -S 64K --parallel=2 -T "$W" "$W/shuf" | head -n 1)" \
        "$n" || return 1
    want "sort -u -S 100K of a doubled list" "$(cat "$W/shuf" "$W/shuf" | sort -u -S 100K -T "$W" | wc -l)" \
        "$n" || return 1
    want "sort -t: -k3,3n /etc/passwd | head -1" "$(sort -t: -k3,3n -S 1M /etc/passwd | head -n 1 | cut -d: -f1)" \
        root || return 1
    echo "sort -S: $n lines through temporary files, as seq"
}

PY='
import concurrent.futures, subprocess, sys, threading
res = {}
def work(i):
    res[i] = sum(x * x for x in range(i * 20000))
ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("threads", [res[i] for i in range(4)], threading.active_count())
r = subprocess.run(["sh", "-c", "echo child $((6*7)); exit 3"], capture_output=True, text=True)
print("subprocess", r.stdout.strip(), r.returncode)
def square(i):
    return subprocess.check_output(["sh", "-c", "echo $(($1 * $1))", "sh", str(i)], text=True).strip()
with concurrent.futures.ThreadPoolExecutor(4) as ex:
    print("pool", " ".join(ex.map(square, range(8))))
p = subprocess.Popen(["tr", "a-z", "A-Z"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
print("pipe", p.communicate(b"hello")[0].decode(), p.wait())
import os, shutil
def fdexec(tag, mk):
    # os.execve of a descriptor: execveat(fd, "", AT_EMPTY_PATH), as fexecve, crun and runc
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.dup2(w, 1)
        fd = mk()
        os.execve(fd, ["echo", tag, "exec ok"], {})
    os.close(w)
    print(os.read(r, 100).decode().strip(), os.waitpid(pid, 0)[1])
def memfd():
    fd = os.memfd_create("um-echo")
    os.write(fd, open("/bin/echo", "rb").read())
    return fd
def opath_unlinked():
    # on tmpfs (/dev/shm): a hostfs inode is reached by its host path, gone once unlinked
    shutil.copy("/bin/echo", "/dev/shm/um-echo")
    fd = os.open("/dev/shm/um-echo", os.O_PATH)
    os.unlink("/dev/shm/um-echo")
    return fd
r, w = os.pipe()
os.fchown(r, 1234, 2345)
os.fchmod(w, 0o640)
print("pipe owner", os.fstat(w).st_uid, os.fstat(w).st_gid, oct(os.fstat(r).st_mode))
fdexec("memfd", memfd)
fdexec("O_PATH-unlinked", opath_unlinked)
print("python", "%d.%d" % sys.version_info[:2])
'
PY_EXPECTED='threads [0, 2666466670000, 21332533340000, 71998200010000] 1
subprocess child 42 3
pool 0 1 4 9 16 25 36 49
pipe HELLO 0
pipe owner 1234 2345 0o10640
memfd exec ok 0
O_PATH-unlinked exec ok 0
python 3.11'

t_python3() {
    local out
    out=$(python3 -c "$PY") || {
        echo "$out"
        fail "python3 -c failed"
        return 1
    }
    echo "$out"
    [ "$out" = "$PY_EXPECTED" ] || fail "python3 printed something else; want: $PY_EXPECTED" || return 1
}

# The attributes of a file as python3 lists them: `name=value` sorted, one line.
xattrs_of() {
    python3 -c 'import os,sys; p=sys.argv[1]; print(" ".join(sorted(n+"="+os.getxattr(p,n,follow_symlinks=False).decode() for n in os.listxattr(p,follow_symlinks=False))))' "$1"
}

XATTR_PY='
import errno, os, shutil, sys

def check(ok, what):
    if not ok:
        sys.exit("xattr: " + what)

def err(f, *a, **k):
    try:
        f(*a, **k)
    except OSError as e:
        return e.errno
    return 0

for d in sys.argv[1:]:
    p, q = os.path.join(d, "px-a"), os.path.join(d, "px-b")
    for f in (p, q):
        with open(f, "w") as fh:
            fh.write(f + "\n")
    os.setxattr(p, "user.one", b"1")
    os.setxattr(p, "user.empty", b"")
    os.setxattr(p, "trusted.t", b"tv")
    os.setxattr(p, "security.s", b"sv")
    names = sorted(os.listxattr(p))
    check(names == ["security.s", "trusted.t", "user.empty", "user.one"], f"{d}: listxattr {names}")
    check(os.getxattr(p, "user.one") == b"1", f"{d}: getxattr")
    check(os.getxattr(p, "user.empty") == b"", f"{d}: empty value")
    check(err(os.setxattr, p, "user.one", b"x", os.XATTR_CREATE) == errno.EEXIST, f"{d}: XATTR_CREATE")
    check(err(os.setxattr, p, "user.new", b"x", os.XATTR_REPLACE) == errno.ENODATA, f"{d}: XATTR_REPLACE")
    check(err(os.getxattr, p, "user.none") == errno.ENODATA, f"{d}: missing")
    check(err(os.setxattr, p, "bogus.x", b"x") == errno.EOPNOTSUPP, f"{d}: unknown namespace")
    check(err(os.setxattr, p, "user." + "n" * 251, b"x") == errno.ERANGE, f"{d}: long name")
    check(err(os.setxattr, p, "user.big", b"x" * 65537) == errno.E2BIG, f"{d}: big value")
    os.symlink("px-a", os.path.join(d, "px-l"))
    check(err(os.setxattr, os.path.join(d, "px-l"), "user.l", b"x", 0, follow_symlinks=False) == errno.EPERM,
          f"{d}: user. on a symlink")
    os.unlink(os.path.join(d, "px-l"))
    with open(p, "rb") as fh:
        os.setxattr(fh.fileno(), "user.fd", b"by fd")
        check(os.getxattr(fh.fileno(), "user.fd") == b"by fd", f"{d}: fgetxattr")
    shutil.copystat(p, q)
    names = sorted(os.listxattr(q))
    check(names == ["security.s", "trusted.t", "user.empty", "user.fd", "user.one"], f"{d}: copystat {names}")
    os.removexattr(p, "user.one")
    check(err(os.removexattr, p, "user.one") == errno.ENODATA, f"{d}: removed twice")
    check("user.one" not in os.listxattr(p), f"{d}: still listed")
    os.unlink(p)
    os.unlink(q)
print("python3 xattrs ok on", len(sys.argv) - 1, "file systems")
'

t_xattr() {
    local X="$W/xattr" S=/dev/shm/um-xattr want
    rm -rf "$X" "$S" && mkdir -p "$X" "$S" || return 1
    python3 -c "$XATTR_PY" "$X" "$S" || fail "python3 xattr checks failed" || return 1
    echo data >"$X/a" || return 1
    python3 -c 'import os; os.setxattr("'"$X"'/a", "user.mime_type", b"text/plain"); os.setxattr("'"$X"'/a", "trusted.md5", b"abc")' ||
        fail "setting attributes failed" || return 1
    want="trusted.md5=abc user.mime_type=text/plain"
    want "attributes of a" "$(xattrs_of "$X/a")" "$want" || return 1
    cp -a "$X/a" "$X/b" && want "cp -a (hostfs)" "$(xattrs_of "$X/b")" "$want" || return 1
    cp -a "$X/a" "$S/b" && want "cp -a (to tmpfs)" "$(xattrs_of "$S/b")" "$want" || return 1
    cp -a "$S/b" "$X/c" && want "cp -a (from tmpfs)" "$(xattrs_of "$X/c")" "$want" || return 1
    cp --preserve=xattr "$X/a" "$X/d" && want "cp --preserve=xattr" "$(xattrs_of "$X/d")" "$want" || return 1
    cp "$X/a" "$X/e" && want "plain cp" "$(xattrs_of "$X/e")" "" || return 1
    mv "$X/b" "$X/moved" && want "mv" "$(xattrs_of "$X/moved")" "$want" || return 1
    mv "$X/moved" "$S/moved" && want "mv to tmpfs" "$(xattrs_of "$S/moved")" "$want" || return 1
    mkdir "$X/t" && cp -a "$X/a" "$X/t/" && tar --xattrs --xattrs-include='*' -C "$X" -cf "$W/x.tar" t ||
        fail "tar --xattrs c failed" || return 1
    mkdir "$X/u" && tar --xattrs --xattrs-include='*' -C "$X/u" -xf "$W/x.tar" || fail "tar --xattrs x failed" || return 1
    want "tar --xattrs" "$(xattrs_of "$X/u/t/a")" "$want" || return 1
    echo "cp -a, mv, tar --xattrs keep: $want"
    rm -rf "$S"
}

t_gcc() {
    gcc --version | head -n 1
    gcc -O2 -pthread -o "$W/prog" "$D/prog.c" -lm || fail "gcc failed" || return 1
    "$W/prog" >"$W/prog.out" || fail "the compiled program failed (status $?)" || return 1
    cat "$W/prog.out"
    diff "$D/prog.expected" "$W/prog.out" || fail "its output differs from the host's (< host, > guest)" || return 1
}

t_apt() {
    local P="$W/pkg" deb="$W/umtest_1.0_all.deb"
    mkdir -p "$P/DEBIAN" "$P/usr/bin" "$P/usr/share/umtest" || return 1
    printf '#!/bin/sh\necho umtest-ran "$@"\n' >"$P/usr/bin/umtest" && chmod 755 "$P/usr/bin/umtest"
    echo "hello from umtest" >"$P/usr/share/umtest/hello"
    echo owned >"$P/usr/share/umtest/owned" && chown nobody:nogroup "$P/usr/share/umtest/owned"
    cat >"$P/DEBIAN/control" <<'EOF'
Package: umtest
Version: 1.0
Architecture: all
Maintainer: um <um@example.org>
Depends: bash
Description: the Debian gate's test package
EOF
    printf '#!/bin/sh\nset -e\necho postinst "$1" >/usr/share/umtest/postinst-ran\n' >"$P/DEBIAN/postinst"
    printf '#!/bin/sh\nset -e\nrm -f /usr/share/umtest/postinst-ran\n' >"$P/DEBIAN/postrm"
    chmod 755 "$P/DEBIAN/postinst" "$P/DEBIAN/postrm"
    dpkg-deb --build "$P" "$deb" || fail "dpkg-deb --build failed" || return 1
    dpkg-deb --contents "$deb" | grep -q '^-rw-r--r-- nobody/nogroup .* ./usr/share/umtest/owned$' ||
        fail "dpkg-deb --contents does not show ./usr/share/umtest/owned as nobody/nogroup" || return 1
    want "dpkg-deb --field Package" "$(dpkg-deb --field "$deb" Package)" umtest || return 1
    apt-get install -y "$deb" || fail "apt-get install $deb failed" || return 1
    want "dpkg -s umtest Status" "$(dpkg -s umtest | sed -n 's/^Status: //p')" "install ok installed" || return 1
    dpkg -l umtest | grep -q '^ii  umtest *1.0 ' || fail "dpkg -l umtest does not show it installed" || return 1
    want "running the installed /usr/bin/umtest" "$(umtest x)" "umtest-ran x" || return 1
    want "installed file" "$(cat /usr/share/umtest/hello)" "hello from umtest" || return 1
    want "owner of the installed file" "$(stat -c '%U:%G' /usr/share/umtest/owned)" nobody:nogroup || return 1
    want "postinst" "$(cat /usr/share/umtest/postinst-ran)" "postinst configure" || return 1
    dpkg -L umtest | grep -qx /usr/bin/umtest || fail "dpkg -L umtest does not list /usr/bin/umtest" || return 1
    apt-get purge -y umtest || fail "apt-get purge umtest failed" || return 1
    [ ! -e /usr/bin/umtest ] && [ ! -e /usr/share/umtest ] || fail "files left after the purge" || return 1
    dpkg -s umtest 2>/dev/null | grep -q '^Status: install ok' && fail "umtest still installed after the purge" && return 1
    echo "apt-get installed and purged a .deb built in the guest"
}

if [ "${1:-}" = --steps ]; then
    picked=" $(echo "${2:-}" | tr "," " ") "
    for s in $picked; do
        case " $STEPS " in
        *" $s "*) ;;
        *)
            echo "debian-gate.sh: error: no step '$s' (steps: $STEPS)"
            exit 2
            ;;
        esac
    done
    chosen=""
    for s in $STEPS; do
        case "$picked" in *" $s "*) chosen="$chosen $s" ;; esac
    done
    STEPS=$chosen
    echo "steps:$STEPS"
fi

for s in $STEPS; do
    step "$s"
done

if [ -z "$FAILED" ]; then
    echo "UM-DEBIAN-OK"
    exit 0
fi
echo "UM-DEBIAN-FAILED:$FAILED"
exit 1
