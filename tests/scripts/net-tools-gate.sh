# Alpine (busybox) network tools against lo, run by tests/tests/net_tools.rs as
# `/bin/sh -c "$(cat this)"`. Each command's output is checked by the gate; the last line is
# the marker.
mount -t proc proc /proc
mount -t sysfs sys /sys
ip addr
ip link
ip route show table local
ip addr add 10.1.2.3/24 dev lo
ip addr show dev lo
ip route show table local
ip -4 route get 127.0.0.1
ifconfig lo
route add -net 10.5.0.0 netmask 255.255.0.0 dev lo
route -n
route del -net 10.5.0.0 netmask 255.255.0.0 dev lo
ip link set lo mtu 1500
ip link show lo
ifconfig lo mtu 65536
ip addr del 10.1.2.3/24 dev lo
ip -o -4 addr
ip rule
(nc -l -p 8080 >/dev/null 2>&1 &)
sleep 1
netstat -tln
cat /sys/class/net/lo/operstate /sys/class/net/lo/mtu
echo UM-NET-TOOLS-OK
