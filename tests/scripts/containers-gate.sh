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

mkdir -p /tmp/b && cd /tmp/b && crun spec
python3 - <<'PY'
import json
c = json.load(open("config.json"))
c["root"] = {"path": "/mnt", "readonly": True}
c["hostname"] = "box"
c["process"]["terminal"] = False
c["process"]["args"] = ["/bin/sh", "/tmp/inside.sh"]
# The script comes in by a read-only bind; /tmp in the container is its own tmpfs.
c["mounts"].append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev"]})
c["mounts"].append({"destination": "/tmp/inside.sh", "type": "bind", "source": "/tmp/inside.sh", "options": ["bind", "ro"]})
print("NAMESPACES", " ".join(sorted(n["type"] for n in c["linux"]["namespaces"])))
json.dump(c, open("config.json", "w"), indent=1)
PY
crun --cgroup-manager=disabled run box1
echo "CRUN-RC $?"
echo "CRUN-LEFT $(crun list 2>/dev/null | tail -n +2 | wc -l)"

# The same bundle with cgroups on (crun's default): its device rules are a BPF program on the
# container's cgroup. $1 prefixes the lines. The container's /tmp here allows device nodes
# (no nodev), so opening the disk node is refused by the program, not by the mount.
cat > /tmp/dev.sh <<'IN'
echo "$1-CGROUP $(cat /proc/self/cgroup)"
echo "$1-ZERO $(head -c1 /dev/zero | wc -c)"
echo "$1-MKNOD $(mknod /tmp/sda b 8 0 2>&1 && echo made)"
echo "$1-OPEN $(head -c1 /tmp/sda 2>&1 | sed 's/.*: //')"
IN
mkdir -p /tmp/c && cp /tmp/b/config.json /tmp/c/ && cd /tmp/c
python3 - <<'PY'
import json
c = json.load(open("config.json"))
c["process"]["args"] = ["/bin/sh", "/tmp/dev.sh", "CRUN-CG"]
c["mounts"] = [m for m in c["mounts"] if m["destination"] not in ("/tmp", "/tmp/inside.sh")]
c["mounts"].append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"]})
c["mounts"].append({"destination": "/tmp/dev.sh", "type": "bind", "source": "/tmp/dev.sh", "options": ["bind", "ro"]})
json.dump(c, open("config.json", "w"), indent=1)
PY
crun run box2
echo "CRUN-CG-RC $?"
echo "CRUN-CG-LEFT $(ls -d /sys/fs/cgroup/box2 2>/dev/null | wc -l)"
echo UM-CONTAINERS-DONE
