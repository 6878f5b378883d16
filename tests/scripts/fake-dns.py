#!/usr/bin/env python3
"""A fake DNS server for the network gates: answers every A query with 192.0.2.7 and every
AAAA query with fd00::7 (TTL 60), everything else with an empty answer, on the UDP address
given (default 127.0.0.1:53). It runs inside the guest, on the guest's own loopback: no query
ever leaves it. Exits after `--count` queries (default 100) or 60 s without one."""
import socket
import struct
import sys

addr = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"
port = int(sys.argv[2]) if len(sys.argv) > 2 else 53
count = int(sys.argv[3]) if len(sys.argv) > 3 else 100

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((addr, port))
s.settimeout(60)
print("fake-dns: ready", flush=True)
for _ in range(count):
    try:
        q, peer = s.recvfrom(512)
    except socket.timeout:
        break
    if len(q) < 12:
        continue
    qid, flags, qd = struct.unpack(">HHH", q[:6])
    # The question: labels, then type and class.
    i = 12
    while i < len(q) and q[i] != 0:
        i += q[i] + 1
    question = q[12 : i + 5]
    qtype = struct.unpack(">H", q[i + 1 : i + 3])[0] if i + 3 <= len(q) else 0
    rdata = {1: socket.inet_pton(socket.AF_INET, "192.0.2.7"), 28: socket.inet_pton(socket.AF_INET6, "fd00::7")}.get(qtype)
    an = 1 if rdata else 0
    hdr = struct.pack(">HHHHHH", qid, 0x8180, 1, an, 0, 0)
    ans = b""
    if rdata:
        ans = b"\xc0\x0c" + struct.pack(">HHIH", qtype, 1, 60, len(rdata)) + rdata
    s.sendto(hdr + question + ans, peer)
