# Guest script of the mntns gate (tests/tests/mntns.rs), run by Debian's bash as init. The
# Alpine rootfs is bind-mounted read-only on /srv by the kernel command line; nothing is
# written outside tmpfs. Every check prints a marker the gate looks for.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t tmpfs tmpfs /tmp
cat /proc/self/mountinfo > /tmp/before
echo "NS-INIT $(readlink /proc/self/ns/mnt)"

# 1. A private namespace, a tmpfs with a small Alpine tree, pivot_root . old, umount -l /old.
unshare -m --propagation private sh -c '
  echo "NS-CHILD $(readlink /proc/self/ns/mnt)"
  mount -t tmpfs t /mnt && mkdir /mnt/lib /mnt/proc /mnt/old &&
  cp -a /srv/bin /srv/sbin /srv/usr /srv/etc /mnt/ &&
  cp -a /srv/lib/ld-musl-x86_64.so.1 /srv/lib/ld-musl-aarch64.so.1 /mnt/lib/ 2>/dev/null
  cp -a /srv/lib/libc.musl-*.so.1 /mnt/lib/ &&
  cd /mnt && pivot_root . old && echo PIVOTED &&
  umount -l /old && echo UMOUNTED &&
  echo "LS $(ls / | tr "\n" " ")" &&
  mount -t proc proc /proc &&
  echo BEGIN-CHILD-MI && cat /proc/self/mountinfo && echo END-CHILD-MI &&
  echo "CWD $(/bin/pwd -P)" && mkdir /etc/d && cd /etc/d &&
  echo "LINKS $(readlink /proc/self/cwd) $(readlink /proc/self/root)" && echo UM-PIVOT-OK'
cat /proc/self/mountinfo > /tmp/after
cmp /tmp/before /tmp/after && echo PARENT-UNCHANGED

# 2. pivot_root(".", ".") then umount2(".", MNT_DETACH) (pivot_root(2)'s example).
unshare -m sh -c 'mount -t tmpfs x /mnt && cd /mnt && mkdir bin lib &&
  cp -a /srv/bin/busybox bin/ && cp -a /srv/lib/ld-musl-*.so.1 lib/ &&
  pivot_root . . && /bin/busybox umount -l . &&
  echo "DOTLS $(/bin/busybox ls / | /bin/busybox tr "\n" " ")"'

# 3. Propagation (mount_namespaces(7)): a peer in another namespace, a slave, unbindable.
mkdir /tmp/S /tmp/Y /tmp/U /tmp/W /tmp/B
mount -t tmpfs s /tmp/S && mount --make-shared /tmp/S
unshare -m --propagation unchanged sh -c \
  'mkdir /tmp/S/a && mount -t tmpfs a /tmp/S/a && touch /tmp/S/a/from-child'
test -e /tmp/S/a/from-child && echo PEER-OK
mount -t tmpfs y /tmp/Y && mount --make-shared /tmp/Y
unshare -m --propagation unchanged sleep 60 &
P=$!
for i in $(seq 100); do
  [ "$(readlink /proc/$P/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] && break
  sleep 0.1
done
nsenter -t $P -m mount --make-slave /tmp/Y
nsenter -t $P -m grep ' /tmp/Y ' /proc/self/mountinfo | sed 's/^/SLAVE-MI /'
mkdir /tmp/Y/b && mount -t tmpfs b /tmp/Y/b && touch /tmp/Y/b/from-master
nsenter -t $P -m test -e /tmp/Y/b/from-master && echo SLAVE-RECEIVES-OK
nsenter -t $P -m sh -c 'mkdir /tmp/Y/c && mount -t tmpfs c /tmp/Y/c && touch /tmp/Y/c/from-slave &&
  test -e /tmp/Y/c/from-slave && echo SLAVE-HAS-OWN'
test -e /tmp/Y/c/from-slave || echo SLAVE-DOES-NOT-SEND-OK
kill $P
mount -t tmpfs u /tmp/U && mount --make-unbindable /tmp/U
mount --bind /tmp/S /tmp/B && mkdir /tmp/S/d && mount -t tmpfs d /tmp/S/d &&
  touch /tmp/S/d/f && test -e /tmp/B/d/f && echo BIND-PEER-OK
findmnt -n -o TARGET,FSTYPE,PROPAGATION /tmp/S | sed 's/^/FINDMNT /'
findmnt -n -o TARGET,PROPAGATION /tmp/U | sed 's/^/FINDMNT /'
grep -E ' /tmp/(S|B|U) ' /proc/self/mountinfo | sed 's/^/MI /'

# 4. Bind remount read-only (this mount only), rbind, move, the same directory bound twice.
mkdir /tmp/R /tmp/RB /tmp/MV /tmp/MV2 /tmp/T1 /tmp/T2
mount --bind /tmp/S /tmp/R && mount -o remount,bind,ro /tmp/R
touch /tmp/R/x 2>/dev/null || echo BIND-RO-EROFS
touch /tmp/S/y && test -e /tmp/R/y && echo BIND-RO-OTHER-RW
mount --rbind /tmp/S /tmp/RB && test -e /tmp/RB/d/f && echo RBIND-OK
mount -t tmpfs mv /tmp/MV && touch /tmp/MV/m && mount --move /tmp/MV /tmp/MV2 &&
  test -e /tmp/MV2/m && ! test -e /tmp/MV/m && echo MOVE-OK
mkdir /tmp/S/twice && mount --bind /tmp/S/twice /tmp/T1 && mount --bind /tmp/S/twice /tmp/T2
grep -E ' /tmp/T[12] ' /proc/self/mountinfo | sed 's/^/TWICE /'

# 5. Errnos, through the raw syscalls.
cat > /tmp/errnos.py <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
PIVOT = {"x86_64": 155, "aarch64": 41}[os.uname().machine]
def show(name, r):
    e = ctypes.get_errno() if r != 0 else 0
    print("ERRNO", name, "ok" if r == 0 else os.strerror(e))
def mount(src, dst, flags):
    return libc.mount(src.encode(), dst.encode(), None, ctypes.c_ulong(flags), None)
def pivot(a, b):
    return libc.syscall(PIVOT, a.encode(), b.encode())
if sys.argv[1] == "nobody":
    show("unshare-newns-nobody", libc.unshare(0x20000))
    sys.exit(0)
if sys.argv[1] == "unbindable":
    show("bind-unbindable", mount("/tmp/U", "/tmp/W", 4096))
    show("rbind-unbindable", mount("/tmp/U", "/tmp/W", 4096 | 16384))
    sys.exit(0)
os.makedirs("/tmp/P")
show("pivot-new-on-root-mount", pivot("/etc", "/etc"))
show("pivot-new-not-mount-root", pivot("/tmp/P", "/tmp/P"))
show("pivot-old-on-root", pivot("/tmp", "/"))
show("pivot-notdir", pivot("/etc/hostname", "/tmp"))
show("pivot-old-outside", pivot("/tmp", "/proc"))
os.makedirs("/tmp/E")
show("mount-e", libc.mount(b"e", b"/tmp/E", b"tmpfs", ctypes.c_ulong(0), None))
os.makedirs("/tmp/E/sub")
show("mount-sub", libc.mount(b"s", b"/tmp/E/sub", b"tmpfs", ctypes.c_ulong(0), None))
show("umount-busy", libc.umount2(b"/tmp/E", 0))
show("umount-not-mount", libc.umount2(b"/etc", 0))
show("expire-1", libc.umount2(b"/tmp/E/sub", 4))
show("expire-2", libc.umount2(b"/tmp/E/sub", 4))
show("umount-now", libc.umount2(b"/tmp/E", 0))
# mount_setattr(2): read-only and shared on /tmp/E (recursively), a bad atime word, no-op.
NR_SETATTR = 442
show("mount-e2", libc.mount(b"e", b"/tmp/E", b"tmpfs", ctypes.c_ulong(0), None))
attr = (ctypes.c_uint64 * 4)(1, 0, 1 << 20, 0)
show("setattr-ro-shared", libc.syscall(NR_SETATTR, -100, b"/tmp/E", 0x8000, attr, 32))
try:
    open("/tmp/E/x", "w").close()
    print("ERRNO setattr-write ok")
except OSError as e:
    print("ERRNO setattr-write", os.strerror(e.errno))
for l in open("/proc/self/mountinfo"):
    if " /tmp/E " in l:
        print("SETATTR-MI", " ".join(l.split()[5:7]))
bad = (ctypes.c_uint64 * 4)(0x10, 0, 0, 0)
show("setattr-atime-without-clr", libc.syscall(NR_SETATTR, -100, b"/tmp/E", 0, bad, 32))
show("setattr-small", libc.syscall(NR_SETATTR, -100, b"/tmp/E", 0, attr, 16))
show("setattr-not-mount-root", libc.syscall(NR_SETATTR, -100, b"/etc", 0, attr, 32))
PY
python3 /tmp/errnos.py unbindable
unshare -m --propagation private python3 /tmp/errnos.py root
setpriv --reuid=65534 --regid=65534 --clear-groups python3 /tmp/errnos.py nobody
setpriv --reuid=65534 --regid=65534 --clear-groups unshare -m true 2>&1 | sed 's/^/UNPRIV /'
# The new mount API (open_tree, move_mount, fsopen, fsconfig, fsmount; mount_setattr on a
# detached mount), with raw errnos: in a private namespace as root, and refused for nobody.
cat > /tmp/newapi.py <<'PY'
import ctypes, os, stat, sys
libc = ctypes.CDLL(None, use_errno=True)
OPEN_TREE, MOVE_MOUNT, FSOPEN, FSCONFIG, FSMOUNT, SETATTR = 428, 429, 430, 431, 432, 442
AT_FDCWD, AT_EMPTY_PATH, AT_RECURSIVE = -100, 0x1000, 0x8000
CLONE, F_EMPTY = 1, 4
def res(name, r):
    print("NEWAPI", name, r if r >= 0 else os.strerror(ctypes.get_errno()))
    return r
def sc(*a):
    return libc.syscall(*a)
def mountinfo(path):
    for l in open("/proc/self/mountinfo"):
        f = l.split()
        if f[4] == path:
            return f[3] + " " + f[5].split(",")[0] + ("," + ",".join(o for o in f[5].split(",")[1:] if o in ("nodev", "nosuid", "noexec")) if any(o in f[5] for o in ("nodev","nosuid","noexec")) else "")
    return "none"
if sys.argv[1] == "nobody":
    res("clone-nobody", sc(OPEN_TREE, AT_FDCWD, b"/tmp", CLONE))
    res("fsopen-nobody", sc(FSOPEN, b"tmpfs", 0))
    sys.exit(0)
# A tree on tmpfs with a submount, cloned recursively and attached elsewhere.
os.makedirs("/tmp/N/src", exist_ok=True)
libc.mount(b"n", b"/tmp/N/src", b"tmpfs", ctypes.c_ulong(0), None)
os.mkdir("/tmp/N/src/sub"); os.mkdir("/tmp/N/a"); os.mkdir("/tmp/N/b"); os.mkdir("/tmp/N/c")
libc.mount(b"nsub", b"/tmp/N/src/sub", b"tmpfs", ctypes.c_ulong(0), None)
open("/tmp/N/src/sub/f", "w").write("in-sub")
fd = sc(OPEN_TREE, AT_FDCWD, b"/tmp/N/src", CLONE | AT_RECURSIVE)
res("clone", 0 if fd >= 0 else fd)
print("NEWAPI clone-fd-link", os.readlink("/proc/self/fd/%d" % fd))
print("NEWAPI clone-unattached", mountinfo("/tmp/N/a"))
res("move-clone", sc(MOVE_MOUNT, fd, b"", AT_FDCWD, b"/tmp/N/a", F_EMPTY))
print("NEWAPI attached", mountinfo("/tmp/N/a") != "none", open("/tmp/N/a/sub/f").read())
open("/tmp/N/src/new", "w").write("shared")
print("NEWAPI same-fs", open("/tmp/N/a/new").read())
res("move-again", sc(MOVE_MOUNT, fd, b"", AT_FDCWD, b"/tmp/N/b", F_EMPTY))
print("NEWAPI moved", mountinfo("/tmp/N/a"), mountinfo("/tmp/N/b") != "none")
# fsopen/fsconfig/fsmount: a tmpfs with mode 0700, nodev, made read-only by mount_setattr
# on the detached descriptor before it is attached.
cfd = sc(FSOPEN, b"tmpfs", 0)
res("fsopen", 0 if cfd >= 0 else cfd)
print("NEWAPI fsopen-link", os.readlink("/proc/self/fd/%d" % cfd))
res("fsmount-early", sc(FSMOUNT, cfd, 0, 0))
res("fsconfig-mode", sc(FSCONFIG, cfd, 1, b"mode", b"0700", 0))
res("fsconfig-flag-value", sc(FSCONFIG, cfd, 0, b"ro", b"x", 0))
res("fsconfig-create", sc(FSCONFIG, cfd, 6, None, None, 0))
res("fsconfig-create-again", sc(FSCONFIG, cfd, 6, None, None, 0))
mfd = sc(FSMOUNT, cfd, 0, 4)
res("fsmount", 0 if mfd >= 0 else mfd)
res("fsmount-again", sc(FSMOUNT, cfd, 0, 4))
attr = (ctypes.c_uint64 * 4)(1, 0, 0, 0)
res("setattr-detached", sc(SETATTR, mfd, b"", AT_EMPTY_PATH, attr, 32))
res("move-fsmount", sc(MOVE_MOUNT, mfd, b"", AT_FDCWD, b"/tmp/N/c", F_EMPTY))
print("NEWAPI fsmount-mode", oct(stat.S_IMODE(os.stat("/tmp/N/c").st_mode)), mountinfo("/tmp/N/c"))
try:
    open("/tmp/N/c/x", "w")
    print("NEWAPI fsmount-write ok")
except OSError as e:
    print("NEWAPI fsmount-write", os.strerror(e.errno))
# Refusals.
res("recursive-without-clone", sc(OPEN_TREE, AT_FDCWD, b"/tmp", AT_RECURSIVE))
res("open-tree-bad-flag", sc(OPEN_TREE, AT_FDCWD, b"/tmp", 0x40))
res("fsopen-unknown", sc(FSOPEN, b"nosuchfs", 0))
res("fsconfig-not-context", sc(FSCONFIG, 0, 6, None, None, 0))
res("move-bad-flag", sc(MOVE_MOUNT, AT_FDCWD, b"/tmp/N/b", AT_FDCWD, b"/tmp/N/a", 0x1000))
plain = sc(OPEN_TREE, AT_FDCWD, b"/tmp/N/b", 0)
print("NEWAPI plain-is-path", plain >= 0 and os.readlink("/proc/self/fd/%d" % plain))
PY
unshare -m --propagation private python3 /tmp/newapi.py root
setpriv --reuid=65534 --regid=65534 --clear-groups python3 /tmp/newapi.py nobody
echo UM-MNTNS-DONE
