"""Presenting results: the readable table and the machine record of the --json object."""

import datetime
import os
import platform

TITLES = {"send": "send/recv", "rdma_write": "RDMA write", "rdma_read": "RDMA read"}
ALTERNATIVES = ("shmdat.verbs", "multiprocessing.Pipe", "pyzmq", "mpi4py")
WAIT_TITLES = {"poll": "receiver polling", "block": "receiver blocked (evd.wait, get_cq_event)"}
SHORT = {"shmdat.verbs": "verbs", "multiprocessing.Pipe": "Pipe", "pyzmq": "pyzmq", "mpi4py": "mpi4py"}


def machine():
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    versions = {}
    for name in ("numpy", "mpi4py", "zmq"):
        try:
            versions[name] = __import__(name).__version__
        except ImportError:
            pass
    return {"date": datetime.datetime.now().isoformat(timespec="seconds"), "host": platform.node(),
            "cpu": cpu, "cores": os.cpu_count(), "system": platform.platform(),
            "python": platform.python_version(), "versions": versions}


def size_text(n):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def _better(metric, ours, theirs):
    """How many times better shmdat is (above 1: shmdat wins)."""
    if not ours or not theirs:
        return None
    return theirs / ours if metric == "latency" else ours / theirs


def _msgrate_table(msgrate):
    """Message rate (medians): a line per sender count, a column per layer that measured it."""
    index = {(m["transport"], m["senders"]): m["median"] for m in msgrate}
    layers = [t for t in ("shmdat", *ALTERNATIVES) if any(k[0] == t for k in index)]
    out = ["message rate (msgs/s), 8-byte sends into one receiver, a window of sends posted",
           f"{'senders':>8}" + "".join(f"  {SHORT.get(t, t):>10}" for t in layers)]
    for n in sorted({k[1] for k in index}):
        out.append(f"{n:>8}" + "".join(f"  {index[(t, n)]:>10.4g}" if (t, n) in index else f"  {'-':>10}"
                                        for t in layers))
    return out


def _number(value):
    return f"{value:>9.3g}" if value is not None else f"{'-':>9}"


def _figure(value, unit):
    return f"{value:>9.3g} {unit:<6}" if value is not None else f"{'-':>9} {unit:<6}"


def _mpi_table(rows):
    """shmdat.mpi against mpi4py, the same worker on each (send/recv between 2 ranks)."""
    index = {(r["transport"], r["metric"], r["wait"], r["size"]): r["median"] for r in rows if r["op"] == "send"}
    out = ["MPI point to point, 2 ranks: shmdat.mpi (shmdat run) against mpi4py (mpiexec),"
           " the same program; (x): how many times better shmdat.mpi is"]
    for metric, unit in (("latency", "us"), ("bandwidth", "GB/s")):
        for wait in ("poll", "block"):
            sizes = sorted(k[3] for k in index if k[:3] == ("shmdat.mpi", metric, wait))
            if not sizes:
                continue
            out += [f"{metric} ({unit}), receiver {'polling (Irecv + Test)' if wait == 'poll' else 'blocked (Recv)'}",
                    f"{'size':>8}  {'smpi':>9}  {'mpi4py':>9} {'(x)':>6}"]
            for size in sizes:
                ours, theirs = index[("shmdat.mpi", metric, wait, size)], index.get(("mpi4py", metric, wait, size))
                ratio = _better(metric, ours, theirs)
                out.append(f"{size_text(size):>8}  {ours:>9.3g}" +
                           (f"  {theirs:>9.3g} {ratio:>5.2f}x" if theirs else f"  {'-':>9}"))
    return out


COLLECTIVE_TITLES = {"barrier": "Barrier", "bcast": "Bcast", "allreduce": "Allreduce"}


def _collectives_table(collectives):
    """MPI collectives: shmdat.mpi beside mpi4py, a line per (ranks, call, size)."""
    index = {(c["transport"], c["ranks"], c["op"], c["size"]): c["median"] for c in collectives}
    lines = sorted({k[1:] for k in index}, key=lambda k: (k[0], list(COLLECTIVE_TITLES).index(k[1]), k[2]))
    out = ["MPI collectives (us per call, the slowest rank's): shmdat.mpi (shmdat run -n N) against"
           " mpi4py (mpiexec -n N), the same program; (x): how many times better shmdat.mpi is",
           f"{'ranks':>5}  {'call':<10} {'size':>8}  {'smpi':>9}  {'mpi4py':>9} {'(x)':>6}"]
    for ranks, op, size in lines:
        ours, theirs = index.get(("shmdat.mpi", ranks, op, size)), index.get(("mpi4py", ranks, op, size))
        ratio = _better("latency", ours, theirs)
        out.append(f"{ranks:>5}  {COLLECTIVE_TITLES[op]:<10} {size_text(size) if size else '-':>8}"
                   f"  {_number(ours)}  {_number(theirs)}" + (f" {ratio:>5.2f}x" if ratio else ""))
    return out


def targets_table(judged):
    """The targets section: each target's figures, ratio, bound, and met / MISSED / not measured."""
    out = ["targets (issues 13 and 14), medians of this run: ours, theirs, ours / theirs, the bound",
           f"{'':<44} {'ours':>9} {'':<6} {'theirs':>9} {'':<6} {'ratio':>7}  bound"]
    for t in judged:
        verdict = "met" if t["met"] else "MISSED" if t["measured"] else "not measured"
        ratio = f"{t['ratio']:>6.3g}x" if t["ratio"] is not None else f"{'-':>7}"
        out.append(f"{t['name']:<44} {_figure(t['ours'], t['unit'])} {_figure(t['theirs'], t['unit'])}"
                   f" {ratio}  {t['relation'] + format(t['bound'], 'g') + 'x':<7}  {verdict}")
    return out


def table(rows, msgrate=(), waits=None, skipped=None, judged=(), collectives=()):
    """The readable report: one block per (op, metric, wait), a line per size; then MPI's
    point to point and collectives, the message rates, the waiting figures, what was
    skipped, and the targets judged."""
    index = {(r["transport"], r["op"], r["metric"], r["wait"], r["size"]): r for r in rows}
    memcpy = {r["size"]: r["median"] for r in rows if r["op"] == "memcpy"}
    present = [t for t in ALTERNATIVES if any(r["transport"] == t for r in rows)]
    out = []
    blocks = sorted({(r["op"], r["metric"], r["wait"]) for r in rows if r["transport"] == "shmdat"},
                    key=lambda b: (b[1] != "latency", list(TITLES).index(b[0]), b[2] != "poll"))
    for op, metric, wait in blocks:
        unit = "us" if metric == "latency" else "GB/s"
        alts = [t for t in present if any(k[:4] == (t, op, metric, wait) for k in index)]
        show_memcpy = metric == "bandwidth" and memcpy
        head = f"{TITLES[op]} {metric} ({unit}), {WAIT_TITLES[wait]}"
        cols = f"{'size':>8}  {'shmdat':>9}" + "".join(f"  {SHORT[t]:>8} {'(x)':>6}" for t in alts)
        if show_memcpy:
            cols += f"  {'memcpy':>8} {'(%)':>5}"
        out += ["", head, cols]
        for size in sorted({k[4] for k in index if k[:4] == ("shmdat", op, metric, wait)}):
            ours = index[("shmdat", op, metric, wait, size)]["median"]
            line = f"{size_text(size):>8}  {ours:>9.3g}"
            for t in alts:
                r = index.get((t, op, metric, wait, size))
                ratio = _better(metric, ours, r and r["median"])
                line += f"  {r['median']:>8.3g} {ratio:>5.2f}x" if r else f"  {'-':>8} {'':>6}"
            if show_memcpy and size in memcpy:
                line += f"  {memcpy[size]:>8.3g} {100 * ours / memcpy[size]:>4.0f}%"
            out.append(line)
    if any(r["transport"] == "shmdat.mpi" for r in rows):
        out += ["", *_mpi_table(rows)]
    if collectives:
        out += ["", *_collectives_table(collectives)]
    if msgrate:
        out += ["", *_msgrate_table(msgrate)]
    if waits:
        notices = ", ".join(f"{ms:.0f}" for ms in waits["death_notice_ms"])
        out += ["", f"idle waiter blocked in evd.wait: {waits['idle_waiter_cpu_percent']:.2f}% of a core",
                f"peer killed (SIGKILL) to CONNECTION_EVENT_BROKEN at a blocked waiter: {notices} ms"]
    if present or skipped:
        out += ["", "(x): how many times better shmdat is (their latency / ours, our bandwidth / theirs);"
                    " (%): shmdat's bandwidth as a share of numpy.copyto's"]
    for name, why in (skipped or {}).items():
        out.append(f"skipped {name}: {why}")
    if judged:
        out += ["", *targets_table(judged)]
    return "\n".join(out).lstrip("\n")
