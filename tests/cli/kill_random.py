# SPDX-License-Identifier: GPL-3.0-or-later
"""Randomized kill-and-restore test (run by test_kill_random.sh).

Rounds of one to three concurrent pfi processes on one emulated 4-GPU
machine (a private PFI_EMU_STATE): sweeps in virtual and real time on
random GPU subsets, `pfi cap --set W --db STORE` (a recorded change that is
kept, as a cap plan's), and `pfi restore` of random stores, through a pool
of stores shared between rounds. Each process gets a random fate: SIGKILL,
SIGTERM, SIGINT or SIGHUP at a random moment, SIGSTOP then (another signal
while stopped or not) SIGCONT, a self-SIGKILL at a random stage of the
sweep (PFI_SWEEP_KILL_AT), or none. Then, with no pfi left alive, copies of
random stores' main files (without their -wal) join the pool, and every
store of the pool is restored in random order. The check, after every
round: each GPU's limit, read from the device, is the original 650 W (no
GPU is left capped without a record that puts it back, whatever was killed
when), every ledger is empty, and no process hung (each is bounded).

Seeded: PFI_KILL_SEED (default: from the clock), printed at the start and
with every failure. PFI_KILL_KILLS (default 200) is the number of random
signals to deliver; raise it for a longer run. PFI_KILL_VERBOSE=1 prints
each process's fate and each round's timing.
"""
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

PFI = os.environ["PFI"]
TMP = sys.argv[1]
SEED = int(os.environ.get("PFI_KILL_SEED") or int(time.time() * 1000) % 1000000007)
KILLS = int(os.environ.get("PFI_KILL_KILLS") or 200)
GROUP = "moe-ft-qwen30ba3b-x8"
NGPU = 4
EMU = ["--backend", "emu", "--params", "gpus=%d" % NGPU]
ORIG = 650.0
HANG_S = 60  # a pfi that has not exited this long after its last signal hung
SIGS = [signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP]
STAGES = ["recorded", "set", "sample", "restoring", "restored"]

rng = random.Random(SEED)
env = dict(os.environ)
env["PFI_EMU_STATE"] = os.path.join(TMP, "emu")
for k in ("PFI_SWEEP_KILL_AT", "PFI_EMU_REALTIME", "PFI_LOCK_DIR"):
    env.pop(k, None)
log = []
print("kill_random: seed %d (PFI_KILL_SEED=%d reruns it), %d kills" % (SEED, SEED, KILLS))


def die(msg):
    print("kill_random: FAIL (seed %d): %s" % (SEED, msg), file=sys.stderr)
    print("kill_random: last rounds:", file=sys.stderr)
    for line in log[-40:]:
        print("  " + line, file=sys.stderr)
    sys.exit(1)


def run(args, timeout=120):
    try:
        p = subprocess.run([PFI] + args, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        die("pfi %s did not finish in %d s" % (" ".join(args), timeout))
    return p


def caps():
    p = run(["devices"] + EMU + ["--format", "json"])
    if p.returncode != 0:
        die("pfi devices: " + p.stderr)
    return [g["cap_w"] for g in json.loads(p.stdout)]


def ledger_rows(db):
    try:
        c = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=30)
        n = c.execute("select count(*) from cap_ledger").fetchone()[0]
        c.close()
        return n
    except sqlite3.Error as e:
        return "unreadable (%s)" % e


# A bounded pool of stores shared by the rounds (restoring every store
# after every round stays cheap): sweeps' and caps' stores, and copies of
# their main files without the -wal, each copy replacing an older one.
NSTORES, NCOPIES = 5, 3
stores = [os.path.join(TMP, "s%d.db" % i) for i in range(NSTORES)]
copies = [os.path.join(TMP, "copy%d.db" % i) for i in range(NCOPIES)]


def pick_store():
    return rng.choice(stores)


def existing():
    return [s for s in stores + copies if os.path.exists(s)]


def has_schema(db):
    """A store killed while it was being created holds no tables: it is
    not a store (pfi restore says so, exit 2), and nothing was changed
    through it."""
    try:
        c = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=30)
        n = c.execute("select count(*) from sqlite_master where name='cap_ledger'").fetchone()[0]
        c.close()
        return n > 0
    except sqlite3.Error:
        return True


def gpu_subset():
    k = rng.choice([1, 2, 2, 4])
    first = rng.randrange(0, NGPU - k + 1)
    return ",".join(str(i) for i in range(first, first + k))


def partition(n):
    """GPU subsets for n concurrent operations: mostly disjoint (so that
    most of them run rather than being refused), sometimes overlapping."""
    if rng.random() < 0.3:
        return [gpu_subset() for _ in range(n)]
    g = list(range(NGPU))
    rng.shuffle(g)
    cuts = sorted(rng.sample(range(1, NGPU), min(n, NGPU) - 1))
    parts = [sorted(g[a:b]) for a, b in zip([0] + cuts, cuts + [NGPU])]
    parts += [sorted(rng.sample(range(NGPU), 1)) for _ in range(n - len(parts))]
    return [",".join(map(str, p)) for p in parts]


def make_op(gpus):
    """One random operation on GPUs `gpus`: (args, extra env, kind, the
    longest it should live, s)."""
    kind = rng.choice(["sweep"] * 5 + ["sweep-rt", "cap", "cap", "restore"])
    e = {}
    if kind == "sweep":
        caps_list = ",".join(str(c) for c in rng.sample([200, 300, 400, 500], rng.randint(1, 3)))
        args = ["sweep"] + EMU + ["--emulate", GROUP, "--gpus", gpus, "--caps", caps_list,
                                  "--duration", "%dm" % rng.randint(5, 30), "--interval", "5s",
                                  "--cooldown", "0", "--quiet", "--db", pick_store(),
                                  # a new job each time: a store's complete
                                  # runs would be skipped (resume)
                                  "--job", "j%d" % rng.randrange(10 ** 6)]
        if rng.random() < 0.35:
            e["PFI_SWEEP_KILL_AT"] = "%s:%d:%d" % (rng.choice(STAGES), rng.randrange(0, 2), rng.randint(1, 3))
    elif kind == "sweep-rt":
        args = ["sweep"] + EMU + ["--emulate", GROUP, "--gpus", gpus, "--caps",
                                  str(rng.choice([250, 350, 450])), "--real-time",
                                  "--duration", "%.1fs" % rng.uniform(1.0, 1.3), "--interval", "0.1s",
                                  "--cooldown", "0", "--quiet", "--db", pick_store(),
                                  "--job", "j%d" % rng.randrange(10 ** 6)]
    elif kind == "cap":
        args = ["cap"] + EMU + ["--gpus", gpus, "--set", str(rng.choice([300, 400, 550])),
                                "--db", pick_store()]
    else:
        if not existing():
            return make_op(gpus)
        args = ["restore", "--db", rng.choice(existing())]
    life = {"sweep": 0.4, "sweep-rt": 1.3, "cap": 0.1, "restore": 0.04}[kind]
    return args, e, kind, life


kills = 0
rounds = 0
t_start = time.monotonic()
p0 = run(["cap"] + EMU + ["--set", "%g" % ORIG])
if p0.returncode != 0:
    die("initial pfi cap: " + p0.stderr)

while kills < KILLS:
    rounds += 1
    procs = []
    nops = rng.randint(1, 4)
    for gpus in partition(nops):
        args, e, kind, life = make_op(gpus)
        pe = dict(env)
        pe.update(e)
        p = subprocess.Popen([PFI] + args, env=pe, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, start_new_session=True, text=True)
        fate = rng.random()
        if fate < 0.08:
            plan = ("none",)
        elif fate < 0.25:
            plan = ("stop", rng.uniform(0, 0.15), rng.uniform(0, 0.2),
                    rng.choice(SIGS + [None]))
        else:
            # Most pfi runs here last 0.05-0.6 s: moments early in them.
            plan = ("sig", rng.uniform(0.005, 0.15), rng.choice(SIGS))
        procs.append([p, plan, " ".join(args) + (" " + str(e) if e else ""), None])
        log.append("round %d: pfi %s; %s" % (rounds, procs[-1][2], plan))
    # Deliver the signals at their moments (in order of time).
    events = []
    for i, (p, plan, _, _) in enumerate(procs):
        if plan[0] == "sig":
            events.append((plan[1], i, plan[2]))
        elif plan[0] == "stop":
            events.append((plan[1], i, signal.SIGSTOP))
            if plan[3] is not None:
                events.append((plan[1] + plan[2] / 2, i, plan[3]))
            events.append((plan[1] + plan[2], i, signal.SIGCONT))
    events.sort(key=lambda x: x[0])
    t0 = time.monotonic()
    for at, i, sig in events:
        d = at - (time.monotonic() - t0)
        if d > 0:
            time.sleep(d)
        p = procs[i][0]
        if p.poll() is None:
            try:
                p.send_signal(sig)
            except ProcessLookupError:
                continue
            if sig not in (signal.SIGSTOP, signal.SIGCONT):
                kills += 1
                procs[i][3] = sig
    t_wait = time.monotonic()
    for p, plan, desc, _ in procs:
        try:
            p.wait(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            die("round %d: pfi %s hung (%s)" % (rounds, desc, plan))
        err = p.stderr.read()
        p.stderr.close()
        if os.environ.get("PFI_KILL_VERBOSE"):
            print("exit %s sent %s: %s" % (p.returncode, _, desc[:40]), err.strip()[:80])
        # A self-SIGKILL at a random stage (PFI_SWEEP_KILL_AT) is a kill too.
        if p.returncode == -signal.SIGKILL and _ is None:
            kills += 1
        # A refusal (a GPU held by another, a kept change) or a signal is
        # expected; a crash of pfi is not.
        if p.returncode < 0 and -p.returncode not in (signal.SIGKILL, signal.SIGTERM,
                                                      signal.SIGINT, signal.SIGHUP):
            die("round %d: pfi %s died of signal %d: %s" % (rounds, desc, -p.returncode, err))
        empty = p.returncode == 2 and "not a pfi trace store (an empty" in err
        if p.returncode not in (0, 1, -9, -15, -2, -1, 137) and not empty:
            die("round %d: pfi %s exit status %d: %s" % (rounds, desc, p.returncode, err))
    t_check = time.monotonic()
    # Copies of stores without their -wal join the pool.
    for _ in range(rng.choice([0, 0, 1])):
        src = [x for x in stores if os.path.exists(x)]
        if src:
            a, dst = rng.choice(src), rng.choice(copies)
            shutil.copyfile(a, dst)
            for ext in ("-wal", "-shm"):
                if os.path.exists(dst + ext):
                    os.unlink(dst + ext)
            log.append("round %d: copied %s to %s (main file only)" % (rounds, a, dst))
    # Nothing alive: every store this round used (and each new copy; every
    # tenth round the whole pool) restored, in random order. A store the
    # round did not name can only have lost rows to it (a dead holder's
    # change put back), never gained one.
    used = set(a for p in procs for a in p[2].split() if a.endswith(".db"))
    used |= set(l.split()[-4] for l in log if l.startswith("round %d: copied" % rounds))
    order = [x for x in existing() if x in used or rounds % 10 == 0]
    rng.shuffle(order)
    for s in order:
        r = run(["restore", "--db", s])
        if r.returncode == 2 and not has_schema(s):
            continue
        if r.returncode != 0:
            die("round %d: pfi restore --db %s: exit %d: %s%s" % (rounds, s, r.returncode, r.stdout, r.stderr))
    if os.environ.get("PFI_KILL_VERBOSE"):
        print("round %d: signals %.2f s, exits %.2f s, restores %.2f s" % (
            rounds, t_wait - t0, t_check - t_wait, time.monotonic() - t_check))
    got = caps()
    if any(abs(c - ORIG) > 1e-6 for c in got):
        die("round %d: caps %s after every store was restored, expected %g W each" % (rounds, got, ORIG))
    for s in order:
        n = ledger_rows(s) if has_schema(s) else 0
        if n != 0:
            die("round %d: %s still has %s ledger row(s)" % (rounds, s, n))

print("kill_random: %d random signals in %d rounds, %.1f s: every GPU back at %g W"
      % (kills, rounds, time.monotonic() - t_start, ORIG))
