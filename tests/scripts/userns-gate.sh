# Guest script of the userns gate (tests/tests/userns.rs), run by Debian's bash as init (root).
# Nothing is written outside tmpfs and procfs. Every check prints a marker line the gate looks
# for; the unprivileged parts run as uid/gid 1000 through setpriv.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t tmpfs tmpfs /tmp
chmod 1777 /tmp
U="setpriv --reuid 1000 --regid 1000 --clear-groups"

echo "INIT-MAP $(cat /proc/self/uid_map | tr -s ' ')"
echo "INIT-NS $(readlink /proc/self/ns/user)"

# 1. unshare -U -r: uid 0 inside; without a map the overflow id, and no capabilities after exec.
echo "ROOT-ID $($U unshare -U -r id)"
echo "NOMAP-ID $($U unshare -U id -u) $($U unshare -U id -g)"
echo "NOMAP-CAPEFF $($U unshare -U grep CapEff /proc/self/status | cut -f2)"
echo "MAPPED-CAPEFF $($U unshare -Ur grep CapEff /proc/self/status | cut -f2)"
echo "MAPPED-STATUS-UID $($U unshare -Ur grep Uid: /proc/self/status | tr '\t' ' ')"
echo "CHILD-NS $($U unshare -Ur readlink /proc/self/ns/user)"
# Read from inside, the maps show the parent's ids; from outside too (the reader's view).
echo "INSIDE-MAP $($U unshare -Ur cat /proc/self/uid_map | tr -s ' ')"
echo "INSIDE-GMAP $($U unshare -Ur cat /proc/self/gid_map | tr -s ' ')"
echo "INSIDE-SETGROUPS $($U unshare -Ur cat /proc/self/setgroups)"

# 2. A mount namespace owned by the new user namespace: tmpfs, files shown through the map,
# files of unmapped owners as 65534.
$U unshare -Urm sh -c 'mount -t tmpfs t /mnt && touch /mnt/x && echo "LSMNT $(ls -ln /mnt | tail -n +2 | tr -s " " | cut -d" " -f3,4,9)"
  echo "UNMAPPED-FILE $(stat -c "%u %g" /etc/passwd)"
  echo "CHOWN-UNMAPPED $(chown 5 /mnt/x 2>&1 | sed "s/.*: //")"'
# Not owner of the initial mount namespace: mount is EPERM without a new one.
echo "NOMNTNS $($U unshare -Ur mount -t tmpfs t /mnt 2>&1 | sed 's/.*: //' | head -1)"
# UTS: sethostname needs CAP_SYS_ADMIN over the UTS namespace's owner.
echo "UTS-OWN $($U unshare -Uru sh -c 'hostname inner && hostname')"
echo "UTS-INIT $($U unshare -Ur hostname inner 2>&1 | sed 's/.*: //')"
echo "HOSTNAME-AFTER $(hostname)"
# Network: a new namespace's lo is down.
echo "NET $($U unshare -Urn ip -o link | grep -o '^1: lo: <LOOPBACK> .* state [A-Z]*' | sed 's/ mtu.*state / /')"

# 3. setns(2) into a user namespace (nsenter -U) as its owner.
$U unshare -Ur sleep 5 &
SLEEPER=$!
sleep 1
echo "SETNS-ID $($U nsenter -U -t $SLEEPER --preserve-credentials id -u)"
# The nsfs ioctls (ioctl_ns(2)) on its user namespace file, from outside and from inside:
# type, owner uid, parent (EPERM when outside the caller's view), NS_GET_USERNS of the
# initial namespace (EPERM: it has no owner).
cat > /tmp/nsioctl.py <<'EOF'
import errno, fcntl, os, struct, sys
def call(fd, req, arg=0):
    try:
        return fcntl.ioctl(fd, req, arg)
    except OSError as e:
        return errno.errorcode[e.errno]
fd = os.open(sys.argv[1], os.O_RDONLY)
r = call(fd, 0xb702)
parent = os.readlink("/proc/self/fd/%d" % r) if isinstance(r, int) else r
owner = call(fd, 0xb704, b"\0" * 4)
owner = struct.unpack("I", owner)[0] if isinstance(owner, bytes) else owner
u = call(fd, 0xb701)
print(sys.argv[2], hex(call(fd, 0xb703)), owner, parent, "fd" if isinstance(u, int) else u)
EOF
$U python3 /tmp/nsioctl.py /proc/$SLEEPER/ns/user NSIOCTL-OUT
$U nsenter -U -t $SLEEPER --preserve-credentials python3 /tmp/nsioctl.py /proc/self/ns/user NSIOCTL-IN
$U python3 /tmp/nsioctl.py /proc/self/ns/user NSIOCTL-INIT
kill $SLEEPER 2>/dev/null
wait 2>/dev/null

# 4. The uid_map/gid_map/setgroups rules and the nesting limit, with raw errnos.
cat > /tmp/rules.py <<'EOF'
import ctypes, errno, os, threading, time
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER = 0x10000000

def unshare():
    if libc.unshare(CLONE_NEWUSER) != 0:
        return errno.errorcode[ctypes.get_errno()]
    return "ok"

def write(path, text):
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as e:
        return errno.errorcode[e.errno]
    try:
        os.write(fd, text.encode())
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
    finally:
        os.close(fd)

def outer_maps(uid, gid):
    a = write("/proc/self/setgroups", "deny")
    b = write("/proc/self/uid_map", "0 %d 1\n" % uid)
    c = write("/proc/self/gid_map", "0 %d 1\n" % gid)
    return a, b, c

# Threads: unshare(CLONE_NEWUSER) is EINVAL (in a child, so this process stays single).
pid = os.fork()
if pid == 0:
    t = threading.Thread(target=time.sleep, args=(2,))
    t.start()
    print("THREADED", unshare(), flush=True)
    os._exit(0)
os.waitpid(pid, 0)

print("UNSHARE", unshare())
print("UID-BEFORE", os.getuid())
print("BAD-ZERO", write("/proc/self/uid_map", "0 1000 0\n"))
print("BAD-TWO-FIELDS", write("/proc/self/uid_map", "0 1000\n"))
print("OTHER-ID", write("/proc/self/uid_map", "0 0 1\n"))
print("RANGE", write("/proc/self/uid_map", "0 1000 2\n"))
print("UID-MAP", write("/proc/self/uid_map", "0 1000 1\n"))
print("UID-MAP-AGAIN", write("/proc/self/uid_map", "0 1000 1\n"))
print("GID-MAP-NODENY", write("/proc/self/gid_map", "0 1000 1\n"))
print("SETGROUPS-BAD", write("/proc/self/setgroups", "maybe"))
print("DENY", write("/proc/self/setgroups", "deny"))
print("GID-MAP", write("/proc/self/gid_map", "0 1000 1\n"))
print("ALLOW-AFTER", write("/proc/self/setgroups", "allow"))
print("DENY-AFTER-MAP", write("/proc/self/setgroups", "deny"))
print("IDS", os.getuid(), os.geteuid(), os.getgid(), os.getegid())
try:
    os.setuid(5)
    print("SETUID-UNMAPPED ok")
except OSError as e:
    print("SETUID-UNMAPPED", errno.errorcode[e.errno])
try:
    os.setgroups([0])
    print("SETGROUPS-DENIED ok")
except OSError as e:
    print("SETGROUPS-DENIED", errno.errorcode[e.errno])
print("MAP-READ", " ".join(open("/proc/self/uid_map").read().split()))

# Nesting: each level maps its creator's uid 0 (the one below); parents deeper than 32
# cannot have children.
levels = 1
while True:
    r = unshare()
    if r != "ok":
        break
    levels += 1
    if outer_maps(0, 0) != ("ok", "ok", "ok"):
        print("NEST-MAPS-FAIL", outer_maps(0, 0))
        break
print("NEST", levels, r)
EOF
$U python3 /tmp/rules.py

# 5. max_user_namespaces: only root writes it, and it is enforced.
echo "LIMIT $(cat /proc/sys/user/max_user_namespaces)"
echo "LIMIT-USER $($U sh -c 'echo 5 > /proc/sys/user/max_user_namespaces' 2>&1 | sed 's/.*: //')"
OLD=$(cat /proc/sys/user/max_user_namespaces)
echo 0 > /proc/sys/user/max_user_namespaces
echo "LIMIT-ZERO $($U unshare -U true 2>&1 | sed 's/.*: //')"
echo "$OLD" > /proc/sys/user/max_user_namespaces
echo "OVERFLOWUID $(cat /proc/sys/kernel/overflowuid)"

# 6. cgroup namespaces (cgroup_namespaces(7)): paths relative to the namespace root, a group
# outside it as /.., moves out of it ENOENT, a cgroup2 mount inside rooted at its group, and
# unprivileged with a user namespace (cgroup2 is FS_USERNS_MOUNT).
mkdir -p /sys && mount -t sysfs sys /sys && mount -t cgroup2 none /sys/fs/cgroup
mkdir -p /sys/fs/cgroup/a/b /sys/fs/cgroup/c
sleep 30 &
ROOTSLEEPER=$!
echo $$ > /sys/fs/cgroup/a/cgroup.procs
echo "CG-OUTSIDE $(cat /proc/self/cgroup)"
echo "CG-INITNS $(readlink /proc/self/ns/cgroup)"
unshare -C sh -c '
echo "CG-INSIDE $(cat /proc/self/cgroup)"
echo "CG-NEWNS $(readlink /proc/self/ns/cgroup)"
echo "CG-ROOTPROC $(cat /proc/'$ROOTSLEEPER'/cgroup)"
echo "CG-MOVE-OUT $(/bin/echo $$ 2>&1 > /sys/fs/cgroup/c/cgroup.procs | sed "s/.*: //")"
echo $$ > /sys/fs/cgroup/a/b/cgroup.procs && echo "CG-MOVED $(cat /proc/self/cgroup)"
unshare -m sh -c "mount -t cgroup2 none /mnt && echo CG-MNT \$(ls -d /mnt/b) \$(grep -c -x \$\$ /mnt/b/cgroup.procs) \$(awk \"\\\$5 == \\\"/mnt\\\" {print \\\$4}\" /proc/self/mountinfo)"
'
kill $ROOTSLEEPER
echo "CG-UNPRIV $($U unshare -UrmC sh -c 'cat /proc/self/cgroup; mount -t cgroup2 none /mnt && test -e /mnt/cgroup.procs && echo mounted')" | tr '\n' ' '
echo
echo "CG-NOPRIV $($U unshare -C true 2>&1 | sed 's/.*: //')"
echo "CG-SETNS $(unshare -C sh -c 'readlink /proc/self/ns/cgroup > /tmp/cgns; sleep 5' & sleep 1; nsenter -C -t $! sh -c 'test "$(readlink /proc/self/ns/cgroup)" = "$(cat /tmp/cgns)" && cat /proc/self/cgroup')"
echo $$ > /sys/fs/cgroup/cgroup.procs

# 7. bubblewrap, as an unprivileged user (issue 23, test 3).
$U bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp true && echo BWRAP-TRUE-OK
echo "BWRAP-IN $($U bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp \
  sh -c 'echo $(id -u) $(ls -A /tmp | wc -l) $(readlink /proc/self/ns/user) $(cat /proc/self/uid_map | tr -s " ")')"
echo UM-USERNS-DONE
