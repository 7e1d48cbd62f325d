#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""A mock OpenADR 3.1 VTN for pfi's tests, written from the OpenADR 3.1.0
API definition (openadr3.yaml, OpenADR Alliance, Apache-2.0): the same paths
and JSON shapes, on loopback, in memory.

Implemented: GET /auth/server, POST /auth/token (OAuth2 client credentials,
application/x-www-form-urlencoded), GET/POST /programs, GET/PUT/DELETE
/programs/{id}, GET/POST /events (programID, skip, limit filters),
GET/PUT/DELETE /events/{id}, GET/POST /reports, GET/POST /subscriptions and
GET/PUT/DELETE /subscriptions/{id}, with webhook notifications ({objectType,
operation, object}) to callbackUrl carrying the subscription's bearerToken
as "Authorization: Bearer <bearerToken>". Roles: the VEN client may read programs and
events and write reports and subscriptions; the BL client may write programs
and events and read reports. Bodies are checked for the fields the spec
requires (400 with a problem object otherwise); a missing, unknown or
expired token is 401.

Test-only knobs, under /_mock/ (not part of OpenADR; no token needed):
  POST /_mock/raw-event      the body is served verbatim as one more element
                             of every GET /events array (a malformed event)
  POST /_mock/expire-tokens  every issued token expires now
  POST /_mock/fail-next      body {"status": N, "count": k}: the next k API
                             answers are HTTP N
  POST /_mock/token-url      body {"url": U}: GET /auth/server answers
                             tokenURL U (null: its own /auth/token again)
  GET  /_mock/log            the requests seen, as JSON: t (Unix time),
                             method, path, auth
                             (an Authorization header), bearer (its token),
                             status (of the answer), issued (the token a
                             POST /auth/token gave)

  POST /_mock/fail-echo      body {"count": k}: (--reference) the next k
                             callback checks fail, as if the callback had
                             answered another value

--reference behaves as the OpenADR Alliance's 3.1.0 reference VTN was seen
to: POST /subscriptions first calls GET <callbackUrl>/echo?echo=test_echo
for each callbackUrl and, unless the answer is 200 with the body
"test_echo", answers 500 "Echo issue" while keeping the subscription;
webhook bodies are a JSON string holding the notification, its keys
snake_case at every depth (object_type, operation, object, program_id,
interval_period...); a missing token is 401 but an unknown or expired one
403; tokens come without expires_in; roles are not enforced (the VEN client
may write programs and events); createdDateTime and modificationDateTime
are "YYYY-MM-DD HH:MM:SS" (UTC, no zone).

Usage: mock_vtn.py --port-file F [--ven ID:SECRET] [--bl ID:SECRET]
                   [--token-ttl S] [--prefix /openadr3] [--reference]
                   [--tls-cert PEM --tls-key PEM]
Binds 127.0.0.1 on a free port and writes the port to F; with --tls-cert,
serves HTTPS.
"""
import argparse
import datetime
import json
import re
import secrets
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATE = {
    "programs": [], "events": [], "reports": [], "subscriptions": [],
    "raw_events": [], "tokens": {}, "fail": None, "log": [], "next_id": 1,
    "fail_echo": 0, "token_url": None,
}
LOCK = threading.Lock()
ARGS = None


def now_iso():
    fmt = "%Y-%m-%d %H:%M:%S" if ARGS.reference else "%Y-%m-%dT%H:%M:%S.%fZ"
    return datetime.datetime.now(datetime.timezone.utc).strftime(fmt)


def snake(o):
    """camelCase keys -> snake_case, at every depth (programID ->
    program_id)."""
    if isinstance(o, list):
        return [snake(x) for x in o]
    if not isinstance(o, dict):
        return o
    out = {}
    for k, v in o.items():
        k2 = re.sub(r"ID$", "Id", k)
        k2 = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), k2)
        out[k2] = snake(v)
    return out


def echo_ok(url):
    """The reference VTN's callback check: GET <url>/echo?echo=test_echo."""
    with LOCK:
        if STATE["fail_echo"] > 0:
            STATE["fail_echo"] -= 1
            return False
    host = urllib.parse.urlparse(url).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        return False
    try:
        with urllib.request.urlopen(url + "/echo?echo=test_echo",
                                    timeout=2) as r:
            return r.status == 200 and r.read() == b"test_echo"
    except Exception:
        return False


def new_id():
    with LOCK:
        i = STATE["next_id"]
        STATE["next_id"] += 1
    return str(i)


def problem(status, title, detail=""):
    return status, {"type": "about:blank", "title": title, "status": status,
                    "detail": detail}


def notify(object_type, operation, obj):
    for sub in list(STATE["subscriptions"]):
        if sub.get("programID") and obj.get("programID") not in (
                None, sub.get("programID")):
            continue
        for oo in sub.get("objectOperations", []):
            if object_type not in oo.get("objects", []):
                continue
            if operation not in oo.get("operations", []):
                continue
            note = {"objectType": object_type, "operation": operation,
                    "object": obj}
            if ARGS.reference:
                body = json.dumps(json.dumps(snake(note))).encode()
            else:
                body = json.dumps(note).encode()
            req = urllib.request.Request(oo["callbackUrl"], data=body,
                                         method="POST")
            req.add_header("Content-Type", "application/json")
            if oo.get("bearerToken"):
                req.add_header("Authorization",
                               "Bearer " + oo["bearerToken"])
            host = urllib.parse.urlparse(oo["callbackUrl"]).hostname
            if host not in ("127.0.0.1", "localhost", "::1"):
                continue  # loopback only, whatever a client registers
            try:
                urllib.request.urlopen(req, timeout=2).read()
            except Exception:
                pass


def check_required(body, fields):
    if not isinstance(body, dict):
        return "body is not a JSON object"
    for f in fields:
        if f not in body or body[f] is None:
            return "missing required field '%s'" % f
    return None


def check_report(body):
    err = check_required(body, ["eventID", "clientName", "resources"])
    if err:
        return err
    if not isinstance(body["resources"], list):
        return "resources is not an array"
    for i, r in enumerate(body["resources"]):
        e = check_required(r, ["resourceName", "intervals"])
        if e:
            return "resources[%d]: %s" % (i, e)
        for j, iv in enumerate(r["intervals"]):
            e = check_required(iv, ["id", "payloads"])
            if e:
                return "resources[%d].intervals[%d]: %s" % (i, j, e)
            for k, p in enumerate(iv["payloads"]):
                e = check_required(p, ["type", "values"])
                if e:
                    return "resources[%d].intervals[%d].payloads[%d]: %s" % (
                        i, j, k, e)
                if not isinstance(p["values"], list):
                    return "payload values is not an array"
    for d in body.get("payloadDescriptors") or []:
        if d.get("objectType") != "REPORT_PAYLOAD_DESCRIPTOR":
            return "payloadDescriptors: objectType must be " \
                   "REPORT_PAYLOAD_DESCRIPTOR"
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, status, obj=None, raw=None):
        if getattr(self, "entry", None) is not None:
            self.entry["status"] = status
        data = raw if raw is not None else (
            b"" if obj is None else json.dumps(obj).encode())
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > 1 << 20:
            return None
        return self.rfile.read(n) if n else b""

    def role(self):
        h = self.headers.get("Authorization") or ""
        if not h.startswith("Bearer "):
            return None
        tok = STATE["tokens"].get(h[7:])
        if not tok or tok[1] <= time.time():
            return None
        return tok[0]

    def route(self, method):
        url = urllib.parse.urlparse(self.path)
        path = url.path
        q = urllib.parse.parse_qs(url.query)
        raw = self.body()
        h = self.headers.get("Authorization") or ""
        self.entry = {"t": time.time(), "method": method, "path": self.path,
                      "auth": bool(h),
                      "bearer": h[7:] if h.startswith("Bearer ") else None}
        with LOCK:
            STATE["log"].append(self.entry)
        if raw is None:
            return self.send(*problem(413, "Payload Too Large"))
        if path.startswith("/_mock/"):
            return self.mock(method, path, raw)
        pre = ARGS.prefix
        if not path.startswith(pre):
            return self.send(*problem(404, "Not Found"))
        path = path[len(pre):] or "/"
        if path == "/auth/server" and method == "GET":
            with LOCK:
                tu = STATE["token_url"]
            if tu:
                return self.send(200, {"tokenURL": tu})
            host = "%s://127.0.0.1:%d" % ("https" if ARGS.tls_cert else "http",
                                          self.server.server_port)
            return self.send(200, {"tokenURL": host + pre + "/auth/token"})
        if path == "/auth/token" and method == "POST":
            return self.token(raw)
        role = self.role()
        if role is None and ARGS.reference and h:
            return self.send(*problem(403, "Forbidden",
                                      "unknown or expired token"))
        if role is None:
            return self.send(*problem(401, "Unauthorized",
                                      "missing, unknown or expired token"))
        with LOCK:
            f = STATE["fail"]
            if f and f["count"] > 0:
                f["count"] -= 1
                return self.send(*problem(f["status"], "Injected failure"))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            return self.send(*problem(400, "Bad Request", "body is not JSON"))
        parts = [p for p in path.split("/") if p]
        if not parts:
            return self.send(*problem(404, "Not Found"))
        coll = parts[0]
        if coll not in ("programs", "events", "reports", "subscriptions"):
            return self.send(*problem(404, "Not Found"))
        writer = {"programs": "bl", "events": "bl", "reports": "ven",
                  "subscriptions": "ven"}[coll]
        if method != "GET" and role != writer and not ARGS.reference:
            return self.send(*problem(403, "Forbidden",
                                      "this client may not write " + coll))
        if coll == "reports" and method == "GET" and role != "bl" and \
                not ARGS.reference:
            return self.send(*problem(403, "Forbidden"))
        items = STATE[coll]
        if len(parts) == 1:
            if method == "GET":
                return self.search(coll, items, q)
            if method == "POST":
                return self.create(coll, body)
            return self.send(*problem(405, "Method Not Allowed"))
        obj = next((o for o in items if o["id"] == parts[1]), None)
        if obj is None:
            return self.send(*problem(404, "Not Found"))
        if method == "GET":
            return self.send(200, obj)
        if method == "DELETE":
            with LOCK:
                items.remove(obj)
            if coll == "events":
                notify("EVENT", "DELETE", obj)
            return self.send(200, obj)
        if method == "PUT":
            if not isinstance(body, dict):
                return self.send(*problem(400, "Bad Request"))
            keep = {k: obj[k] for k in ("id", "createdDateTime",
                                          "objectType")}
            obj.clear()
            obj.update(body)
            obj.update(keep)
            obj["modificationDateTime"] = now_iso()
            if coll == "events":
                notify("EVENT", "UPDATE", obj)
            return self.send(200, obj)
        return self.send(*problem(405, "Method Not Allowed"))

    def token(self, raw):
        form = urllib.parse.parse_qs(raw.decode("utf-8", "replace"))
        g = (form.get("grant_type") or [""])[0]
        cid = (form.get("client_id") or [""])[0]
        sec = (form.get("client_secret") or [""])[0]
        if g != "client_credentials" or not cid or not sec:
            return self.send(400, {"error": "invalid_request"})
        role = None
        if ARGS.ven == cid + ":" + sec:
            role = "ven"
        elif ARGS.bl == cid + ":" + sec:
            role = "bl"
        if role is None:
            return self.send(401, {"error": "invalid_client"})
        tok = secrets.token_hex(16)
        with LOCK:
            STATE["tokens"][tok] = (role, time.time() + ARGS.token_ttl)
            self.entry["issued"] = tok
        ans = {"access_token": tok, "token_type": "Bearer"}
        if not ARGS.reference:
            ans["expires_in"] = int(ARGS.token_ttl)
        return self.send(200, ans)

    def search(self, coll, items, q):
        res = list(items)
        if coll in ("events", "subscriptions") and "programID" in q:
            res = [e for e in res if e.get("programID") == q["programID"][0]]
        if coll == "subscriptions" and "clientName" in q:
            res = [e for e in res
                   if e.get("clientName") == q["clientName"][0]]
        try:
            skip = int((q.get("skip") or ["0"])[0])
            limit = int((q.get("limit") or ["50"])[0])
        except ValueError:
            return self.send(*problem(400, "Bad Request", "skip/limit"))
        if skip < 0 or limit < 0 or limit > 50:
            return self.send(*problem(400, "Bad Request", "skip/limit range"))
        res = res[skip:skip + limit]
        if coll != "events" or not STATE["raw_events"]:
            return self.send(200, res)
        text = json.dumps(res)
        extra = ",".join(r.decode("utf-8", "replace")
                         for r in STATE["raw_events"])
        text = text[:-1] + ("," if res else "") + extra + "]"
        return self.send(200, raw=text.encode())

    def create(self, coll, body):
        need = {"programs": ["programName"], "events": ["programID"],
                "subscriptions": ["clientName", "objectOperations"]}
        err = check_report(body) if coll == "reports" else check_required(
            body, need[coll])
        if err:
            return self.send(*problem(400, "Bad Request", err))
        if coll == "events" and not any(
                p["id"] == body["programID"] for p in STATE["programs"]):
            return self.send(*problem(400, "Bad Request", "unknown programID"))
        obj = dict(body)
        t = now_iso()
        obj.update({"id": new_id(), "createdDateTime": t,
                    "modificationDateTime": t,
                    "objectType": coll.upper().rstrip("S")})
        if coll == "reports":
            obj["clientID"] = ARGS.ven.split(":")[0]
        with LOCK:
            STATE[coll].append(obj)
        if coll == "events":
            notify("EVENT", "CREATE", obj)
        if coll == "subscriptions" and ARGS.reference and not all(
                echo_ok(oo.get("callbackUrl") or "")
                for oo in obj.get("objectOperations") or []):
            # Kept all the same, as the reference VTN does.
            return self.send(*problem(500, "Echo issue",
                                      "the callback did not echo"))
        return self.send(201, obj)

    def mock(self, method, path, raw):
        if path == "/_mock/raw-event" and method == "POST":
            with LOCK:
                STATE["raw_events"].append(raw)
            return self.send(200, {})
        if path == "/_mock/expire-tokens" and method == "POST":
            with LOCK:
                for k, (r, _) in list(STATE["tokens"].items()):
                    STATE["tokens"][k] = (r, 0)
            return self.send(200, {})
        if path == "/_mock/fail-next" and method == "POST":
            with LOCK:
                STATE["fail"] = json.loads(raw)
            return self.send(200, {})
        if path == "/_mock/fail-echo" and method == "POST":
            with LOCK:
                STATE["fail_echo"] = int(json.loads(raw)["count"])
            return self.send(200, {})
        if path == "/_mock/token-url" and method == "POST":
            with LOCK:
                STATE["token_url"] = json.loads(raw).get("url")
            return self.send(200, {})
        if path == "/_mock/log" and method == "GET":
            return self.send(200, STATE["log"])
        return self.send(*problem(404, "Not Found"))

    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def do_PUT(self):
        self.route("PUT")

    def do_DELETE(self):
        self.route("DELETE")


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--ven", default="ven1:ven-secret")
    ap.add_argument("--bl", default="bl1:bl-secret")
    ap.add_argument("--token-ttl", type=float, default=3600)
    ap.add_argument("--prefix", default="/openadr3")
    ap.add_argument("--reference", action="store_true",
                    help="behave as the OpenADR Alliance's 3.1.0 reference "
                         "VTN (see the module's text)")
    ap.add_argument("--lifetime", type=float, default=600,
                    help="exit after this many seconds (a bound for tests)")
    ap.add_argument("--tls-cert",
                    help="serve HTTPS with this PEM certificate (and "
                         "--tls-key)")
    ap.add_argument("--tls-key")
    ARGS = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    if ARGS.tls_cert:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(ARGS.tls_cert, ARGS.tls_key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(ARGS.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_port))
    import os
    os.rename(ARGS.port_file + ".tmp", ARGS.port_file)
    threading.Timer(ARGS.lifetime, srv.shutdown).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
