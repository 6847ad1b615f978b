"""Issue 13's (and 14's) targets as data, and the one function that judges a run against them.

Each target compares one figure of the run (a median) with a bound times another
figure of the same run, or with a number. A figure is named by a key into
figures(): (transport, op, metric, size, wait) for a latency or bandwidth row,
(transport, "msgrate", senders) for a message rate, ("idle_waiter_cpu_percent",)
for the idle waiter. A target whose figures the run did not measure is "not
measured", never met.
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


def _rate(transport):
    """One sender's message rate (msgs/s)."""
    return (transport, "msgrate", 1)


class Target(NamedTuple):
    name: str
    ours: tuple             # the key of our figure
    relation: str           # one of RELATIONS: ours <relation> bound x theirs
    bound: float
    theirs: object          # a number, or the keys of their figure: the first one measured is taken


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
    Target("shmdat.mpi 1 MiB bandwidth vs mpi4py", _bw(SMPI, "send", MiB), ">=", 1.0,
           (_bw(MPI, "send", MiB),)),
)


def figures(rows, msgrate=(), waiting=None):
    """{key: median} of one run's rows, message rates and waiting figures."""
    found = {(r["transport"], r["op"], r["metric"], r["size"], r["wait"]): r["median"] for r in rows}
    found.update({(m["transport"], "msgrate", m["senders"]): m["median"] for m in msgrate})
    if waiting and waiting.get(IDLE[0]) is not None:
        found[IDLE] = waiting[IDLE[0]]
    return found


def _unit(key):
    if key == IDLE:
        return "%"
    return UNITS["message_rate"] if key[1] == "msgrate" else UNITS[key[2]]


def evaluate(rows, msgrate=(), waiting=None, targets=TARGETS):
    """Each target judged on one run: a dict with its name, ours, theirs (a number or
    their figure's median; None when not measured), against (the key of their figure
    taken, or None for a number), ratio (ours / theirs), relation, bound, unit,
    measured, and met (never True when not measured)."""
    found = figures(rows, msgrate, waiting)
    judged = []
    for t in targets:
        ours = found.get(t.ours)
        if isinstance(t.theirs, tuple):
            against = next((key for key in t.theirs if key in found), None)
            theirs = found.get(against)
        else:
            against, theirs = None, t.theirs
        measured = ours is not None and theirs is not None and theirs > 0
        ratio = ours / theirs if measured else None
        judged.append({"name": t.name, "ours": ours, "theirs": theirs,
                       "against": list(against) if against else None, "ratio": ratio,
                       "relation": t.relation, "bound": t.bound, "unit": _unit(t.ours),
                       "measured": measured, "met": measured and RELATIONS[t.relation](ratio, t.bound)})
    return judged
