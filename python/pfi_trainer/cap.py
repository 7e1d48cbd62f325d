# SPDX-License-Identifier: GPL-3.0-or-later
"""The power cap a job runs under and why, as pfi-agent publishes it
(docs/fleet.md, "The cap as the job sees it"): the file of its --cap-file
(PFI_CAP_FILE) or GET /v1/cap of its --cap-listen or --metrics server
(PFI_CAP_ADDR)."""

import json
import math
import os

from . import _http

__all__ = ["CapInfo", "CapSource", "parse_cap", "cap_source_from_env"]


class CapInfo:
    """One reading of the agent's cap state, seen from one job.

    node, mode (`idle`, `tracking`, `hold`), reason (`cut`, `raise`,
    `floor`, `infeasible`, `rollback`, `recovery`, `anomaly`, `event`,
    `restore`, `hold`, `none`), event ("" outside one), event_end (Unix s
    or None), since (Unix s: the caps or the reason last changed), t (when
    the agent wrote it); for the job: job (None when the agent names no
    such job: the node's GPUs are then taken), gpus (indices), cap_w (mean
    cap of its GPUs, W), default_w (mean default), share (cap over
    default), max_loss (its tier, or None). raw: the agent's object."""

    __slots__ = ("node", "mode", "reason", "event", "event_end", "since", "t",
                 "job", "gpus", "cap_w", "default_w", "share", "max_loss", "raw")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    @property
    def capped(self):
        """True when the job's caps are below their defaults."""
        return (self.cap_w is not None and self.default_w is not None
                and self.cap_w < self.default_w - 0.5)

    def key(self):
        """What a change is: the cap (to the watt), reason, event, mode."""
        c = None if self.cap_w is None else round(self.cap_w)
        return (c, self.reason, self.event, self.mode)

    def describe(self):
        """One line for a log: the cap, its share of the default, why."""
        who = "job %s" % self.job if self.job else "node %s" % self.node
        if self.cap_w is None:
            head = "%s: no cap read" % who
        elif self.capped:
            head = "%s capped at %.0f W per GPU (%.0f %% of its %.0f W default)" % (
                who, self.cap_w, 100.0 * self.cap_w / self.default_w, self.default_w)
        else:
            head = "%s at %.0f W per GPU (its default)" % (who, self.cap_w)
        why = "reason %s" % (self.reason or "none")
        if self.event:
            why += ", grid event %s" % self.event
            if self.event_end:
                why += " (ends at Unix time %.0f)" % self.event_end
        return "%s: %s, agent mode %s" % (head, why, self.mode or "?")

    def __repr__(self):
        return "CapInfo(%s)" % self.describe()


def _num(v, name, where):
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError("%s: field %r is not a finite number" % (where, name))
    return float(v)


def parse_cap(obj, job=None, where="cap"):
    """A CapInfo from the agent's object (a dict, or its JSON text) for job
    `job` (None: the node's GPUs). ValueError naming the field when it is
    not the agent's format."""
    if isinstance(obj, (bytes, str)):
        try:
            obj = json.loads(obj)
        except ValueError as e:
            raise ValueError("%s: not JSON: %s" % (where, e)) from None
    if not isinstance(obj, dict):
        raise ValueError("%s: not a JSON object" % where)
    if obj.get("v") != 1:
        raise ValueError("%s: field 'v' is %r, expected 1" % (where, obj.get("v")))
    for f in ("node", "mode", "reason"):
        if not isinstance(obj.get(f), str):
            raise ValueError("%s: field %r missing or not a string" % (where, f))
    event = obj.get("event", "")
    if not isinstance(event, str):
        raise ValueError("%s: field 'event' is not a string" % where)
    gpus = obj.get("gpus", [])
    jobs = obj.get("jobs", [])
    if not isinstance(gpus, list) or not isinstance(jobs, list):
        raise ValueError("%s: field 'gpus' or 'jobs' is not a list" % where)
    info = CapInfo(node=obj["node"], mode=obj["mode"], reason=obj["reason"], event=event,
                   event_end=_num(obj.get("event_end"), "event_end", where),
                   since=_num(obj.get("since"), "since", where),
                   t=_num(obj.get("t"), "t", where), raw=obj)
    entry = None
    if job is not None:
        for j in jobs:
            if isinstance(j, dict) and j.get("job") == job:
                entry = j
                break
    if entry is not None:
        idx = entry.get("gpus", [])
        if not isinstance(idx, list) or any(isinstance(g, bool) or not isinstance(g, int)
                                            for g in idx):
            raise ValueError("%s: field 'jobs.gpus' is not a list of GPU indices" % where)
        info.job = job
        info.gpus = idx
        info.cap_w = _num(entry.get("cap_w"), "jobs.cap_w", where)
        info.default_w = _num(entry.get("default_w"), "jobs.default_w", where)
        info.share = _num(entry.get("share_of_default"), "jobs.share_of_default", where)
        info.max_loss = _num(entry.get("max_loss"), "jobs.max_loss", where)
        return info
    # No entry for the job: the node's GPUs (the job may not be mapped yet).
    caps, defs, idx = [], [], []
    for i, g in enumerate(gpus):
        if not isinstance(g, dict):
            raise ValueError("%s: gpus[%d] is not an object" % (where, i))
        c = _num(g.get("cap_w"), "gpus.cap_w", where)
        d = _num(g.get("default_w"), "gpus.default_w", where)
        if c is not None and d is not None:
            caps.append(c)
            defs.append(d)
            idx.append(g.get("gpu"))
    if caps:
        info.gpus = idx
        info.cap_w = math.fsum(caps) / len(caps)
        info.default_w = math.fsum(defs) / len(defs)
        if not (math.isfinite(info.cap_w) and math.isfinite(info.default_w)):
            raise ValueError("%s: field 'gpus.cap_w' or 'gpus.default_w' out of range" % where)
        info.share = info.cap_w / info.default_w if info.default_w > 0 else None
    return info


class CapSource:
    """Reads the agent's cap state from a file or an endpoint."""

    def __init__(self, path=None, addr=None, timeout=0.5):
        if (path is None) == (addr is None):
            raise ValueError("CapSource: give exactly one of path and addr")
        self.path = path
        self.addr = _http.parse_address(addr) if isinstance(addr, str) else addr
        self.timeout = timeout

    def __repr__(self):
        return self.path if self.path else "http://%r/v1/cap" % (self.addr,)

    def read(self, job=None):
        """A CapInfo. OSError when the file or the endpoint cannot be read,
        ValueError when what it holds is not the agent's format."""
        if self.path:
            with open(self.path, "rb") as f:
                text = f.read(1 << 20)
            return parse_cap(text, job, self.path)
        status, body = _http.request(self.addr, "GET", "/v1/cap", timeout=self.timeout)
        if status != 200:
            raise OSError("GET /v1/cap on %r: HTTP %d" % (self.addr, status))
        return parse_cap(body, job, "GET /v1/cap")


def cap_source_from_env(env=None):
    """PFI_CAP_FILE (a path) or else PFI_CAP_ADDR (an address), or None."""
    env = os.environ if env is None else env
    if env.get("PFI_CAP_FILE"):
        return CapSource(path=env["PFI_CAP_FILE"])
    if env.get("PFI_CAP_ADDR"):
        return CapSource(addr=env["PFI_CAP_ADDR"])
    return None
