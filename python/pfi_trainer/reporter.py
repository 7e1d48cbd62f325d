# SPDX-License-Identifier: GPL-3.0-or-later
"""The trainer's reporter: throughput, phase and announced pauses to the
node's pfi-agent (POST /v1/jobs/JOB/throughput) and/or to the JSON-lines
file `pfi sweep` reads (docs/throughput-protocol.md); the cap the job runs
under and why, logged when it changes (docs/python.md).

Nothing here blocks or fails the training step: the step only updates
counters and, at most once per interval (or when the phase or an
announcement changes), puts a snapshot in a bounded queue without waiting.
A background thread sends them with short socket timeouts. A full queue
drops the report, an agent that does not answer drops the reports until it
does (retried after 1 s, then up to every 10 s); both are counted."""

import contextlib
import json
import logging
import math
import os
import queue
import threading
import time

from . import _http
from .cap import cap_source_from_env

__all__ = ["Reporter", "PHASES", "encode_report"]

log = logging.getLogger("pfi_trainer")

# The phases of the throughput protocol: training and the pauses.
PHASES = ("training", "startup", "warmup", "evaluation", "checkpoint", "pause")
_PAUSES = ("evaluation", "checkpoint", "pause")
# The agent refuses announcements above this (docs/throughput-protocol.md).
_MAX_S = 1e7


def _finite(x):
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


def encode_report(rec, now, relative_to_t):
    """The protocol line (no newline) of one queued report `rec` (a dict:
    t, tokens, step, loss, phase, pause_at, pause_len, end_at), sent at
    Unix time `now`. An announcement is absolute in `rec`; on the line it
    is seconds after the line's `t` (a file) or after the post arrives
    (`relative_to_t` false: the agent's rule), never negative, at most
    1e7 s. Non-finite numbers are left out."""
    out = {"t": rec["t"]}
    for k in ("tokens", "step", "loss", "tokens_per_s"):
        v = rec.get(k)
        if _finite(v) and (k == "loss" or v >= 0):
            out[k] = int(v) if k != "loss" and float(v).is_integer() and v < 2**53 else v
    if rec.get("phase"):
        out["phase"] = rec["phase"]
    base = rec["t"] if relative_to_t else now
    pa, pl = rec.get("pause_at"), rec.get("pause_len")
    if _finite(pa) and _finite(pl):
        out["next_pause_s"] = round(min(_MAX_S, max(0.0, pa - base)), 3)
        out["next_pause_len_s"] = round(min(_MAX_S, max(0.0, pl)), 3)
    ea = rec.get("end_at")
    if _finite(ea):
        out["end_in_s"] = round(min(_MAX_S, max(0.0, ea - base)), 3)
    return json.dumps(out, separators=(",", ":"), allow_nan=False)


class _FileSink:
    relative_to_t = True

    def __init__(self, path):
        self.path = path
        self.f = None

    def __repr__(self):
        return "file %s" % self.path

    def send(self, line):
        if self.f is None:
            # O_APPEND: `pfi sweep` truncates the file between runs.
            self.f = open(self.path, "a", buffering=1, encoding="utf-8")
        self.f.write(line + "\n")
        return None

    def close(self):
        if self.f is not None:
            try:
                self.f.close()
            except OSError:
                pass
            self.f = None


class _AgentSink:
    relative_to_t = False

    def __init__(self, addr, job, timeout):
        self.addr = _http.parse_address(addr) if isinstance(addr, str) else addr
        self.job = job
        self.timeout = timeout
        self.path = "/v1/jobs/%s/throughput" % job

    def __repr__(self):
        return "agent %r" % (self.addr,)

    def send(self, line):
        """None when taken; else the agent's answer (status, message)."""
        status, body = _http.request(self.addr, "POST", self.path, line.encode(),
                                     timeout=self.timeout)
        if status == 200:
            return None
        try:
            msg = json.loads(body).get("error", "")
        except (ValueError, AttributeError):
            msg = body[:200].decode("utf-8", "replace")
        return status, msg

    def close(self):
        pass


class _SinkState:
    """Delivery state of one sink: the back-off while it does not answer."""

    def __init__(self, sink):
        self.sink = sink
        self.down_since = None
        self.retry_at = 0.0
        self.backoff = 1.0
        self.lost = 0          # reports not delivered to it (away, refused)
        self.lost_in_outage = 0
        self.last_status = None


def _job_from_env(env):
    if env.get("PFI_JOB"):
        return env["PFI_JOB"]
    if env.get("SLURM_JOB_ID"):
        return "slurm-%s" % env["SLURM_JOB_ID"]
    return None


class Reporter:
    """Reports a training job's progress to pfi. Typical use:

        rep = pfi_trainer.Reporter()            # from the environment
        for batch in loader:
            with rep.train_step(tokens=batch.numel()):
                loss = step(batch)
        with rep.checkpoint(expected_s=40):
            torch.save(state, path)
        rep.close()

    Arguments (None: from the environment):
      addr      the agent's throughput endpoint: `unix:PATH`, `/PATH` or
                `HOST:PORT` (PFI_TPUT_ADDR);
      job       the job's name at the agent (PFI_JOB, else
                `slurm-$SLURM_JOB_ID`); needed with an address;
      path      a JSON-lines file (PFI_THROUGHPUT_JSONL, set by pfi sweep);
      cap       a pfi_trainer.CapSource (PFI_CAP_FILE or PFI_CAP_ADDR);
      interval_s  at most one report per this many seconds between phase
                changes and announcements (PFI_TPUT_INTERVAL, default 1);
      queue_size  reports waiting at most (default 64; more are dropped);
      timeout_s   each socket operation's bound (default 0.5);
      cap_poll_s  how often the cap is read (default 5);
      rank      only rank 0 reports (default: RANK, else SLURM_PROCID, else
                0); other ranks
                get a reporter that does nothing;
      use_env   False: take nothing from the environment.
    With neither an address nor a file the reporter keeps counting and
    sends nothing."""

    def __init__(self, addr=None, job=None, path=None, cap=None, interval_s=None,
                 queue_size=64, timeout_s=0.5, cap_poll_s=5.0, rank=None,
                 use_env=True, env=None, clock=time.time,
                 monotonic=time.monotonic):
        env = (os.environ if env is None else env) if use_env else {}
        # What comes from the environment never stops the job: a bad value
        # is logged (ERROR, naming the variable) and left out. Arguments
        # given in the code raise ValueError.
        addr_env, job_env = addr is None, job is None
        if addr is None:
            addr = env.get("PFI_TPUT_ADDR") or None
        if job is None:
            job = _job_from_env(env)
        if path is None:
            path = env.get("PFI_THROUGHPUT_JSONL") or None
        if cap is None and use_env:
            try:
                cap = cap_source_from_env(env)
            except ValueError as e:
                log.error("pfi: PFI_CAP_ADDR: %s; the cap is not read", e)
        if interval_s is None:
            try:
                interval_s = float(env.get("PFI_TPUT_INTERVAL", "1") or 1)
            except ValueError:
                interval_s = float("nan")
            if not (interval_s >= 0 and math.isfinite(interval_s)):
                log.error("pfi: PFI_TPUT_INTERVAL=%r is not a number >= 0; 1 s taken",
                          env.get("PFI_TPUT_INTERVAL"))
                interval_s = 1.0
        if not (interval_s >= 0 and math.isfinite(interval_s)):
            raise ValueError("interval_s: %r is not a number >= 0" % interval_s)
        if rank is None:
            try:
                rank = int(env.get("RANK") or env.get("SLURM_PROCID") or 0)
            except ValueError:
                rank = 0
        agent = None
        if addr and rank == 0:
            try:
                if not job:
                    raise ValueError("an agent address needs the job's name (PFI_JOB, "
                                     "SLURM_JOB_ID or job=)")
                agent = _AgentSink(addr, job, timeout_s)
            except ValueError as e:
                if not (addr_env and (job_env or job)):
                    raise
                log.error("pfi: PFI_TPUT_ADDR=%r: %s; nothing is posted to the agent", addr, e)
        self.job = job
        self.rank = rank
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.cap_poll_s = cap_poll_s
        self._clock = clock
        self._mono = monotonic
        self._lock = threading.Lock()
        self._q = queue.Queue(maxsize=max(1, int(queue_size)))
        self._sinks = []
        self._cap_src = cap if rank == 0 else None
        self._cap = None
        self._cap_error = None
        self._cap_listeners = []
        # Counters (under _lock).
        self._tokens = 0.0
        self._step = 0
        self._loss = None
        self._phase = "training"
        self._pause_at = self._pause_len = self._end_at = None
        self._last_put = -math.inf
        self._queued = 0
        self._dropped = 0
        self._sent = 0
        # Step timing and pause lengths, for the schedules.
        self._step_s = None
        self._pause_s = {}
        self._schedules = []
        self._end_step = None
        self._lead_s = 10.0
        self._closed = False
        if rank == 0:
            if agent is not None:
                self._sinks.append(_SinkState(agent))
            if path:
                self._sinks.append(_SinkState(_FileSink(path)))
        self._stop = threading.Event()
        self._threads = []
        if self._sinks:
            t = threading.Thread(target=self._run, name="pfi-reporter", daemon=True)
            t.start()
            self._threads.append(t)
        if self._cap_src is not None:
            t = threading.Thread(target=self._watch_cap, name="pfi-cap", daemon=True)
            t.start()
            self._threads.append(t)

    def __repr__(self):
        return "Reporter(job=%r, sinks=%s)" % (self.job, [s.sink for s in self._sinks])

    # ---- what the training loop calls ----------------------------------

    @property
    def active(self):
        """True when reports go somewhere (an agent or a file)."""
        return bool(self._sinks)

    def step(self, tokens=0, samples=None, loss=None, steps=1):
        """One optimizer step (or `steps`) done: `tokens` processed by the
        whole job in it (or `samples`: the unit is the job's own; the
        protocol's key stays `tokens`). Never blocks."""
        n = samples if samples is not None else tokens
        try:
            n = float(n)  # an int, or a tensor's item
        except (TypeError, ValueError):
            n = 0.0
        with self._lock:
            if math.isfinite(n) and n > 0:
                self._tokens += float(n)
            self._step += int(steps)
            if loss is not None:
                try:
                    self._loss = float(loss)
                except (TypeError, ValueError):
                    pass
            force = self._phase != "training"
            self._phase = "training"
            had = self._pause_at is not None or self._end_at is not None
            self._check_schedules()
            # A first announcement goes out at once.
            force = force or (not had and (self._pause_at is not None
                                           or self._end_at is not None))
        self._maybe_put(force)

    @contextlib.contextmanager
    def train_step(self, tokens=0, samples=None):
        """Times the step inside it (the schedules' estimate) and counts it
        when it ends without an exception. The step's loss may be given
        afterwards with set_loss()."""
        t0 = self._mono()
        yield self
        dt = self._mono() - t0
        with self._lock:
            self._step_s = dt if self._step_s is None else 0.8 * self._step_s + 0.2 * dt
        self.step(tokens=tokens, samples=samples)

    def set_loss(self, loss):
        try:
            v = float(loss)
        except (TypeError, ValueError):
            return
        with self._lock:
            self._loss = v

    def set_phase(self, phase):
        """The job's phase now: one of PHASES (`eval`, `validation`:
        evaluation). A change is reported at once."""
        phase = {"eval": "evaluation", "validation": "evaluation"}.get(phase, phase)
        if phase not in PHASES:
            raise ValueError("phase %r: expected one of %s" % (phase, ", ".join(PHASES)))
        with self._lock:
            changed = phase != self._phase
            self._phase = phase
            if phase in _PAUSES:
                # The pause announced has begun.
                self._pause_at = self._pause_len = None
        if changed:
            self._maybe_put(True)

    @contextlib.contextmanager
    def pause(self, kind="pause", expected_s=None, announce_s=None):
        """The job pauses (kind `evaluation`, `checkpoint` or `pause`) for
        the block inside it. With `announce_s`, the pause is announced
        that many seconds before and the block entered after them (the job
        waits: use it only when a delay is harmless); `expected_s` its
        expected length (default: the last one of this kind)."""
        if announce_s:
            length = expected_s if expected_s is not None else self._pause_s.get(kind)
            if length is not None:
                self.announce(announce_s, length)
                time.sleep(announce_s)
        self.set_phase(kind)
        t0 = self._mono()
        try:
            yield self
        finally:
            dt = self._mono() - t0
            with self._lock:
                self._pause_s[kind] = dt
                self._phase = "training"
            self._maybe_put(True)

    def checkpoint(self, expected_s=None, announce_s=None):
        """`with rep.checkpoint(expected_s=40): torch.save(...)`."""
        return self.pause("checkpoint", expected_s, announce_s)

    def evaluation(self, expected_s=None, announce_s=None):
        """`with rep.evaluation(): evaluate(model)`."""
        return self.pause("evaluation", expected_s, announce_s)

    def announce(self, in_s, length_s):
        """The next pause begins `in_s` seconds from now and lasts about
        `length_s` ("checkpoint in 10 s, for about 40 s"). Sent with every
        report until the pause begins (set_phase or a pause block)."""
        if not (_finite(in_s) and _finite(length_s) and 0 <= in_s <= _MAX_S
                and 0 <= length_s <= _MAX_S):
            raise ValueError("announce(%r, %r): seconds must be numbers in 0..1e7"
                             % (in_s, length_s))
        now = self._clock()
        with self._lock:
            self._pause_at, self._pause_len = now + in_s, float(length_s)
        self._maybe_put(True)

    def announce_end(self, in_s):
        """The job's last step is `in_s` seconds from now."""
        if not (_finite(in_s) and 0 <= in_s <= _MAX_S):
            raise ValueError("announce_end(%r): seconds must be a number in 0..1e7" % in_s)
        with self._lock:
            self._end_at = self._clock() + in_s
        self._maybe_put(True)

    def schedule(self, kind, every_steps, expected_s=None, lead_s=10.0):
        """Announce pauses of `kind` that come after every `every_steps`
        steps (e.g. --save-interval), from `lead_s` seconds before, their
        start worked out from the step time that train_step() measures and
        their length `expected_s` or the last one seen (a first pause of
        unknown length is not announced)."""
        if kind not in _PAUSES or not (isinstance(every_steps, int) and every_steps > 0):
            raise ValueError("schedule(%r, %r): a pause kind and a step count > 0"
                             % (kind, every_steps))
        with self._lock:
            self._schedules.append((kind, every_steps, expected_s))
            self._lead_s = lead_s

    def end_at_step(self, last_step, lead_s=10.0):
        """Announce the job's end (its step `last_step`) from `lead_s` before."""
        with self._lock:
            self._end_step = int(last_step)
            self._lead_s = lead_s

    def _check_schedules(self):
        # Under _lock, after a step: the nearest scheduled pause in reach.
        if self._step_s is None:
            return
        now = self._clock()
        best = None
        for kind, every, expected in self._schedules:
            left = (every - self._step % every) % every
            length = expected if expected is not None else self._pause_s.get(kind)
            if length is None:
                continue
            in_s = left * self._step_s
            if in_s <= self._lead_s and (best is None or in_s < best[0]):
                best = (in_s, length)
        if best and self._phase == "training":
            self._pause_at, self._pause_len = now + best[0], float(best[1])
        if self._end_step is not None:
            in_s = max(0, self._end_step - self._step) * self._step_s
            if in_s <= self._lead_s:
                self._end_at = now + in_s

    # ---- the cap ---------------------------------------------------------

    def cap(self):
        """The newest CapInfo read (None before the first, or without a
        cap source)."""
        return self._cap

    def read_cap(self):
        """Reads the cap now (the caller's thread: up to timeout_s)."""
        if self._cap_src is None:
            return None
        info = self._cap_src.read(self.job)
        self._set_cap(info)
        return info

    def on_cap_change(self, fn):
        """fn(CapInfo) is called (from the reporter's thread) on a change."""
        self._cap_listeners.append(fn)

    def _set_cap(self, info):
        old, self._cap = self._cap, info
        if old is not None and old.key() == info.key():
            return
        level = logging.WARNING if info.capped else logging.INFO
        log.log(level, "pfi: %s", info.describe())
        for fn in list(self._cap_listeners):
            try:
                fn(info)
            except Exception:  # a listener never stops the watcher
                log.exception("pfi: cap listener failed")

    def _watch_cap(self):
        while not self._stop.is_set():
            try:
                self._cap_src.timeout = self.timeout_s
                self._set_cap(self._cap_src.read(self.job))
                if self._cap_error:
                    log.info("pfi: cap readable again from %r", self._cap_src)
                self._cap_error = None
            except (OSError, ValueError, Exception) as e:
                text = "%s: %s" % (type(e).__name__, e)
                if self._cap_error is None:
                    log.warning("pfi: cannot read the cap from %r: %s", self._cap_src, text)
                self._cap_error = text
            self._stop.wait(self.cap_poll_s)

    # ---- queue and delivery ---------------------------------------------

    @property
    def stats(self):
        """Counts: queued (reports put in the queue), dropped (the queue
        full), sent (delivered to every sink), lost (per sink: not
        delivered, the agent away or refusing), tokens, step."""
        with self._lock:
            return {"queued": self._queued, "dropped": self._dropped, "sent": self._sent,
                    "lost": {repr(s.sink): s.lost for s in self._sinks},
                    "tokens": self._tokens, "step": self._step}

    def _maybe_put(self, force):
        if not self._sinks or self._closed:
            return
        now = self._clock()
        with self._lock:
            if not force and now - self._last_put < self.interval_s:
                return
            self._last_put = now
            rec = {"t": now, "tokens": self._tokens, "step": self._step, "loss": self._loss,
                   "phase": self._phase, "pause_at": self._pause_at,
                   "pause_len": self._pause_len, "end_at": self._end_at}
            if self._pause_at is not None and now > self._pause_at + 60:
                self._pause_at = self._pause_len = None  # announced, never came
        try:
            self._q.put_nowait(rec)
            with self._lock:
                self._queued += 1
        except queue.Full:
            with self._lock:
                self._dropped += 1

    def flush(self, timeout=2.0):
        """Waits up to `timeout` s for the queue to empty; True if it did."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self._q.unfinished_tasks == 0:
                return True
            time.sleep(0.01)
        return self._q.unfinished_tasks == 0

    def close(self, timeout=2.0):
        """A last report, then waits up to `timeout` s for the queue, and
        stops the threads (which are daemons: an exit never waits on them)."""
        if self._closed:
            return
        self._maybe_put(True)
        self._closed = True
        self.flush(timeout)
        self._stop.set()
        for t in self._threads:
            t.join(timeout=self.timeout_s + 0.2)
        for s in self._sinks:
            s.sink.close()
        st = self.stats
        lost = sum(st["lost"].values())
        if st["dropped"] or lost:
            log.info("pfi: %d report(s) dropped (queue full), %d not delivered (%s)",
                     st["dropped"], lost, st["lost"])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _run(self):
        while True:
            try:
                rec = self._q.get(timeout=min(0.2, max(0.01, self.interval_s)))
            except queue.Empty:
                if self._stop.is_set():
                    return
                # Through a pause no step reports: the same state again
                # every interval (no tokens since the last: a paused
                # period), so that the agent's newest report stays fresh.
                if self._phase in _PAUSES and not self._closed:
                    self._maybe_put(False)
                continue
            try:
                ok = True
                for s in self._sinks:
                    ok = self._deliver(s, rec) and ok
                if ok:
                    with self._lock:
                        self._sent += 1
            finally:
                self._q.task_done()

    def _deliver(self, s, rec):
        now = time.monotonic()
        if s.down_since is not None and now < s.retry_at:
            s.lost += 1
            s.lost_in_outage += 1
            return False
        try:
            line = encode_report(rec, self._clock(), s.sink.relative_to_t)
            answer = s.sink.send(line)
        except Exception as e:  # OSError, HTTPException: away or broken
            s.lost += 1
            if s.down_since is None:
                log.warning("pfi: %r does not answer (%s: %s): reports dropped until it does",
                            s.sink, type(e).__name__, e)
                s.down_since = now
                s.lost_in_outage = 1
                s.backoff = 1.0
            else:
                s.lost_in_outage += 1
                s.backoff = min(10.0, s.backoff * 2)
            s.retry_at = now + s.backoff
            return False
        if s.down_since is not None:
            log.info("pfi: %r answers again; %d report(s) dropped meanwhile", s.sink,
                     s.lost_in_outage)
            s.down_since = None
        if answer is None:
            s.last_status = None
            return True
        s.lost += 1
        if answer[0] != s.last_status:
            log.warning("pfi: %r refused a report: HTTP %d %s", s.sink, answer[0], answer[1])
            s.last_status = answer[0]
        return False
