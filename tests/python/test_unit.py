# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of pfi_trainer (standard library only): the protocol lines it
encodes, addresses, the bounded queue and its drop counts, delivery to a
small HTTP server on a Unix socket (a stand-in for the agent's endpoint:
its path, one line per request), the agent away and back, the cap file's
parsing and the log line on a change. Expected values are worked by hand
in each test."""

import http.server
import json
import os
import socketserver
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import pfi_trainer  # noqa: E402
from pfi_trainer import _http  # noqa: E402


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class Agent:
    """POST /v1/jobs/JOB/throughput on a Unix socket: records (arrival
    time, job, body); answers `status`; waits on `gate` first when set."""

    def __init__(self, path, status=200):
        self.path, self.status = path, status
        self.got = []
        self.gate = None
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def address_string(self):
                return "unix"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                if outer.gate is not None:
                    outer.gate.wait(30)
                pre, suf = "/v1/jobs/", "/throughput"
                job = self.path[len(pre):-len(suf)] if self.path.startswith(pre) and \
                    self.path.endswith(suf) else None
                outer.got.append((time.time(), job, body))
                code = outer.status if job else 404
                msg = b'{"job":"x","tokens_per_s":null}\n' if code == 200 else \
                    b'{"error":"no GPU of node n1 runs job %s"}\n' % (job or "?").encode()
                self.send_response(code)
                self.send_header("Content-Length", str(len(msg)))
                self.end_headers()
                self.wfile.write(msg)

        self.srv = _Server(path, H)
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        if self.gate is not None:
            self.gate.set()
        self.srv.shutdown()
        self.srv.server_close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


def read_lines(path):
    with open(path) as f:
        return [json.loads(x) for x in f]


def wait_for(pred, timeout=15.0):
    """A bound against hangs, not a timing check."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


class TestEncode(unittest.TestCase):
    def test_file_line_relative_to_t(self):
        rec = {"t": 1000.0, "tokens": 4096.0, "step": 7, "loss": 2.5, "phase": "training",
               "pause_at": 1012.5, "pause_len": 40.0, "end_at": None}
        # In a file the pause is 12.5 s after the line's t, whenever written.
        d = json.loads(pfi_trainer.encode_report(rec, now=1003.0, relative_to_t=True))
        self.assertEqual(d, {"t": 1000.0, "tokens": 4096, "step": 7, "loss": 2.5,
                             "phase": "training", "next_pause_s": 12.5,
                             "next_pause_len_s": 40.0})

    def test_post_relative_to_arrival(self):
        rec = {"t": 1000.0, "tokens": 10.0, "step": 1, "phase": "training",
               "pause_at": 1012.5, "pause_len": 40.0, "end_at": 1100.0}
        # Posted at 1003: the agent counts from arrival, 9.5 s and 97 s.
        d = json.loads(pfi_trainer.encode_report(rec, now=1003.0, relative_to_t=False))
        self.assertEqual(d["next_pause_s"], 9.5)
        self.assertEqual(d["end_in_s"], 97.0)
        # A pause already due is 0, never negative (the agent refuses < 0).
        d = json.loads(pfi_trainer.encode_report(rec, now=1020.0, relative_to_t=False))
        self.assertEqual(d["next_pause_s"], 0.0)

    def test_not_finite_left_out(self):
        rec = {"t": 5.0, "tokens": float("nan"), "step": 3, "loss": float("inf"),
               "phase": "checkpoint", "pause_at": float("nan"), "pause_len": 1.0}
        d = json.loads(pfi_trainer.encode_report(rec, now=5.0, relative_to_t=True))
        self.assertEqual(d, {"t": 5.0, "step": 3, "phase": "checkpoint"})


class TestAddress(unittest.TestCase):
    def test_forms(self):
        A = _http.Address
        self.assertEqual(pfi_trainer.parse_address("unix:/run/pfi/tput.sock"),
                         A(unix="/run/pfi/tput.sock"))
        self.assertEqual(pfi_trainer.parse_address("/run/pfi/tput.sock"),
                         A(unix="/run/pfi/tput.sock"))
        self.assertEqual(pfi_trainer.parse_address("127.0.0.1:9402"),
                         A(host="127.0.0.1", port=9402))
        self.assertEqual(pfi_trainer.parse_address("http://[::1]:80/"), A(host="::1", port=80))
        for bad in ("", "unix:", "localhost", "h:0", "h:70000", "h:x"):
            with self.assertRaises(ValueError, msg=bad):
                pfi_trainer.parse_address(bad)

    def test_env(self):
        env = {"PFI_TPUT_ADDR": "unix:/nonexistent/s", "SLURM_JOB_ID": "1234"}
        r = pfi_trainer.Reporter(env=env, interval_s=0)
        self.assertEqual(r.job, "slurm-1234")
        r.close(timeout=0.1)
        env["PFI_JOB"] = "jobA"
        r = pfi_trainer.Reporter(env=env, interval_s=0)
        self.assertEqual(r.job, "jobA")
        r.close(timeout=0.1)
        # From the environment, a bad value never stops the job: logged,
        # left out. The same in the code's arguments is a ValueError.
        with self.assertLogs("pfi_trainer", level="ERROR") as logs:
            r = pfi_trainer.Reporter(env={"PFI_TPUT_ADDR": "unix:/x"})
            self.assertFalse(r.active)
            r = pfi_trainer.Reporter(env={"PFI_TPUT_ADDR": "host:99999", "PFI_JOB": "j",
                                          "PFI_TPUT_INTERVAL": "-1", "PFI_CAP_ADDR": "x"})
            self.assertFalse(r.active)
            self.assertEqual(r.interval_s, 1.0)
        text = "\n".join(logs.output)
        for want in ("needs the job's name", "port '99999' is not 1..65535", "PFI_TPUT_INTERVAL",
                     "PFI_CAP_ADDR"):
            self.assertIn(want, text)
        with self.assertRaises(ValueError):
            pfi_trainer.Reporter(addr="unix:/x", use_env=False)
        with self.assertRaises(ValueError):
            pfi_trainer.Reporter(addr="h:0", job="j", use_env=False)
        # Another rank than 0: nothing sent, nothing started.
        r = pfi_trainer.Reporter(env=dict(env, RANK="3"))
        self.assertFalse(r.active)
        r.close()
        r = pfi_trainer.Reporter(env=dict(env, SLURM_PROCID="1"))
        self.assertFalse(r.active)
        r.close()


class TestDelivery(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.sock = os.path.join(self.d, "tput.sock")

    def tearDown(self):
        for f in os.listdir(self.d):
            os.unlink(os.path.join(self.d, f))
        os.rmdir(self.d)

    def test_posts(self):
        ag = Agent(self.sock)
        try:
            r = pfi_trainer.Reporter(addr="unix:" + self.sock, job="slurm-7", interval_s=0,
                                     use_env=False)
            for k in range(1, 6):
                r.step(tokens=1000, loss=3.0 - 0.1 * k)
            r.announce(30, 40)
            t_ann = time.time()
            with r.checkpoint():
                pass
            r.close()
            st = r.stats
            self.assertEqual((st["dropped"], st["tokens"], st["step"]), (0, 5000.0, 5))
            self.assertEqual(st["sent"], st["queued"])
            self.assertEqual(len(ag.got), st["queued"])
            self.assertTrue(all(j == "slurm-7" for _, j, _ in ag.got))
            lines = [json.loads(b) for _, _, b in ag.got]
            self.assertTrue(all(b.count(b"\n") == 0 for _, _, b in ag.got))
            self.assertEqual([x["tokens"] for x in lines[:5]], [1000, 2000, 3000, 4000, 5000])
            self.assertAlmostEqual(lines[4]["loss"], 2.5)
            ann = [(t, x) for (t, _, _), x in zip(ag.got, lines) if "next_pause_s" in x]
            self.assertTrue(ann)
            t, x = ann[0]
            # Relative to arrival: 30 s after announce() less the time in between.
            self.assertAlmostEqual(x["next_pause_s"], 30 - (t - t_ann), delta=0.1)
            self.assertEqual(x["next_pause_len_s"], 40)
            # The announcement, the pause, training again, close()'s last one.
            self.assertEqual([x["phase"] for x in lines[-4:]],
                             ["training", "checkpoint", "training", "training"])
            self.assertIn("next_pause_s", lines[-4])
            # The pause begun: no announcement after it.
            self.assertFalse([x for x in lines[-3:] if "next_pause_s" in x])
        finally:
            ag.stop()

    def test_queue_full_drops_and_counts(self):
        ag = Agent(self.sock)
        ag.gate = threading.Event()  # the agent hangs on every request
        try:
            r = pfi_trainer.Reporter(addr="unix:" + self.sock, job="j", interval_s=0,
                                     queue_size=4, timeout_s=30, use_env=False)
            worst = 0.0
            for _ in range(200):
                t0 = time.monotonic()
                r.step(tokens=1)
                worst = max(worst, time.monotonic() - t0)
            st = r.stats
            # 200 reports: at most the queue (4) plus the one in flight taken.
            self.assertEqual(st["queued"] + st["dropped"], 200)
            self.assertLessEqual(st["queued"], 5)
            self.assertGreaterEqual(st["dropped"], 195)
            # Never waiting on the agent (its request is held 30 s).
            self.assertLess(worst, 0.5)
            ag.gate.set()
            self.assertTrue(r.flush(15))
            self.assertEqual(len(ag.got), st["queued"])
            r.close()
        finally:
            ag.stop()

    def test_agent_away_then_back(self):
        with self.assertLogs("pfi_trainer", level="INFO") as logs:
            r = pfi_trainer.Reporter(addr="unix:" + self.sock, job="j", interval_s=0.02,
                                     use_env=False)
            for _ in range(25):
                r.step(tokens=10)
                time.sleep(0.02)
            self.assertTrue(r.flush(15))
            lost = r.stats["lost"]["agent unix:%s" % self.sock]
            self.assertEqual(lost, r.stats["queued"])
            self.assertGreater(lost, 0)
            self.assertEqual(r.stats["sent"], 0)
            ag = Agent(self.sock)
            try:
                def delivered():
                    r.step(tokens=10)
                    return len(ag.got) > 0
                self.assertTrue(wait_for(delivered, 15))
                r.close()
                # Cumulative tokens: the first delivered line carries all.
                first = json.loads(ag.got[0][2])
                self.assertGreater(first["tokens"], 250)
            finally:
                ag.stop()
        text = "\n".join(logs.output)
        self.assertIn("does not answer", text)
        self.assertIn("answers again", text)

    def test_refused(self):
        ag = Agent(self.sock, status=404)
        try:
            with self.assertLogs("pfi_trainer", level="WARNING") as logs:
                r = pfi_trainer.Reporter(addr=self.sock, job="slurm-9", interval_s=0,
                                         use_env=False)
                for _ in range(3):
                    r.step(tokens=1)
                r.close()
            self.assertEqual(r.stats["lost"]["agent unix:%s" % self.sock], 4)
            # One warning for the status, with the agent's message.
            refused = [x for x in logs.output if "refused" in x]
            self.assertEqual(len(refused), 1)
            self.assertIn("HTTP 404 no GPU of node n1 runs job slurm-9", refused[0])
        finally:
            ag.stop()

    def test_file(self):
        path = os.path.join(self.d, "tput.jsonl")
        with open(path, "w") as f:
            f.write("")
        r = pfi_trainer.Reporter(path=path, interval_s=0, use_env=False)
        r.step(samples=32)
        r.step(samples=32)
        r.flush()
        # pfi sweep truncates the file between runs: appends go on at 0.
        with open(path, "w"):
            pass
        r.step(samples=32)
        r.close()
        lines = read_lines(path)
        self.assertEqual([x["tokens"] for x in lines], [96, 96])
        self.assertEqual(lines[0]["step"], 3)


    def test_reports_through_a_pause(self):
        # No step during a pause: the thread repeats the state every
        # interval (0.05 s: about 10 lines in 0.5 s; at least 3 asked), the
        # same tokens (a paused period) and the phase.
        path = os.path.join(self.d, "p.jsonl")
        r = pfi_trainer.Reporter(path=path, interval_s=0.05, use_env=False)
        r.step(tokens=64)
        with r.checkpoint():
            time.sleep(0.5)
        r.close()
        lines = read_lines(path)
        ck = [x for x in lines if x["phase"] == "checkpoint"]
        self.assertGreaterEqual(len(ck), 3, lines)
        self.assertTrue(all(x["tokens"] == 64 and x["step"] == 1 for x in ck))
        ts = [x["t"] for x in ck]
        self.assertEqual(ts, sorted(ts))
        self.assertEqual(lines[-1]["phase"], "training")


class TestCounts(unittest.TestCase):
    def test_step_values(self):
        class Scalar:  # as a 0-d tensor: float() works, it is no int
            def __float__(self):
                return 48.0
        r = pfi_trainer.Reporter(use_env=False)
        r.step(tokens=Scalar())
        r.step(tokens=16)
        r.step(tokens=float("nan"))
        r.step(tokens="x")
        r.step(samples=-3)
        # 48 + 16; NaN, text and a negative count add nothing; 5 steps.
        self.assertEqual((r.stats["tokens"], r.stats["step"]), (64.0, 5))
        r.close()


class TestSchedule(unittest.TestCase):
    def test_announced_from_steps(self):
        now = [1000.0]
        mono = [0.0]
        d = tempfile.mkdtemp()
        path = os.path.join(d, "t.jsonl")
        r = pfi_trainer.Reporter(path=path, interval_s=0, use_env=False,
                                 clock=lambda: now[0], monotonic=lambda: mono[0])
        r.schedule("checkpoint", every_steps=10, expected_s=40, lead_s=3.0)
        # Steps of exactly 0.5 s: after step k, the pause (after step 10)
        # is (10 - k) x 0.5 s away; announced once that is <= 3 s (k >= 4).
        for k in range(1, 11):
            with r.train_step(tokens=100):
                mono[0] += 0.5
                now[0] += 0.5
        with r.checkpoint():
            mono[0] += 40
            now[0] += 40
        r.close()
        lines = read_lines(path)
        got = [(x["step"], x.get("next_pause_s")) for x in lines if x["phase"] == "training"]
        want = [(k, None if k < 4 else (10 - k) * 0.5) for k in range(1, 11)]
        self.assertEqual(got[:10], want)
        self.assertEqual(lines[10]["phase"], "checkpoint")
        self.assertTrue(all(x.get("next_pause_len_s") in (None, 40) for x in lines))
        os.unlink(path)
        os.rmdir(d)


CAP = {"v": 1, "node": "n1", "t": 1764590000.5, "mode": "tracking", "reason": "cut",
       "since": 1764589990.1, "seq": 42, "event": "oadr-1764589980-3f2a",
       "event_end": 1764601980.0,
       "gpus": [{"gpu": 0, "cap_w": 512.0, "enforced_w": 512.0, "default_w": 700.0,
                 "min_w": 200.0, "max_w": 700.0, "job": "jobA"},
                {"gpu": 1, "cap_w": 500.0, "enforced_w": 500.0, "default_w": 700.0,
                 "min_w": 200.0, "max_w": 700.0, "job": "jobA"},
                {"gpu": 2, "cap_w": 700.0, "enforced_w": 700.0, "default_w": 700.0,
                 "min_w": 200.0, "max_w": 700.0, "job": ""}],
       "jobs": [{"job": "jobA", "gpus": [0, 1], "cap_w": 506.0, "default_w": 700.0,
                 "share_of_default": 0.723, "max_loss": 0.25}]}


class TestCap(unittest.TestCase):
    def test_parse(self):
        c = pfi_trainer.parse_cap(json.dumps(CAP), "jobA")
        self.assertEqual((c.job, c.gpus, c.cap_w, c.default_w, c.max_loss),
                         ("jobA", [0, 1], 506.0, 700.0, 0.25))
        self.assertEqual((c.reason, c.event, c.mode), ("cut", "oadr-1764589980-3f2a", "tracking"))
        self.assertTrue(c.capped)
        self.assertIn("capped at 506 W per GPU (72 % of its 700 W default)", c.describe())
        self.assertIn("reason cut, grid event oadr-1764589980-3f2a", c.describe())
        # A job the agent does not name: the node's GPUs, (512+500+700)/3.
        c = pfi_trainer.parse_cap(CAP, "other")
        self.assertIsNone(c.job)
        self.assertAlmostEqual(c.cap_w, 1712.0 / 3)
        self.assertEqual(c.gpus, [0, 1, 2])

    def test_bad(self):
        for mutate, field in ((lambda d: d.pop("reason"), "reason"),
                              (lambda d: d.update(v=2), "'v'"),
                              (lambda d: d.update(event_end="x"), "event_end"),
                              (lambda d: d["jobs"][0].update(cap_w="x"), "jobs.cap_w")):
            d = json.loads(json.dumps(CAP))
            mutate(d)
            with self.assertRaises(ValueError) as cm:
                pfi_trainer.parse_cap(d, "jobA", where="cap.json")
            self.assertIn(field, str(cm.exception))
            self.assertIn("cap.json", str(cm.exception))
        with self.assertRaises(ValueError):
            pfi_trainer.parse_cap(b"{", "jobA")

    def test_logged_on_change(self):
        d = tempfile.mkdtemp()
        path = os.path.join(d, "cap.json")

        def put(obj):
            with open(path + ".tmp", "w") as f:
                json.dump(obj, f)
            os.rename(path + ".tmp", path)

        idle = json.loads(json.dumps(CAP))
        idle.update(mode="idle", reason="none", event="", event_end=None)
        idle["jobs"][0].update(cap_w=700.0, share_of_default=1.0)
        put(idle)
        seen = []
        with self.assertLogs("pfi_trainer", level="INFO") as logs:
            r = pfi_trainer.Reporter(job="jobA", cap=pfi_trainer.CapSource(path=path),
                                     cap_poll_s=0.05, use_env=False)
            r.on_cap_change(seen.append)
            self.assertTrue(wait_for(lambda: r.cap() is not None))
            put(CAP)
            self.assertTrue(wait_for(lambda: r.cap().reason == "cut"))
            time.sleep(0.3)  # more reads of the same state: no more lines
            r.close()
        # The listener may have come before the first read or after it.
        self.assertIn([x.reason for x in seen], (["none", "cut"], ["cut"]))
        lines = [x for x in logs.output if "jobA" in x]
        self.assertEqual(len(lines), 2, logs.output)
        self.assertTrue(lines[0].startswith("INFO:pfi_trainer:pfi: job jobA at 700 W"))
        self.assertTrue(lines[1].startswith("WARNING:pfi_trainer:pfi: job jobA capped at 506 W"))
        self.assertIn("oadr-1764589980-3f2a", lines[1])
        os.unlink(path)
        os.rmdir(d)


class TestCapFuzz(unittest.TestCase):
    """Deterministic mutations of the agent's object (types swapped, fields
    dropped, bytes flipped): parse_cap returns a CapInfo or raises
    ValueError, nothing else, and never a NaN or an infinite cap."""

    def test_mutations(self):
        import copy
        import random
        rnd = random.Random(29)
        values = [None, True, 0, -1, 1e308, float("nan"), "x", "", [], [1, "a"], {}, {"gpu": "x"},
                  [{"cap_w": "x"}], [{"job": "jobA", "gpus": 5}], [None]]
        text = json.dumps(CAP)
        n = 0
        for i in range(3000):
            d = json.loads(text)
            for _ in range(rnd.randint(1, 3)):
                where = d
                if rnd.random() < 0.5:
                    key = rnd.choice(["gpus", "jobs"])
                    lst = d[key] if isinstance(d.get(key), list) else []
                    if lst and isinstance(lst[0], dict):
                        where = lst[rnd.randrange(len(lst))]
                k = rnd.choice(list(where) or ["v"])
                if rnd.random() < 0.2:
                    where.pop(k, None)
                else:
                    where[k] = copy.deepcopy(rnd.choice(values))
            body = json.dumps(d)
            if i % 3 == 0:
                b = bytearray(body.encode())
                b[rnd.randrange(len(b))] = rnd.randrange(256)
                body = bytes(b)
            try:
                c = pfi_trainer.parse_cap(body, "jobA")
            except ValueError:
                continue
            n += 1
            for v in (c.cap_w, c.default_w, c.share):
                self.assertTrue(v is None or (v == v and abs(v) != float("inf")), (body, v))
            c.describe()
            c.key()
        self.assertGreater(n, 100)


if __name__ == "__main__":
    unittest.main()
