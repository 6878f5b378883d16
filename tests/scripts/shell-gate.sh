#!/bin/sh
# Shell gate (tests/tests/shell.rs copies this to the rootfs as /opt/um/shell-gate.sh and boots
# `linux ... init=/bin/busybox -- sh /opt/um/shell-gate.sh`).
#
# Mounts proc, sysfs, tmpfs (/tmp, /run) and devtmpfs (if /dev is empty), then runs one step per
# shell feature or tool. Each step prints `STEP <name> ok` or `STEP <name> FAIL <detail>`; at the
# end `UM-SHELL-OK` only if every step passed, else `UM-SHELL-FAILED: <names>`. A step is a
# function t_<name> that returns non-zero with a one-line reason on its output when it fails.
# Never print anything here that contains a marker literally on the console except the verdict.

FAILED=""
STEPLOG=/tmp/.um-step.out

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

# Mount steps run directly (the step log lives in /tmp, which they change).
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

# in_mounts LINE-PREFIX: /proc/mounts has a line starting with it.
in_mounts() { grep -q "^$1" /proc/mounts || { echo "/proc/mounts has no line '$1...'"; return 1; }; }
m_proc() {
    mount -t proc proc /proc || return 1
    [ -r /proc/self/stat ] || { echo "/proc/self/stat is not readable"; return 1; }
    in_mounts 'proc /proc proc '
}
m_sys() { mount -t sysfs sysfs /sys && in_mounts 'sysfs /sys sysfs '; }
m_tmp() { mount -t tmpfs tmpfs /tmp && in_mounts 'tmpfs /tmp tmpfs '; }
m_run() { mount -t tmpfs -o mode=755 tmpfs /run && in_mounts 'tmpfs /run tmpfs '; }
m_dev() {
    if [ -z "$(ls -A /dev 2>/dev/null)" ]; then
        mount -t devtmpfs devtmpfs /dev || return 1
    fi
    for d in null zero random urandom tty console; do
        [ -c /dev/$d ] || { echo "/dev/$d is not a character device"; return 1; }
    done
}

mstep mount-proc m_proc
mstep mount-sys m_sys
mstep mount-tmp m_tmp
mstep mount-run m_run
mstep devtmpfs m_dev

t_pipeline() {
    r=$(echo "c b a" | tr ' ' '\n' | sort | head -n 2 | tr '\n' ' ')
    [ "$r" = "a b " ] || { echo "pipeline gave '$r'"; return 1; }
    n=$(yes | head -n 1000 | wc -l)
    [ "$n" -eq 1000 ] || { echo "yes|head|wc gave $n"; return 1; }
}

t_redirect() {
    echo one >/tmp/r
    echo two >>/tmp/r
    n=$(wc -l </tmp/r)
    [ "$n" -eq 2 ] || { echo "> and >> gave $n lines"; return 1; }
    [ "$(head -n 1 </tmp/r)" = one ] || { echo "< redirect"; return 1; }
    ls /nonexistent-um >/tmp/e 2>&1
    grep -q 'No such file' /tmp/e || { echo "2>&1 did not capture stderr: $(cat /tmp/e)"; return 1; }
    { echo out; echo err >&2; } >/tmp/both 2>&1
    [ "$(cat /tmp/both | tr '\n' ' ')" = "out err " ] || { echo "both streams: $(cat /tmp/both)"; return 1; }
    exec 3>/tmp/fd3
    echo via3 >&3
    exec 3>&-
    [ "$(cat /tmp/fd3)" = via3 ] || { echo "exec 3> redirect"; return 1; }
    cat <<HERE >/tmp/here
heredoc $((6 * 7))
HERE
    [ "$(cat /tmp/here)" = "heredoc 42" ] || { echo "here-document"; return 1; }
}

t_cmdsubst() {
    x=$(echo $(echo nested))
    [ "$x" = nested ] || { echo "nested \$(...) gave '$x'"; return 1; }
    y=`echo back`
    [ "$y" = back ] || { echo "backticks gave '$y'"; return 1; }
    z=$(exit 3)
    rc=$?
    [ "$rc" -eq 3 ] || { echo "status of \$(exit 3) is $rc"; return 1; }
}

t_bgwait() {
    sleep 0.2 &
    p1=$!
    (exit 3) &
    p2=$!
    wait $p2
    rc=$?
    [ "$rc" -eq 3 ] || { echo "wait for (exit 3) gave $rc"; return 1; }
    wait $p1 || { echo "wait for sleep failed"; return 1; }
    for i in 1 2 3; do (sleep 0.1; echo $i >/tmp/bg.$i) & done
    wait
    [ -f /tmp/bg.1 ] && [ -f /tmp/bg.2 ] && [ -f /tmp/bg.3 ] || { echo "bare wait returned before the jobs wrote"; return 1; }
}

t_trap() {
    got=0
    trap 'got=1' USR1
    kill -USR1 $$
    [ "$got" = 1 ] || { echo "trap on USR1 from kill \$\$ did not run"; trap - USR1; return 1; }
    got=0
    (sleep 0.2; kill -USR1 $$) &
    wait
    n=0
    while [ "$got" != 1 ] && [ $n -lt 20 ]; do sleep 0.1; n=$((n + 1)); done
    trap - USR1
    [ "$got" = 1 ] || { echo "trap on USR1 from a background job did not run"; return 1; }
    out=$(sh -c 'trap "echo bye" EXIT; exit 0')
    [ "$out" = bye ] || { echo "EXIT trap gave '$out'"; return 1; }
    out=$(sh -c 'trap "echo term; exit 5" TERM; kill -TERM $$; sleep 5')
    rc=$?
    [ "$out" = term ] && [ $rc -eq 5 ] || { echo "TERM trap gave '$out' status $rc"; return 1; }
}

# Field 3 (state) of /proc/PID/stat, polled until it is $2 (up to 5 s).
state_becomes() {
    n=0
    while [ $n -lt 50 ]; do
        s=$(awk '{print $3}' /proc/$1/stat 2>/dev/null)
        [ "$s" = "$2" ] && return 0
        sleep 0.1
        n=$((n + 1))
    done
    echo "/proc/$1/stat field 3 is '$s', want '$2'"
    return 1
}

t_stopcont() {
    sleep 30 &
    p=$!
    state_becomes $p S || { kill $p; return 1; }
    kill -STOP $p || return 1
    state_becomes $p T || { kill -KILL $p; return 1; }
    kill -CONT $p || return 1
    state_becomes $p S || { kill -KILL $p; return 1; }
    kill $p
    wait $p
    rc=$?
    [ $rc -eq 143 ] || { echo "sleep killed by SIGTERM: wait gave $rc, want 143"; return 1; }
}

t_ps() {
    sleep 7 &
    p=$!
    # Until the child has exec'd it is still a copy of this shell: wait for `sleep` to show in
    # its cmdline (up to 5 s) before asking ps, or a loaded host lets ps win the race.
    i=0
    while ! grep -q sleep "/proc/$p/cmdline" 2>/dev/null && [ $i -lt 50 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    out=$(ps)
    kill $p
    wait $p
    echo "$out" | grep -q '^ *1 ' || { echo "ps does not list pid 1"; echo "$out" | head -n 3; return 1; }
    echo "$out" | grep -q "^ *$p .*sleep 7" || { echo "ps does not list the background 'sleep 7' ($p)"; echo "$out" | tail -n 3; return 1; }
}

t_top() {
    out=$(top -bn1)
    echo "$out" | grep -q '^Mem:' || { echo "top -bn1 has no Mem: line"; echo "$out" | head -n 3; return 1; }
    echo "$out" | grep -q 'PID' || { echo "top -bn1 has no process header"; return 1; }
    echo "$out" | grep -q 'top -bn1' || { echo "top -bn1 does not list itself"; return 1; }
}

t_free() {
    total=$(free | awk '/^Mem:/ {print $2}')
    [ -n "$total" ] && [ "$total" -gt 0 ] || { echo "free: Mem total '$total'"; free; return 1; }
}

t_df() {
    df / >/tmp/df.out 2>&1 || { cat /tmp/df.out; return 1; }
    out=$(df /tmp)
    echo "$out" | grep -q '^tmpfs .* /tmp$' || { echo "df /tmp: $out"; return 1; }
}

t_mount() {
    out=$(mount)
    for m in 'proc on /proc type proc' 'sysfs on /sys type sysfs' 'tmpfs on /tmp type tmpfs' 'tmpfs on /run type tmpfs'; do
        echo "$out" | grep -q "^$m" || { echo "mount does not list '$m'"; return 1; }
    done
}

t_find() {
    n=$(find / -xdev | wc -l)
    [ "$n" -gt 100 ] || { echo "find / -xdev | wc -l gave $n"; return 1; }
    find / -xdev -path /proc -prune -o -name busybox -print | grep -q '^/bin/busybox$' || { echo "find -name busybox"; return 1; }
}

t_sort() {
    r=$(printf '3\n10\n2\n10\n' | sort -n | tr '\n' ' ')
    [ "$r" = "2 3 10 10 " ] || { echo "sort -n gave '$r'"; return 1; }
    r=$(printf 'b\na\nb\n' | sort -u -r | tr '\n' ' ')
    [ "$r" = "b a " ] || { echo "sort -u -r gave '$r'"; return 1; }
    r=$(printf 'x 2\ny 1\n' | sort -k2 | head -n 1)
    [ "$r" = "y 1" ] || { echo "sort -k2 gave '$r'"; return 1; }
}

t_awk() {
    r=$(printf 'a 1\nb 2\nc 3\n' | awk '{ s += $2 } END { printf "%d-%s", s, $1 }')
    [ "$r" = "6-c" ] || { echo "awk sum gave '$r'"; return 1; }
    r=$(echo "x:y:z" | awk -F: '{ print NF, $2 }')
    [ "$r" = "3 y" ] || { echo "awk -F gave '$r'"; return 1; }
}

t_sed() {
    r=$(echo hello world | sed 's/world/there/')
    [ "$r" = "hello there" ] || { echo "sed s gave '$r'"; return 1; }
    printf 'a\nb\nc\n' >/tmp/sed.txt
    sed -i '2d' /tmp/sed.txt
    [ "$(cat /tmp/sed.txt | tr '\n' ' ')" = "a c " ] || { echo "sed -i 2d gave '$(cat /tmp/sed.txt)'"; return 1; }
    r=$(printf 'a\nb\nc\n' | sed -n '2p')
    [ "$r" = b ] || { echo "sed -n 2p gave '$r'"; return 1; }
}

t_grep() {
    mkdir -p /tmp/g/a/b
    echo needle >/tmp/g/a/b/f
    echo hay >/tmp/g/x
    r=$(grep -r needle /tmp/g)
    [ "$r" = "/tmp/g/a/b/f:needle" ] || { echo "grep -r gave '$r'"; return 1; }
    r=$(grep -rl hay /tmp/g)
    [ "$r" = "/tmp/g/x" ] || { echo "grep -rl gave '$r'"; return 1; }
    grep -q '^root:' /etc/passwd || { echo "grep /etc/passwd"; return 1; }
}

t_dd() {
    dd if=/dev/zero of=/tmp/z bs=1k count=1024 2>/tmp/dd.err || { cat /tmp/dd.err; return 1; }
    size=$(ls -l /tmp/z | awk '{print $5}')
    [ "$size" = 1048576 ] || { echo "ls -l /tmp/z size '$size'"; return 1; }
    [ "$(od -An -tx1 -N4 /tmp/z | tr -d ' ')" = 00000000 ] || { echo "/tmp/z is not zeros"; return 1; }
    rm /tmp/z
}

t_tar() {
    rm -rf /tmp/src /tmp/dst /tmp/a.tgz
    mkdir -p /tmp/src/sub /tmp/dst
    cp /etc/passwd /etc/group /tmp/src/ || { echo "cp /etc files failed"; return 1; }
    cp /bin/busybox /tmp/src/sub/bb || { echo "cp /bin/busybox failed"; return 1; }
    dd if=/dev/urandom of=/tmp/src/sub/rand bs=1k count=200 2>&1 || { echo "dd from /dev/urandom failed"; return 1; }
    echo small >/tmp/src/small
    tar czf /tmp/a.tgz -C /tmp src || { echo "tar czf failed"; return 1; }
    tar xzf /tmp/a.tgz -C /tmp/dst || { echo "tar xzf failed"; return 1; }
    (cd /tmp/src && find . -type f | sort | xargs md5sum) >/tmp/m1
    (cd /tmp/dst/src && find . -type f | sort | xargs md5sum) >/tmp/m2
    [ "$(wc -l </tmp/m1)" -eq 5 ] || { echo "expected 5 files, md5sum listed $(wc -l </tmp/m1)"; return 1; }
    cmp -s /tmp/m1 /tmp/m2 || { echo "md5sums differ after the tar round trip"; diff /tmp/m1 /tmp/m2 | head -n 3; return 1; }
    [ "$(gzip -dc /tmp/a.tgz | tar tf - | grep -c .)" -ge 7 ] || { echo "tar tf lists too few entries"; return 1; }
}

# A FIFO handed over between a background writer and a reader started after it, many times,
# on tmpfs and on hostfs: the writer often opens, writes and closes before the reader's open
# has looked for it (a reader that then waited for "the next writer" hung here once).
t_fifo() {
    for dir in /tmp /var/tmp; do
        rm -f "$dir/um-fifo"
        mkfifo "$dir/um-fifo" || { echo "mkfifo $dir/um-fifo failed"; return 1; }
        i=0
        while [ $i -lt 150 ]; do
            ( echo "round $i" >"$dir/um-fifo" & )
            got=$(cat "$dir/um-fifo")
            [ "$got" = "round $i" ] || { echo "$dir round $i: read '$got'"; return 1; }
            i=$((i + 1))
        done
        rm -f "$dir/um-fifo"
    done
}

# TCP over the guest's loopback network: busybox nc listens on 127.0.0.1 in the background,
# a second nc connects and sends a line, and the listener writes what it received. The client
# retries while the listener is not up yet (connect is refused until it listens).
t_tcploop() {
    rm -f /tmp/nc.out /tmp/nc.err
    timeout 20 nc -l -p 18765 >/tmp/nc.out 2>/tmp/nc.err &
    srv=$!
    i=0
    until echo "over tcp loopback" | timeout 10 nc 127.0.0.1 18765 2>>/tmp/nc.err; do
        i=$((i + 1))
        [ $i -lt 50 ] || { kill $srv 2>/dev/null; echo "nc never connected: $(tail -n 1 /tmp/nc.err)"; return 1; }
        sleep 0.1
    done
    wait $srv
    rc=$?
    [ $rc -eq 0 ] || { echo "the listening nc exited with $rc: $(tail -n 1 /tmp/nc.err)"; return 1; }
    got=$(cat /tmp/nc.out)
    [ "$got" = "over tcp loopback" ] || { echo "the listener received '$got'"; return 1; }
}

# Inode flags on tmpfs with busybox chattr/lsattr: an immutable file refuses writes, removal
# and renaming even for root; an append-only one takes appends only; clearing the flags
# restores everything (FS_IOC_SETFLAGS/GETFLAGS, IS_IMMUTABLE/IS_APPEND in the syscalls).
t_chattr() {
    d=/tmp/chattr.d
    rm -rf $d && mkdir $d && echo one >$d/f || { echo "setup failed"; return 1; }
    chattr +i $d/f || { echo "chattr +i failed"; return 1; }
    lsattr $d/f | grep -q '^----i' || { echo "lsattr after +i: $(lsattr $d/f)"; return 1; }
    (echo two >$d/f) 2>/dev/null && { echo "wrote to an immutable file"; return 1; }
    rm -f $d/f 2>/dev/null; [ -e $d/f ] || { echo "removed an immutable file"; return 1; }
    mv $d/f $d/g 2>/dev/null && { echo "renamed an immutable file"; return 1; }
    chattr -i $d/f && chattr +a $d/f || { echo "chattr -i +a failed"; return 1; }
    echo two >>$d/f || { echo "append to an append-only file failed"; return 1; }
    (echo three >$d/f) 2>/dev/null && { echo "truncated an append-only file"; return 1; }
    [ "$(cat $d/f)" = "one
two" ] || { echo "append-only file holds '$(cat $d/f)'"; return 1; }
    chattr -a $d/f && rm $d/f && rmdir $d || { echo "cleanup after chattr -a failed"; return 1; }
}

# Overcommit accounting in /proc: Committed_AS counts what the running programs committed,
# CommitLimit is overcommit_ratio (50) percent of MemTotal, and vm.overcommit_memory takes
# 0-2 only (the accounting itself: mm unit tests, and LTP's fork14 end to end).
t_overcommit() {
    total=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
    limit=$(awk '/^CommitLimit:/ { print $2 }' /proc/meminfo)
    committed=$(awk '/^Committed_AS:/ { print $2 }' /proc/meminfo)
    [ "$committed" -gt 0 ] || { echo "Committed_AS is '$committed'"; return 1; }
    # ratio 50: half of MemTotal, to within a page (64 kB covers every page size).
    d=$((total / 2 - limit))
    [ "$d" -ge 0 ] && [ "$d" -le 64 ] || { echo "CommitLimit $limit for MemTotal $total"; return 1; }
    echo 1 >/proc/sys/vm/overcommit_memory || { echo "cannot set overcommit_memory"; return 1; }
    [ "$(cat /proc/sys/vm/overcommit_memory)" = 1 ] || { echo "overcommit_memory did not change"; return 1; }
    (echo 3 >/proc/sys/vm/overcommit_memory) 2>/dev/null && { echo "overcommit_memory took 3"; return 1; }
    echo 0 >/proc/sys/vm/overcommit_memory
}

for s in pipeline redirect cmdsubst bgwait trap stopcont ps top free df mount find sort awk sed grep dd tar fifo tcploop chattr overcommit; do
    step "$s"
done

if [ -z "$FAILED" ]; then
    echo "UM-SHELL-OK"
    exit 0
fi
echo "UM-SHELL-FAILED:$FAILED"
exit 1
