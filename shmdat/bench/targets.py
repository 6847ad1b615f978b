"""Issue 13's (and 14's) targets as data, and the one function that judges a run against them.

Each target compares one figure of the run (a median) with a bound times another
figure of the same run, or with a number. A figure is named by a key into
figures(): (transport, op, metric, size, wait) for a latency or bandwidth row,
(transport, op, "latency", size, ranks) for an MPI collective,
(transport, "msgrate", senders) for a message rate, ("idle_waiter_cpu_percent",)
for the idle waiter. A target whose figures the run did not measure is "not
measured", never met. A target `and_up` is judged at its size and at every larger
size the run measured, by the worst of them.
"""

import operator
from typing import NamedTuple

from .plan import MSGRATE_SIZE, UNITS

KiB, MiB = 1 << 10, 1 << 20
DAT, VERBS, MPI, PIPE, MEMCPY = "shmdat", "shmdat.verbs", "mpi4py", "multiprocessing.Pipe", "memcpy"
SMPI = "shmdat.mpi"
IDLE = ("idle_waiter_cpu_percent",)
RELATIONS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt}


def _lat(transport, wait):
    """8-byte send/recv, half a round trip (us)."""
    return (transport, "send", "latency", MSGRATE_SIZE, wait)


def _bw(transport, op, size):
    """Bandwidth with the receiver polling (GB/s); memcpy's rows are numpy.copyto's."""
    return (transport, op, "bandwidth", size, "poll")


def _collective(transport, op, size, ranks):
    """An MPI collective's time per call, the slowest rank's (us)."""
    return (transport, op, "latency", size, ranks)


def _rate(transport):
    """One sender's message rate (msgs/s)."""
    return (transport, "msgrate", 1)


class Target(NamedTuple):
    name: str
    ours: tuple             # the key of our figure
    relation: str           # one of RELATIONS: ours <relation> bound x theirs
    bound: float
    theirs: object          # a number, or the keys of their figure: the first one measured is taken
    and_up: bool = False    # also at every larger size measured (both keys' size replaced): the worst


TARGETS = (
    Target("verbs 8 B send/recv, polling, vs mpi4py", _lat(VERBS, "poll"), "<=", 0.8, (_lat(MPI, "poll"),)),
    Target("DAT 8 B send/recv, polling, vs mpi4py", _lat(DAT, "poll"), "<=", 1.0, (_lat(MPI, "poll"),)),
    Target("verbs 8 B send/recv, blocked vs polling", _lat(VERBS, "block"), "<=", 1.5, (_lat(VERBS, "poll"),)),
    Target("DAT 8 B send/recv, blocked vs polling", _lat(DAT, "block"), "<=", 1.5, (_lat(DAT, "poll"),)),
    Target("verbs 8 B send/recv, blocked, vs Pipe", _lat(VERBS, "block"), "<=", 0.2,
           (_lat(PIPE, "block"), _lat(PIPE, "poll"))),
    Target("DAT 8 B send/recv, blocked, vs Pipe", _lat(DAT, "block"), "<=", 0.2,
           (_lat(PIPE, "block"), _lat(PIPE, "poll"))),
    Target("verbs message rate, 1 sender", _rate(VERBS), ">=", 1.0, 1e6),
    Target("DAT message rate, 1 sender", _rate(DAT), ">=", 1.0, 5e5),
    Target("verbs message rate vs mpi4py Isend/Irecv", _rate(VERBS), ">", 1.0, (_rate(MPI),)),
    Target("DAT message rate vs mpi4py Isend/Irecv", _rate(DAT), ">", 1.0, (_rate(MPI),)),
    Target("DAT 1 MiB send/recv bandwidth vs mpi4py", _bw(DAT, "send", MiB), ">=", 1.0, (_bw(MPI, "send", MiB),)),
    Target("DAT 1 MiB RDMA write vs numpy.copyto", _bw(DAT, "rdma_write", MiB), ">=", 0.6,
           (_bw(MEMCPY, "memcpy", MiB),)),
    Target("DAT 16 MiB RDMA write vs numpy.copyto", _bw(DAT, "rdma_write", 16 * MiB), ">=", 0.6,
           (_bw(MEMCPY, "memcpy", 16 * MiB),)),
    Target("idle blocked waiter, % of a core", IDLE, "<", 1.0, 1.0),
    # Issue 14's: shmdat.mpi against mpi4py, the same worker program on each.
    Target("shmdat.mpi 8 B send/recv, polling vs mpi4py", _lat(SMPI, "poll"), "<=", 1.5, (_lat(MPI, "poll"),)),
    Target("shmdat.mpi bandwidth, 64 KiB up, vs mpi4py", _bw(SMPI, "send", 64 * KiB), ">=", 1.0,
           (_bw(MPI, "send", 64 * KiB),), and_up=True),
    Target("shmdat.mpi Barrier, 4 ranks, vs mpi4py", _collective(SMPI, "barrier", 0, 4), "<=", 2.0,
           (_collective(MPI, "barrier", 0, 4),)),
    Target("shmdat.mpi 8 B Allreduce, 4 ranks, vs mpi4py", _collective(SMPI, "allreduce", 8, 4), "<=", 2.0,
           (_collective(MPI, "allreduce", 8, 4),)),
)


def figures(rows, msgrate=(), waiting=None, collectives=()):
    """{key: median} of one run's rows, message rates, waiting figures and MPI collectives."""
    found = {(r["transport"], r["op"], r["metric"], r["size"], r["wait"]): r["median"] for r in rows}
    found.update({_collective(c["transport"], c["op"], c["size"], c["ranks"]): c["median"]
                  for c in collectives})
    found.update({(m["transport"], "msgrate", m["senders"]): m["median"] for m in msgrate})
    if waiting and waiting.get(IDLE[0]) is not None:
        found[IDLE] = waiting[IDLE[0]]
    return found


def _unit(key):
    if key == IDLE:
        return "%"
    return UNITS["message_rate"] if key[1] == "msgrate" else UNITS[key[2]]


def _at_size(key, size):
    return key[:3] + (size,) + key[4:]


def _judge(t, ours_key, theirs, found):
    """t judged on the figures `ours_key` and `theirs` (a number or the keys of theirs)."""
    ours = found.get(ours_key)
    if isinstance(theirs, tuple):
        against = next((key for key in theirs if key in found), None)
        theirs = found.get(against)
    else:
        against = None
    measured = ours is not None and theirs is not None and theirs > 0
    ratio = ours / theirs if measured else None
    return {"name": t.name, "ours": ours, "theirs": theirs,
            "against": list(against) if against else None, "ratio": ratio,
            "relation": t.relation, "bound": t.bound, "unit": _unit(t.ours),
            "measured": measured, "met": measured and RELATIONS[t.relation](ratio, t.bound)}


def _judge_and_up(t, found):
    """An `and_up` target: judged at each size from its own that both figures have; the
    worst of them (the smallest ratio for > and >=, the largest for < and <=)."""
    sizes = sorted(k[3] for k in found if _at_size(k, t.ours[3]) == t.ours and k[3] >= t.ours[3])
    each = [_judge(t, _at_size(t.ours, s), tuple(_at_size(k, s) for k in t.theirs), found) for s in sizes]
    measured = [j for j in each if j["measured"]]
    if not measured:
        return _judge(t, t.ours, t.theirs, found)
    worst = min if t.relation in (">", ">=") else max
    return worst(measured, key=lambda j: j["ratio"])


def evaluate(rows, msgrate=(), waiting=None, collectives=(), targets=TARGETS):
    """Each target judged on one run: a dict with its name, ours, theirs (a number or
    their figure's median; None when not measured), against (the key of their figure
    taken, or None for a number), ratio (ours / theirs), relation, bound, unit,
    measured, and met (never True when not measured)."""
    found = figures(rows, msgrate, waiting, collectives)
    return [_judge_and_up(t, found) if t.and_up else _judge(t, t.ours, t.theirs, found) for t in targets]
