# SPDX-License-Identifier: GPL-3.0-or-later
"""One HTTP request to a pfi endpoint on a Unix socket or on TCP, with a
bounded timeout on connect, send and receive (standard library only)."""

import http.client
import socket

__all__ = ["Address", "parse_address", "request"]


class Address:
    """Where an endpoint listens: a Unix socket path, or a host and port."""

    __slots__ = ("unix", "host", "port")

    def __init__(self, unix=None, host=None, port=None):
        self.unix, self.host, self.port = unix, host, port

    def __repr__(self):
        return "unix:%s" % self.unix if self.unix else "%s:%d" % (self.host, self.port)

    def __eq__(self, other):
        return isinstance(other, Address) and (self.unix, self.host, self.port) == (
            other.unix, other.host, other.port)


def parse_address(text):
    """An address as pfi-agent's --tput-listen and --cap-listen take it:
    `unix:PATH`, an absolute PATH (a Unix socket), `HOST:PORT` or
    `http://HOST:PORT[/]`. ValueError, naming the text, otherwise."""
    s = (text or "").strip()
    if not s:
        raise ValueError("empty address")
    if s.startswith("unix:"):
        path = s[5:]
        if not path:
            raise ValueError("%r: no socket path after 'unix:'" % text)
        return Address(unix=path)
    if s.startswith("/"):
        return Address(unix=s)
    if s.startswith("http://"):
        s = s[7:].rstrip("/")
    host, sep, port = s.rpartition(":")
    if not sep or not host:
        raise ValueError("%r: expected unix:PATH, /PATH or HOST:PORT" % text)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        p = int(port, 10)
    except ValueError:
        p = -1
    if not 0 < p < 65536:
        raise ValueError("%r: port %r is not 1..65535" % (text, port))
    return Address(host=host, port=p)


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self._path)
        except BaseException:
            s.close()
            raise
        self.sock = s


# A response body larger than this is cut (the endpoints answer a few KiB).
_MAX_BODY = 1 << 20


def request(addr, method, path, body=None, timeout=0.5):
    """(status, body bytes). Raises OSError (refused, no such socket,
    timeout) or http.client.HTTPException; each blocking operation is
    bounded by `timeout` seconds."""
    if addr.unix:
        conn = _UnixConnection(addr.unix, timeout)
    else:
        conn = http.client.HTTPConnection(addr.host, addr.port, timeout=timeout)
    try:
        headers = {"Connection": "close"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read(_MAX_BODY)
        return resp.status, data
    finally:
        conn.close()
