#!/bin/sh
# Module gate (tests/tests/modules.rs copies this to the rootfs as /opt/um/modules-gate.sh and
# boots `linux ... init=/bin/busybox -- sh /opt/um/modules-gate.sh [FWCRC]`; the arm64 lane can
# run it the same way).
#
# Needs in the guest root: the example modules of tools/modules/build under
# /lib/modules/$(uname -r)/ (extra/*.ko and modules.dep), /lib/firmware/umfw.bin, the guest
# program /opt/um/modtest, and two bad modules made by the harness: /opt/um/mod-badver.ko
# (umbase with another kernel's vermagic) and /opt/um/mod-foreign.ko (a module for the other
# architecture). FWCRC (optional) is the CRC-32 of umfw.bin as 8 hex digits.
#
# Each step prints `STEP <name> ok` or `STEP <name> FAIL <detail>`; at the end `UM-MODULES-OK`
# only if every step passed, else `UM-MODULES-FAILED: <names>`. Whatever the steps do, the
# script ends by unloading every module it loaded (so the kernel is seen to carry on).

FAILED=""
STEPLOG=/tmp/.um-step.out
FWCRC=${1:-}

step() {
    name=$1
    if "t_$name" >"$STEPLOG" 2>&1; then
        echo "STEP $name ok"
    else
        rc=$?
        detail=$(tail -n 4 "$STEPLOG" | tr '\n' '|')
        echo "STEP $name FAIL (status $rc) $detail"
        FAILED="$FAILED $name"
    fi
}

mstep() {
    name=$1
    shift
    if out=$("$@" 2>&1); then
        echo "STEP $name ok"
    else
        echo "STEP $name FAIL $(echo "$out" | tr '\n' '|')"
        FAILED="$FAILED $name"
    fi
}

m_mounts() {
    mount -t proc proc /proc || return 1
    mount -t sysfs sysfs /sys || return 1
    mount -t tmpfs tmpfs /tmp || return 1
    if [ -z "$(ls -A /dev 2>/dev/null)" ]; then
        mount -t devtmpfs devtmpfs /dev || return 1
    fi
    [ -c /dev/null ] || { echo "/dev/null is missing"; return 1; }
}
mstep mounts m_mounts

REL=$(uname -r)
MODDIR=/lib/modules/$REL
EXTRA=$MODDIR/extra

# loaded NAME: NAME is in /proc/modules.
loaded() { grep -q "^$1 " /proc/modules; }
# must_fail WHAT CMD...: CMD fails (its message is shown in the step log).
must_fail() {
    what=$1
    shift
    if "$@"; then
        echo "$what: succeeded, should have failed"
        return 1
    fi
    return 0
}

t_layout() {
    [ -r "$MODDIR/modules.dep" ] || { echo "no $MODDIR/modules.dep"; return 1; }
    for m in umbase umdep umchar umfw; do
        [ -r "$EXTRA/$m.ko" ] || { echo "no $EXTRA/$m.ko"; return 1; }
    done
    [ -z "$(cat /proc/modules)" ] || { echo "modules loaded before the gate: $(cat /proc/modules)"; return 1; }
    [ -d /sys/module ] || { echo "no /sys/module"; return 1; }
}

# modprobe resolves the dependency through modules.dep: umbase first, then umdep.
t_modprobe() {
    modprobe umdep || { echo "modprobe umdep failed"; return 1; }
    loaded umbase || { echo "umbase was not loaded first"; return 1; }
    loaded umdep || { echo "umdep is not in /proc/modules"; return 1; }
    [ -c /dev/umdep ] || { echo "/dev/umdep is not a character device"; return 1; }
}

# /proc/modules lines: name size refcnt users, state address [taints]; newest first.
t_procmodules() {
    cat /proc/modules
    b=$(grep '^umbase ' /proc/modules)
    echo "$b" | grep -Eq '^umbase [1-9][0-9]* 1 umdep, Live 0x[0-9a-f]{16}( \([A-Z]+\))?$' ||
        { echo "bad umbase line: $b"; return 1; }
    d=$(grep '^umdep ' /proc/modules)
    echo "$d" | grep -Eq '^umdep [1-9][0-9]* 0 - Live 0x[0-9a-f]{16}( \([A-Z]+\))?$' ||
        { echo "bad umdep line: $d"; return 1; }
    [ "$(head -n 1 /proc/modules | cut -d' ' -f1)" = umdep ] || { echo "umdep (newest) is not listed first"; return 1; }
}

t_lsmod() {
    out=$(lsmod)
    echo "$out"
    echo "$out" | grep -Eq '^umbase +[0-9]+ +1 +umdep' || { echo "lsmod: umbase not used by umdep"; return 1; }
    echo "$out" | grep -Eq '^umdep +[0-9]+ +0' || { echo "lsmod: no umdep line"; return 1; }
}

t_sysmodule() {
    [ "$(cat /sys/module/umbase/refcnt)" = 1 ] || { echo "umbase refcnt $(cat /sys/module/umbase/refcnt)"; return 1; }
    [ "$(cat /sys/module/umdep/refcnt)" = 0 ] || { echo "umdep refcnt $(cat /sys/module/umdep/refcnt)"; return 1; }
    [ "$(cat /sys/module/umdep/initstate)" = live ] || { echo "umdep initstate $(cat /sys/module/umdep/initstate)"; return 1; }
    [ -L /sys/module/umbase/holders/umdep ] || { echo "no /sys/module/umbase/holders/umdep"; ls -l /sys/module/umbase/holders; return 1; }
    [ "$(cat /sys/module/umbase/version)" = 1.0 ] || { echo "umbase version $(cat /sys/module/umbase/version)"; return 1; }
    ls /sys/module | grep -qx umdep || { echo "ls /sys/module does not list umdep"; return 1; }
}

# umdep's device calls umbase_add (a symbol of another module) on each write.
t_depdevice() {
    echo 5 >/dev/umdep || { echo "write 5 failed"; return 1; }
    echo 7 >/dev/umdep || { echo "write 7 failed"; return 1; }
    got=$(cat /dev/umdep)
    [ "$got" = "total=12 calls=3" ] || { echo "/dev/umdep: '$got', want 'total=12 calls=3'"; return 1; }
}

# A module whose exports are in use cannot be removed (EWOULDBLOCK), and stays loaded.
t_rmmodbusy() {
    must_fail "rmmod umbase while umdep uses it" rmmod umbase || return 1
    loaded umbase || { echo "umbase was removed anyway"; return 1; }
    [ "$(cat /sys/module/umbase/refcnt)" = 1 ] || { echo "umbase refcnt changed"; return 1; }
}

# Parameters on the command line, shown in /sys/module/<m>/parameters.
t_chrload() {
    modprobe umchar bufsize=64 greeting=hi || { echo "modprobe umchar failed"; return 1; }
    [ -c /dev/umchar ] || { echo "/dev/umchar is not a character device"; return 1; }
    [ "$(cat /sys/module/umchar/parameters/bufsize)" = 64 ] || { echo "bufsize: $(cat /sys/module/umchar/parameters/bufsize)"; return 1; }
    [ "$(cat /sys/module/umchar/parameters/greeting)" = hi ] || { echo "greeting: $(cat /sys/module/umchar/parameters/greeting)"; return 1; }
    perm=$(stat -c %a /sys/module/umchar/parameters/bufsize)
    [ "$perm" = 444 ] || { echo "bufsize mode $perm, want 444"; return 1; }
}

# The device from the shell: cat, echo, dd.
t_chrshell() {
    [ "$(cat /dev/umchar)" = hi ] || { echo "cat: '$(cat /dev/umchar)', want 'hi'"; return 1; }
    printf abc >/dev/umchar || { echo "write failed"; return 1; }
    [ "$(cat /dev/umchar)" = hiabc ] || { echo "after write: '$(cat /dev/umchar)'"; return 1; }
    got=$(dd if=/dev/umchar bs=2 count=1 2>/dev/null)
    [ "$got" = hi ] || { echo "dd bs=2 count=1: '$got'"; return 1; }
    got=$(dd if=/dev/umchar bs=1 skip=2 2>/dev/null)
    [ "$got" = abc ] || { echo "dd skip=2: '$got'"; return 1; }
}

# The device from a program: ioctls (copy_to_user into the guest), poll, pread, lseek.
t_chrprog() {
    /opt/um/modtest /dev/umchar || return 1
}

# An open file holds a reference: rmmod fails while /dev/umchar is open.
t_chrinuse() {
    exec 3</dev/umchar
    r=$(cat /sys/module/umchar/refcnt)
    must_fail "rmmod umchar while open" rmmod umchar
    bad=$?
    exec 3<&-
    [ "$r" = 1 ] || { echo "refcnt with one open file: $r"; return 1; }
    [ $bad = 0 ] || return 1
    loaded umchar || { echo "umchar was removed while open"; return 1; }
    [ "$(cat /sys/module/umchar/refcnt)" = 0 ] || { echo "refcnt after close: $(cat /sys/module/umchar/refcnt)"; return 1; }
}

t_modinfo() {
    out=$(modinfo umchar)
    echo "$out"
    for want in 'license: *GPL' 'description: *example character device' 'version: *1.0' \
        "vermagic: *$REL " 'parm: *bufsize' 'parm: *greeting'; do
        echo "$out" | grep -Eq "$want" || { echo "modinfo umchar: no '$want'"; return 1; }
    done
    modinfo umdep | grep -Eq 'depends: *umbase' || { echo "modinfo umdep: no depends umbase"; return 1; }
}

# A second load of a loaded module: EEXIST.
t_eexist() {
    out=$(insmod "$EXTRA/umchar.ko" 2>&1)
    rc=$?
    echo "$out"
    [ $rc != 0 ] || { echo "second insmod umchar succeeded"; return 1; }
    echo "$out" | grep -q 'File exists' || { echo "not EEXIST"; return 1; }
}

# Unload in reverse order; everything a module made goes with it.
t_rmmod() {
    rmmod umchar || { echo "rmmod umchar failed"; return 1; }
    rmmod umdep || { echo "rmmod umdep failed"; return 1; }
    rmmod umbase || { echo "rmmod umbase failed"; return 1; }
    for m in umchar umdep umbase; do
        ! loaded $m || { echo "$m still loaded"; return 1; }
        [ ! -e /sys/module/$m ] || { echo "/sys/module/$m still there"; return 1; }
    done
    [ ! -e /dev/umchar ] || { echo "/dev/umchar still there"; return 1; }
    [ ! -e /dev/umdep ] || { echo "/dev/umdep still there"; return 1; }
    [ -z "$(cat /proc/modules)" ] || { echo "/proc/modules not empty: $(cat /proc/modules)"; return 1; }
}

# modprobe -r removes a module and the dependencies nothing else uses.
t_modproberm() {
    modprobe umdep || { echo "modprobe umdep failed"; return 1; }
    modprobe -r umdep || { echo "modprobe -r umdep failed"; return 1; }
    ! loaded umdep || { echo "umdep still loaded"; return 1; }
    ! loaded umbase || { echo "umbase still loaded"; return 1; }
}

# request_firmware reads /lib/firmware/umfw.bin; the module shows it in /proc/umfw.
t_firmware() {
    modprobe umfw || { echo "modprobe umfw failed"; return 1; }
    got=$(cat /proc/umfw)
    echo "/proc/umfw: $got"
    echo "$got" | grep -Eq '^umfw.bin size=4096 crc32=[0-9a-f]{8}$' || { echo "bad /proc/umfw: '$got'"; return 1; }
    if [ -n "$FWCRC" ]; then
        [ "$got" = "umfw.bin size=4096 crc32=$FWCRC" ] || { echo "crc32 differs from the host's $FWCRC"; return 1; }
    fi
    ls /proc | grep -qx umfw || { echo "ls /proc does not list umfw"; return 1; }
    rmmod umfw || { echo "rmmod umfw failed"; return 1; }
    [ ! -e /proc/umfw ] || { echo "/proc/umfw still there"; return 1; }
}

# A /proc entry whose module calls many kernel functions (through veneers when far); a
# parameter written through sysfs changes what the module does.
t_veneer() {
    modprobe umveneer rounds=2 || { echo "modprobe umveneer failed"; return 1; }
    got=$(cat /proc/umveneer)
    [ "$got" = "rounds=2 ok=2 calls=8" ] || { echo "/proc/umveneer: '$got'"; return 1; }
    p=/sys/module/umveneer/parameters/rounds
    [ "$(stat -c %a $p)" = 644 ] || { echo "rounds mode $(stat -c %a $p), want 644"; return 1; }
    echo 5 >$p || { echo "write to $p failed"; return 1; }
    [ "$(cat $p)" = 5 ] || { echo "rounds after write: $(cat $p)"; return 1; }
    must_fail "write of a non-number" sh -c "echo x >$p" || return 1
    got=$(cat /proc/umveneer)
    [ "$got" = "rounds=5 ok=5 calls=18" ] || { echo "/proc/umveneer after rounds=5: '$got'"; return 1; }
    [ "$(cat /sys/module/umveneer/parameters/verbose)" = N ] || { echo "verbose is not N"; return 1; }
    rmmod umveneer || { echo "rmmod umveneer failed"; return 1; }
}

# rmmod -f (O_TRUNC) unloads a module in use; its open file then fails instead of calling it.
t_forced() {
    insmod "$EXTRA/umchar.ko" || { echo "insmod umchar failed"; return 1; }
    exec 3</dev/umchar
    rmmod -f umchar
    rc=$?
    out=$(cat <&3 2>&1)
    exec 3<&-
    [ $rc = 0 ] || { echo "rmmod -f umchar failed"; return 1; }
    ! loaded umchar || { echo "umchar still loaded"; return 1; }
    [ ! -e /dev/umchar ] || { echo "/dev/umchar still there"; return 1; }
    echo "read after forced unload: $out"
    echo "$out" | grep -q 'No such device' || { echo "read after the forced unload did not fail with ENODEV"; return 1; }
}

# rmmod -w (no O_NONBLOCK) waits until the last user closes the device: the holder marks the
# moment just before its close, so an rmmod that did not wait finds no mark.
t_waitrm() {
    insmod "$EXTRA/umchar.ko" || { echo "insmod umchar failed"; return 1; }
    rm -f /tmp/closing
    (exec 3</dev/umchar; sleep 1; touch /tmp/closing; exec 3<&-; sleep 1) &
    i=0
    while [ "$(cat /sys/module/umchar/refcnt)" != 1 ]; do
        i=$((i + 1))
        [ $i -lt 100 ] || { echo "the holder never opened /dev/umchar"; return 1; }
        sleep 0.1
    done
    rmmod -w umchar || { echo "rmmod -w umchar failed"; return 1; }
    [ -e /tmp/closing ] || { echo "rmmod -w returned while the device was still open"; return 1; }
    ! loaded umchar || { echo "umchar still loaded"; return 1; }
    wait
}

# Bad modules fail to load cleanly and leave nothing behind.
t_nofirmware() {
    must_fail "umfw with a missing firmware file" insmod "$EXTRA/umfw.ko" fw_name=missing.bin || return 1
    ! loaded umfw || { echo "umfw loaded"; return 1; }
}
t_badinit() {
    must_fail "umchar with bufsize=0 (its init fails)" insmod "$EXTRA/umchar.ko" bufsize=0 || return 1
    ! loaded umchar || { echo "umchar loaded"; return 1; }
    [ ! -e /dev/umchar ] || { echo "/dev/umchar left behind"; return 1; }
}
t_badparam() {
    must_fail "umchar with bufsize=notanumber" insmod "$EXTRA/umchar.ko" bufsize=notanumber || return 1
    ! loaded umchar || { echo "umchar loaded"; return 1; }
}
t_truncated() {
    head -c 1500 "$EXTRA/umchar.ko" >/tmp/trunc.ko
    must_fail "a truncated module" insmod /tmp/trunc.ko || return 1
    must_fail "a text file" insmod /etc/os-release || return 1
    ! loaded umchar || { echo "umchar loaded"; return 1; }
}
t_badvermagic() {
    must_fail "a module with another kernel's vermagic" insmod /opt/um/mod-badver.ko || return 1
    ! loaded umbase || { echo "umbase loaded"; return 1; }
}
t_foreign() {
    must_fail "a module for the other architecture" insmod /opt/um/mod-foreign.ko || return 1
    [ -z "$(cat /proc/modules)" ] || { echo "something loaded: $(cat /proc/modules)"; return 1; }
}
t_nosymbol() {
    # umdep without umbase: its symbols are undefined (ENOENT).
    out=$(insmod "$EXTRA/umdep.ko" 2>&1)
    rc=$?
    echo "$out"
    [ $rc != 0 ] || { echo "umdep loaded without umbase"; return 1; }
    ! loaded umdep || { echo "umdep loaded"; return 1; }
}
t_nonroot() {
    out=$(su -s /bin/sh nobody -c "insmod $EXTRA/umbase.ko" 2>&1)
    rc=$?
    echo "$out"
    [ $rc != 0 ] || { echo "nobody could load a module"; return 1; }
    echo "$out" | grep -q 'not permitted' || { echo "not EPERM"; return 1; }
    ! loaded umbase || { echo "umbase loaded"; return 1; }
}

# The kernel carries on: a good module still loads and works after all that.
t_after() {
    modprobe umchar greeting=again || { echo "modprobe umchar failed"; return 1; }
    [ "$(cat /dev/umchar)" = again ] || { echo "/dev/umchar: '$(cat /dev/umchar)'"; return 1; }
    rmmod umchar || { echo "rmmod umchar failed"; return 1; }
}

# /proc/sys/kernel/modules_disabled: only 1 may be written, and then nothing loads or unloads.
t_disabled() {
    [ "$(cat /proc/sys/kernel/modules_disabled)" = 0 ] || { echo "modules_disabled not 0"; return 1; }
    modprobe umbase || { echo "modprobe umbase failed"; return 1; }
    ! echo 2 >/proc/sys/kernel/modules_disabled 2>/dev/null || { echo "wrote 2"; return 1; }
    echo 1 >/proc/sys/kernel/modules_disabled || { echo "cannot write 1"; return 1; }
    ! echo 0 >/proc/sys/kernel/modules_disabled 2>/dev/null || { echo "wrote 0 back"; return 1; }
    [ "$(cat /proc/sys/kernel/modules_disabled)" = 1 ] || { echo "not 1"; return 1; }
    out=$(insmod "$EXTRA/umchar.ko" 2>&1)
    echo "$out" | grep -q 'not permitted' || { echo "insmod with modules disabled: $out"; return 1; }
    out=$(rmmod umbase 2>&1)
    echo "$out" | grep -q 'not permitted' || { echo "rmmod with modules disabled: $out"; return 1; }
    loaded umbase || { echo "umbase went away"; return 1; }
}

for s in layout modprobe procmodules lsmod sysmodule depdevice rmmodbusy chrload chrshell chrprog chrinuse modinfo eexist rmmod modproberm firmware veneer forced waitrm nofirmware badinit badparam truncated badvermagic foreign nosymbol nonroot after disabled; do
    step "$s"
done

# Whatever happened, unload what is left (newest first).
for m in $(cut -d' ' -f1 /proc/modules 2>/dev/null); do
    rmmod "$m" 2>/dev/null
done

if [ -z "$FAILED" ]; then
    echo "UM-MODULES-OK"
    exit 0
fi
echo "UM-MODULES-FAILED:$FAILED"
exit 1
