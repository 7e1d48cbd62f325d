#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""A hostile HTTP client for the bounded-endpoint tests, loopback only.

Usage: slow_client.py HOST PORT MODE N SECONDS
  MODE idle:    opens N connections and sends nothing
  MODE trickle: opens N connections and sends a never-ending request
                header, one byte a second on each
Runs at most SECONDS, then prints one JSON object: n (connections
opened), closed_s (for each connection the server closed, the seconds it
lived), open (connections still open at the end)."""
import json
import select
import socket
import sys
import time

host, port, mode, n, dur = (sys.argv[1], int(sys.argv[2]), sys.argv[3],
                            int(sys.argv[4]), float(sys.argv[5]))
HEADER = b"GET /v1/status HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100000
t_end = time.monotonic() + dur
conns = []  # [socket, opened, closed or None, bytes sent]
for _ in range(n):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect((host, port))
    except OSError:
        s.close()
        continue
    s.setblocking(False)
    conns.append([s, time.monotonic(), None, 0])
next_send = time.monotonic()
while time.monotonic() < t_end:
    live = [c for c in conns if c[2] is None]
    if not live:
        break
    now = time.monotonic()
    if mode == "trickle" and now >= next_send:
        for c in live:
            try:
                c[0].send(HEADER[c[3]:c[3] + 1])
                c[3] += 1
            except OSError:
                c[2] = now
        next_send = now + 1.0
    r, _, _ = select.select([c[0] for c in live], [], [], 0.1)
    now = time.monotonic()
    for c in live:
        if c[0] in r:
            try:
                data = c[0].recv(4096)
            except OSError:
                data = b""
            if not data:
                c[2] = now
out = {
    "n": len(conns),
    "closed_s": [round(c[2] - c[1], 3) for c in conns if c[2] is not None],
    "open": sum(1 for c in conns if c[2] is None),
}
for c in conns:
    c[0].close()
print(json.dumps(out))
