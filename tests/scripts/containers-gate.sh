# Guest script of the containers gate (tests/tests/containers.rs), run by Debian's bash as init
# (root). The container's root is the Alpine tree the gate binds at /mnt (read-only in
# the container); state and bundles live on tmpfs. Each check prints a marker line.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t tmpfs tmpfs /tmp
mount -t sysfs sys /sys
mount -t cgroup2 none /sys/fs/cgroup
mount -t tmpfs tmpfs /run
for ns in pid net ipc uts cgroup mnt; do echo "HOST-NS $ns $(readlink /proc/self/ns/$ns)"; done

# The command the container runs: its view of pids, names, namespaces, root, /proc.
cat > /tmp/inside.sh <<'IN'
echo "CT-PID $$"
echo "CT-HOST $(hostname)"
for ns in pid net ipc uts cgroup mnt; do echo "CT-NS $ns $(readlink /proc/self/ns/$ns)"; done
echo "CT-CGROUP $(cat /proc/self/cgroup)"
echo "CT-ROOT-RO $(touch /x 2>&1 | sed 's/.*: //')"
echo "CT-PROCSYS-RO $( (echo x > /proc/sys/kernel/domainname) 2>&1 | sed 's/.*: //')"
echo "CT-LINKS $(ip -o link | awk -F': ' '{print $2}' | tr '\n' ' ')"
echo "CT-DEVNULL $(test -c /dev/null && echo char)"
echo "CT-PTS $(test -c /dev/pts/ptmx && echo ptmx)"
echo "CT-CAPEFF $(grep CapEff /proc/self/status | cut -f2)"
echo "CT-TMP $(touch /tmp/ok && echo writable)"
IN

# Points a `crun spec` config at the Alpine tree, read-only, running `sh SCRIPT` with its own
# /tmp and the script bound in read-only.
cat > /tmp/edit.py <<'PY'
import json, sys
host, script = sys.argv[1], sys.argv[2]
c = json.load(open("config.json"))
c["root"] = {"path": "/mnt", "readonly": True}
c["hostname"] = host
c["process"]["terminal"] = False
c["process"]["args"] = ["/bin/sh", script]
c["mounts"].append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev"]})
c["mounts"].append({"destination": script, "type": "bind", "source": script, "options": ["bind", "ro"]})
print(sys.argv[3], " ".join(sorted(n["type"] for n in c["linux"]["namespaces"])))
json.dump(c, open("config.json", "w"), indent=1)
PY

# As root.
mkdir -p /tmp/b && cd /tmp/b && crun spec
python3 /tmp/edit.py box /tmp/inside.sh NAMESPACES
crun --cgroup-manager=disabled run box1
echo "CRUN-RC $?"
echo "CRUN-LEFT $(crun list 2>/dev/null | tail -n +2 | wc -l)"

# Rootless: crun as uid 1000 (`crun spec --rootless`: a user namespace mapping it to root).
cat > /tmp/rootless.sh <<'IN'
echo "RL-PID $$"
echo "RL-ID $(id -u) $(id -g)"
echo "RL-MAP $(cat /proc/self/uid_map | tr -s ' ')"
echo "RL-HOST $(hostname)"
echo "RL-USERNS $(readlink /proc/self/ns/user)"
IN
mkdir -p /run/user/1000 /tmp/r && chown 1000:1000 /run/user/1000 /tmp/r && cd /tmp/r
U="setpriv --reuid 1000 --regid 1000 --clear-groups env XDG_RUNTIME_DIR=/run/user/1000 HOME=/tmp/r"
$U crun spec --rootless
$U python3 /tmp/edit.py rbox /tmp/rootless.sh RL-NAMESPACES
$U crun run r1 2>/dev/null
echo "ROOTLESS-RC $?"
echo "HOST-USERNS $(readlink /proc/self/ns/user)"
echo UM-CONTAINERS-DONE
