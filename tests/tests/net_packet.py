# AF_PACKET on eth0 (ifindex 2) by raw syscalls, for the net gate (tests/tests/net.rs): no
# interface ioctls needed. Sends one DHCP DISCOVER (to the backend's own DHCP server) and nothing else.
import ctypes, socket, struct, os, sys, select
libc = ctypes.CDLL(None, use_errno=True)
AF_PACKET, SOCK_RAW, SOCK_DGRAM = 17, 3, 2
ETH_P_IP, ETH_P_ALL = 0x0800, 0x0003
IFINDEX = 2
def sll(proto, ifindex, addr=b""):
    return struct.pack("=HHiHBB8s", AF_PACKET, socket.htons(proto), ifindex, 0, 0, len(addr), addr)
def check(r, what):
    if r < 0:
        e = ctypes.get_errno(); print("FAIL", what, os.strerror(e)); sys.exit(1)
    return r
def psock(ty, proto):
    fd = check(libc.socket(AF_PACKET, ty, socket.htons(proto)), "socket")
    a = sll(proto, IFINDEX)
    check(libc.bind(fd, a, len(a)), "bind")
    return fd
def attach(fd, prog):
    ins = b"".join(struct.pack("=HBBI", *i) for i in prog)
    buf = ctypes.create_string_buffer(ins, len(ins))
    fprog = struct.pack("=HxxxxxxQ", len(prog), ctypes.addressof(buf))
    check(libc.setsockopt(fd, 1, 26, fprog, len(fprog)), "SO_ATTACH_FILTER")
    return buf
UDHCPC = [(0x30,0,0,9),(0x15,0,6,17),(0x28,0,0,6),(0x45,4,0,0x1fff),(0xb1,0,0,0),(0x48,0,0,2),(0x15,0,1,68),(0x06,0,0,0x7fffffff),(0x06,0,0,0)]
d = psock(SOCK_DGRAM, ETH_P_IP)
keep = attach(d, UDHCPC)
check(libc.setsockopt(d, 263, 8, struct.pack("i", 1), 4), "PACKET_AUXDATA")
raw = psock(SOCK_RAW, ETH_P_ALL)
none = psock(SOCK_RAW, ETH_P_ALL)
keep2 = attach(none, [(0x06,0,0,0)])
name = ctypes.create_string_buffer(32); ln = ctypes.c_uint(32)
check(libc.getsockname(d, name, ctypes.byref(ln)), "getsockname")
fam, proto, ifi, hat, pkt, hal, addr = struct.unpack("=HHiHBB8s", name.raw[:20])
print("NAME ifindex=%d hatype=%d halen=%d addr=%s len=%d" % (ifi, hat, hal, addr[:hal].hex(":"), ln.value))
xid = 0x5a5a1234; mac = bytes.fromhex("525400123456")
bootp = struct.pack("!BBBBIHH4s4s4s4s16s64s128s", 1,1,6,0, xid, 0, 0, b"\0"*4,b"\0"*4,b"\0"*4,b"\0"*4, mac+b"\0"*10, b"", b"")
bootp += bytes([99,130,83,99, 53,1,1, 55,3,1,3,6, 255])
udp = struct.pack("!HHHH", 68, 67, 8+len(bootp), 0) + bootp
def csum(b):
    if len(b)%2: b+=b"\0"
    s=sum(struct.unpack("!%dH"%(len(b)//2), b))
    while s>>16: s=(s&0xffff)+(s>>16)
    return (~s)&0xffff
ip = struct.pack("!BBHHHBBH4s4s", 0x45,0,20+len(udp),0,0,64,17,0,b"\0"*4,b"\xff"*4)
ip = ip[:10]+struct.pack("!H",csum(ip))+ip[12:]
pkt_ = ip + udp
dst = sll(ETH_P_IP, IFINDEX, b"\xff"*6)
check(libc.sendto(d, pkt_, len(pkt_), 0, dst, len(dst)), "sendto")
s = socket.socket(fileno=d)
s.settimeout(5)
while True:
    data, anc, flags, src = s.recvmsg(4096, 1024)
    if len(data) > 28+240 and struct.unpack("!I", data[28+4:28+8])[0] == xid:
        break
yi = socket.inet_ntoa(data[28+16:28+20])
aux = [a for a in anc if a[0] == 263 and a[1] == 8]
print("OFFER yiaddr=%s pkttype=%d hatype=%d aux=%d" % (yi, src[2], src[3], len(aux)))
r = socket.socket(fileno=raw); r.settimeout(2)
seen_out = seen_in = False
try:
    while not (seen_out and seen_in):
        f, _, _, a = r.recvmsg(4096)
        if len(f) > 42+240 and f[12:14] == b"\x08\x00" and struct.unpack("!I", f[42+4:42+8])[0] == xid:
            if a[2] == 4 and f[6:12] == mac: seen_out = True
            if a[2] != 4 and f[42] == 2: seen_in = True
except socket.timeout:
    pass
print("TAP outgoing=%s incoming=%s" % (seen_out, seen_in))
n = socket.socket(fileno=none); n.setblocking(False)
try:
    n.recv(4096); print("NONE got a frame")
except BlockingIOError:
    print("NONE empty")
# SO_BINDTODEVICE (accepted and reported; packet sockets go by their bind device, as Linux).
b = socket.socket(fileno=raw)
b.setsockopt(1, 25, b"eth0\0")
got = b.getsockopt(1, 25, 16).rstrip(b"\0").decode()
try:
    b.setsockopt(1, 25, b"nosuch0\0"); bad = "accepted"
except OSError as e:
    bad = os.strerror(e.errno)
# SO_GET_FILTER: the instruction count, then the program back.
g = socket.socket(fileno=d)
# (Linux counts instructions, not bytes, in optlen.)
cnt = len(g.getsockopt(1, 26, 9 * 8))
print("BINDTODEVICE %s nosuch=%s GET_FILTER %d" % (got, bad, cnt))
print("PKT-DONE")
