# ICMP errors at the sockets (ip(7)/ipv6(7) IP_RECVERR, udp(7)): the same lines natively on
# the host against a closed loopback port and in the guest against the same port through
# 10.0.2.2 / fd00::2 (hostloop=on). Usage: net_icmp_err.py HOST4 HOST6 PORT [guest]
# HOST6 "-" skips IPv6. With "guest", also the destinations only the guest may try (the
# prompt refusals of restrict=loopback and of a 10.0.2.x that is nobody); never run that
# natively (the network rule). Run by tests/tests/net_debian.rs icmp_errors_differential.
import errno
import select
import socket
import struct
import sys
import time

# include/uapi/linux/in.h, in6.h (older Pythons lack the names).
IP_RECVERR, IPV6_RECVERR, SOL_IP, SOL_IPV6 = 11, 25, 0, 41
H4, H6, PORT = sys.argv[1], sys.argv[2], int(sys.argv[3])
GUEST = len(sys.argv) > 4 and sys.argv[4] == "guest"


def en(e):
    return errno.errorcode.get(e, str(e))


def pollerr(s, ms=3000):
    p = select.poll()
    p.register(s, select.POLLIN | select.POLLERR)
    r = p.poll(ms)
    return "ERR" if r and r[0][1] & select.POLLERR else "none"


def soerr(s):
    e = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    return en(e) if e else "0"


def errq(tag, s, fam, host):
    try:
        data, anc, flags, addr = s.recvmsg(64, 512, socket.MSG_ERRQUEUE)
    except BlockingIOError:
        print(tag, "errqueue EAGAIN")
        return
    for lvl, ty, b in anc:
        ee_errno, origin, etype, code, _pad, info, edata = struct.unpack("=IBBBBII", b[:16])
        off = socket.inet_ntop(fam, b[20:24] if fam == socket.AF_INET else b[24:40])
        print(tag, "cmsg", lvl, ty, en(ee_errno), "origin", origin, "type", etype, "code",
              code, "info", info, "data", edata,
              "offender", "T" if off == host else off)
    print(tag, "data", data, "flags-errqueue", bool(flags & socket.MSG_ERRQUEUE),
          "name", ("T" if addr[0] == host else addr[0]), addr[1] == PORT)


def udp(fam, host, lvl, opt, tag):
    # A connected socket: the error on the next call, SO_ERROR read-and-clear.
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.connect((host, PORT))
    s.send(b"ping")
    print(tag, "connected poll", pollerr(s))
    print(tag, "connected SO_ERROR", soerr(s), soerr(s))
    s.send(b"ping")
    pollerr(s)
    try:
        s.recv(10)
        print(tag, "connected recv ok")
    except OSError as e:
        print(tag, "connected recv", en(e.errno))
    try:
        s.send(b"ping")
        pollerr(s)
        s.send(b"ping")
        print(tag, "connected send ok")
    except OSError as e:
        print(tag, "connected send", en(e.errno))
    s.close()
    # Unconnected without IP_RECVERR: nothing.
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.sendto(b"ping", (host, PORT))
    time.sleep(0.5)
    print(tag, "unconnected poll", pollerr(s, 0), "SO_ERROR", soerr(s))
    s.close()
    # Unconnected with IP_RECVERR: the error queue.
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.setsockopt(lvl, opt, 1)
    s.sendto(b"hello-icmp", (host, PORT))
    print(tag, "recverr poll", pollerr(s))
    errq(tag, s, fam, host)
    print(tag, "after SO_ERROR", soerr(s), "poll", pollerr(s, 0))
    errq(tag, s, fam, host)
    s.close()


def tcp(fam, host, port, tag):
    s = socket.socket(fam, socket.SOCK_STREAM)
    t = time.time()
    try:
        s.connect((host, port))
        print(tag, "connect ok")
    except OSError as e:
        print(tag, "connect", en(e.errno), "prompt", time.time() - t < 3)
    s.close()


def udp_refused(host, port, tag):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(SOL_IP, IP_RECVERR, 1)
    s.sendto(b"x", (host, port))
    print(tag, "recverr poll", pollerr(s))
    errq(tag, s, socket.AF_INET, host)
    s.close()


udp(socket.AF_INET, H4, SOL_IP, IP_RECVERR, "udp4")
tcp(socket.AF_INET, H4, PORT, "tcp4")
if H6 != "-":
    udp(socket.AF_INET6, H6, SOL_IPV6, IPV6_RECVERR, "udp6")
    tcp(socket.AF_INET6, H6, PORT, "tcp6")
if GUEST:
    # restrict=loopback: TCP is reset at once, UDP "administratively prohibited".
    tcp(socket.AF_INET, "192.0.2.1", 80, "restricted-tcp")
    udp_refused("192.0.2.1", 9, "restricted-udp")
    # An on-link address nobody answers ARP for: Linux fails the neighbour after 3 probes
    # 1 s apart and the connect with EHOSTUNREACH (arp_error_report), not after the SYN retries.
    # The same for IPv6 with NDP (ndisc_error_report: address unreachable).
    for fam, addr, tag in ((socket.AF_INET, "10.0.2.77", "neigh-tcp"), (socket.AF_INET6, "fd00::77", "neigh-tcp6")):
        if fam == socket.AF_INET6 and H6 == "-":
            continue
        s = socket.socket(fam, socket.SOCK_STREAM)
        t = time.time()
        try:
            s.connect((addr, 80))
            print(tag, "connect ok")
        except OSError as e:
            print(tag, "connect", en(e.errno), "after 2-5 s", 2 <= time.time() - t <= 5)
        s.close()
print("ICMP-ERR-DONE")
