#!/bin/sh
# The LTP run inside qemu-system-aarch64 (tools/ltp/run --arch aarch64 boots it): busybox sh on
# the Alpine aarch64 minirootfs of the initramfs, started by its /init. It runs every test of
# /opt/ltp-run/tests.txt (`name command args` lines) natively (the emulated machine's own
# Debian arm64 kernel, in a chroot of the Alpine rootfs with a private mount namespace, as
# tools/ltp/run --native does on the host) and under the aarch64 `linux` (/opt/um/linux) in each
# engine, each test from a scratch directory under a timeout, one boot of `linux` per test, and
# reports on the console (the host parses it; lines of two jobs never interleave: each test's
# report is printed under a lock):
#   LTP-PLAN <engines> <tests>
#   LTP-O <label> <test>| <console line>      the test's console output
#   LTP-K <label> <test>| <kernel-log line>   linux's kernel log (stderr)
#   LTP-T <label> <test> <exit status|TIMEOUT> <seconds> <attempt>
#   LTP-LEFT <label> <n> <ps lines>           host processes left behind after an engine's run
#   LTP-DONE
# Knobs from the kernel command line:
#   ltp.engines=native,seccomp=on,seccomp=off+nosysemu   engines, '+' between one's options
#   ltp.jobs=2          tests at once
#   ltp.timeout=180     the guest's `timeout` per test (LTP_TIMEOUT_MUL scales LTP's own)
#   ltp.mul=3           LTP_TIMEOUT_MUL: TCG runs code several times slower than a real CPU
#   ltp.retry=0|1       run a failing test once more (the gate: a regression fails twice)
#   ltp.mem=1G          linux mem= (getrusage03 wants 512 MB available)
#   ltp.testmem=T:M,... linux mem= for these tests instead (tools/ltp/run's TEST_MEM)

ENGINES=native
JOBS=2
TMO=180
MUL=3
RETRY=0
MEM=1G
TESTMEM=
for w in $(cat /proc/cmdline); do
    case "$w" in
    ltp.engines=*) ENGINES="${w#ltp.engines=}" ;;
    ltp.jobs=*) JOBS="${w#ltp.jobs=}" ;;
    ltp.timeout=*) TMO="${w#ltp.timeout=}" ;;
    ltp.mul=*) MUL="${w#ltp.mul=}" ;;
    ltp.retry=*) RETRY="${w#ltp.retry=}" ;;
    ltp.mem=*) MEM="${w#ltp.mem=}" ;;
    ltp.testmem=*) TESTMEM="${w#ltp.testmem=}" ;;
    esac
done
ENGINES=$(echo "$ENGINES" | tr ',' ' ')
LIST=/opt/ltp-run/tests.txt
R=/tmp/ltp-reports
mkdir -p $R

echo "LTP: machine $(uname -r) $(uname -m), $(grep -c ^processor /proc/cpuinfo) cpus, $(awk '/^MemTotal/ { printf "%d MB", $2 / 1024 }' /proc/meminfo)"
echo "LTP-PLAN $(echo $ENGINES | tr ' ' ',') $(grep -c . $LIST)"

# The machine as the host's native runs see theirs: the loopback interface up, loop devices
# (LTP's tests that need a block device), the kernel's configuration where LTP looks for it.
ip link set lo up
insmod /opt/um/loop.ko 2>/dev/null

# Two roots, as on the host: build/ltp-root-native-ARCH and build/ltp-root-linux-ARCH. The LTP
# binaries are hard links of /opt/ltp-bin (one copy in RAM); /opt/ltp/testcases/bin leads back
# to /opt/ltp (LTP copies helper binaries from $LTPROOT/testcases/bin, lib/tst_resource.c).
for root in /ltp/native /ltp/linux; do
    mkdir -p $root
    tar xzf /opt/um/alpine.tar.gz -C $root
    cp -al /opt/ltp-bin $root/opt/ltp
    mkdir -p $root/opt/ltp/testcases $root/ltp-run
    ln -s .. $root/opt/ltp/testcases/bin
done
mkdir -p /ltp/native/boot
cp /opt/um/kernel-config /ltp/native/boot/config-$(uname -r)

# The per-test script, the same in both roots (tools/ltp/run's guest_script; under linux the
# mounts come first, as its with_mounts does).
write_script() { # root name linux(0|1) command args...
    root=$1 name=$2 mounts=$3
    shift 3
    {
        echo '#!/bin/sh'
        [ "$mounts" = 1 ] && echo 'mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t tmpfs tmp /tmp; mount -t devtmpfs dev /dev 2>/dev/null'
        echo "export PATH=/opt/ltp:/usr/sbin:/usr/bin:/sbin:/bin TMPDIR=/tmp LTPROOT=/opt/ltp LTP_COLORIZE_OUTPUT=0 LTP_TIMEOUT_MUL=$MUL"
        echo "d=\$(mktemp -d) && cd \"\$d\" && timeout $TMO /opt/ltp/$*; rc=\$?; cd /; rm -rf \"\$d\"; echo LTP-EXIT=\$rc"
    } >$root/ltp-run/$name.sh
}

now() { awk '{ print $1 }' /proc/uptime; }

# run_one LABEL OPTS NAME: one test, its report printed under the lock.
run_one() {
    label=$1 opts=$2 name=$3
    out=$R/$label.$name.out
    klog=$R/$label.$name.klog
    attempt=1
    while :; do
        t0=$(now)
        : >$klog
        if [ "$label" = native ]; then
            timeout -s KILL $((TMO + 60)) unshare -m --propagation private /bin/sh -c \
                'R=/ltp/native; mount -t proc proc $R/proc && mount -t sysfs sys $R/sys &&
                 mount --rbind /dev $R/dev && mount -t tmpfs tmp $R/tmp &&
                 exec env -i HOME=/root TERM=linux /usr/sbin/chroot $R /bin/busybox sh /ltp-run/'"$name"'.sh' \
                </dev/null >$out 2>&1
        else
            mem=$MEM
            for tm in $(echo "$TESTMEM" | tr ',' ' '); do
                [ "${tm%%:*}" = "$name" ] && mem=${tm#*:}
            done
            timeout -s KILL $((TMO + 60)) /opt/um/linux mem=$mem rootfstype=hostfs \
                rootflags=/ltp/linux rw init=/bin/busybox con0=fd:0,fd:1 eth0=user,restrict=loopback \
                $(echo "$opts" | tr '+' ' ') \
                -- sh /ltp-run/$name.sh </dev/null >$out 2>$klog
        fi
        rc=$?
        secs=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
        code=$(sed -n 's/.*LTP-EXIT=\([0-9]*\).*/\1/p' $out | tail -1)
        [ -n "$code" ] || code=NOEXIT
        [ $rc = 137 ] && code=TIMEOUT
        if [ "$code" = 0 ] || [ "$code" = 32 ] || [ "$RETRY" = 0 ] || [ $attempt = 2 ]; then
            break
        fi
        attempt=2
    done
    flock $R/lock sh -c '
        tr -d "\r" <"$1" | sed "s/^/LTP-O $2 $3| /"
        tr -d "\r" <"$4" | sed "s/^/LTP-K $2 $3| /"
        echo "LTP-T $2 $3 $5 $6 $7"' sh "$out" "$label" "$name" "$klog" "$code" "$secs" "$attempt"
    rm -f "$out" "$klog"
}

for engine in $ENGINES; do
    label=$(echo "$engine" | tr '+' '_')
    # The scripts: natively without the mounts (the chroot wrapper makes them), else with them.
    while read -r name cmd; do
        [ -n "$name" ] || continue
        write_script /ltp/native "$name" 0 $cmd
        write_script /ltp/linux "$name" 1 $cmd
    done <$LIST
    j=0
    while [ $j -lt "$JOBS" ]; do
        awk -v j=$j -v n="$JOBS" 'NF && (NR - 1) % n == j { print $1 }' $LIST | while read -r name; do
            run_one "$label" "$engine" "$name"
        done &
        j=$((j + 1))
    done
    wait
    # Nothing of linux may outlive it: list what is left (not init, this script or the
    # machine's kernel threads). busybox `timeout` leaves a watchdog child that notices its
    # command's exit within a second: give the last ones time to go.
    sleep 2
    left=$(ps -o pid,args | awk 'NR > 1 && $1 != 1 && $2 !~ /^\[/ && $2 !~ /(ps|awk|sh)$/ && $0 !~ /vm\.sh/')
    echo "LTP-LEFT $label $(echo "$left" | grep -c .) $(echo "$left" | tr '\n' ';')"
    # Leftovers would disturb the next engine's tests.
    [ -n "$left" ] && echo "$left" | awk '{ print $1 }' | xargs -r kill -9 2>/dev/null
done
echo "LTP-DONE"
