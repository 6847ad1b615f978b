"""The `shmdat` command (also `python -m shmdat`): info, ls, gc, link, bench, run-verbs and run.

Each command imports what it uses when it runs: `shmdat run` (the launcher, started once
per job) then starts without the DAT provider, the verbs device and numpy (about 30 ms
instead of 430 on the 2-core machine)."""

import argparse
import json
import os
import sys

from . import __version__
from .mpi.__main__ import main as run_mpi


def _fields(value):
    """(name, value) pairs of a NamedTuple or dataclass-like attribute object."""
    if hasattr(value, "_asdict"):
        return list(value._asdict().items())
    return sorted(vars(value).items())


def _show(title, pairs):
    print(title)
    width = max(len(k) for k, _ in pairs)
    for key, value in pairs:
        print(f"  {key:<{width}}  {getattr(value, 'name', value)}")


def _bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def cmd_info(args):
    """Providers (and why a real NIC is not one), the attributes ia.query() reports, and
    what this machine allows."""
    import shmdat
    from .dat.registry import registry_missing_providers
    from .hw import cma, shm
    for p in shmdat.registry_list_providers():
        print(f"provider {p.ia_name}: DAT {'.'.join(map(str, p.version))}, thread safe: {p.thread_safe}")
    for why in registry_missing_providers():
        print(f"no real-NIC provider: {why}")
    with shmdat.ia_open() as ia:
        ia_attr, provider_attr = ia.query()
        _show("IA attributes", _fields(ia_attr))
        _show("provider attributes", _fields(provider_attr))
    st = os.statvfs(shm.SHM_DIR)
    usable, why = cma.status()
    _show("machine", [
        (f"{shm.SHM_DIR} size", _bytes(st.f_blocks * st.f_frsize)),
        (f"{shm.SHM_DIR} free", _bytes(st.f_bavail * st.f_frsize)),
        ("cross-memory attach", f"{'yes' if usable else 'no'} ({why})"),
        ("cores", os.cpu_count()),
    ])
    return 0


def cmd_ls(args):
    """Every shmdat object of this user: owner pid, whether it lives, size, kind; then
    the device's machine-wide objects (QP table, port state), by namespace."""
    from .hw import shm
    objects = shm.list_objects()
    devices = shm.list_device_objects()
    if args.json:
        print(json.dumps(objects + [dict(o, kind="device", pid=None, alive=None) for o in devices],
                         indent=2))
        return 0
    if not objects and not devices:
        print(f"no shmdat objects in {shm.SHM_DIR}")
        return 0
    print(f"{'owner':>8}  {'state':<5}  {'size':>10}  {'kind':<9}  name")
    for o in objects:
        print(f"{o['pid']:>8}  {'alive' if o['alive'] else 'dead':<5}  {_bytes(o['size']):>10}"
              f"  {o['kind']:<9}  {o['name']}")
    for o in devices:
        print(f"{'device':>8}  {'-':<5}  {_bytes(o['size']):>10}  {o['what']:<9}  {o['name']}"
              f"{'  (namespace ' + o['ns'] + ')' if o['ns'] else ''}")
    return 0


def cmd_gc(args):
    """Unlink the objects whose owner has died; a live process's objects are never touched."""
    from .hw import cm_ports, port, qpn, shm
    gone = shm.reclaim_dead()
    for o in shm.list_device_objects():
        # A QP table no live process holds a number in; a port file nobody holds open,
        # if up (the default device's down port stays down) or in a namespace; an rdma_cm
        # port table whose rows all belonged to dead processes.
        if o["what"] == "qpn" and qpn.reclaim_unused(o["ns"]) or \
                o["what"] == "port" and port.reclaim_unused(o["ns"], even_down=bool(o["ns"])) or \
                o["what"] == "cm_ports" and cm_ports.reclaim_unused(o["ns"]):
            gone.append(o["name"])
    for name in gone:
        print(f"removed {name}")
    live = sum(1 for o in shm.list_objects() if o["alive"])
    print(f"{len(gone)} object(s) of dead processes removed; {live} of live processes left alone")
    return 0


def cmd_link(args):
    """`rdma link show` and `rdma link set shm0/1 down|up` for shm0's port."""
    from .verbs.link import link_set, link_show
    from .verbs.pyverbs_error import PyverbsUserError
    if args.action == "set":
        try:
            link_set(args.link, args.state)
        except PyverbsUserError as e:
            print(f"shmdat link: {e}", file=sys.stderr)
            return 1
    link = link_show()
    print(f"link {link['link']} state {link['state']} physical_state {link['physical_state']} "
          f"netdev {link['netdev']}")
    return 0


def cmd_bench(argv):
    try:
        from .bench import main as bench_main
    except ImportError as e:
        print(f"shmdat bench is not available: {e}", file=sys.stderr)
        return 2
    return bench_main(argv)


def _parser():
    parser = argparse.ArgumentParser(prog="shmdat", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="providers, attributes, and what this machine allows")
    ls = sub.add_parser("ls", help="list shmdat's shared-memory objects and whether their owners live")
    ls.add_argument("--json", action="store_true", help="print a JSON list")
    sub.add_parser("gc", help="reclaim the objects of dead processes")
    link = sub.add_parser("link", help="show shm0's port, or take it down or up "
                          "(SHMDAT_DEVICE_NS picks a device namespace)")
    actions = link.add_subparsers(dest="action", required=True)
    actions.add_parser("show", help="the port's state")
    link_set_parser = actions.add_parser("set", help="link set shm0/1 down|up")
    link_set_parser.add_argument("link", help="shm0/1")
    link_set_parser.add_argument("state", choices=("down", "up"))
    sub.add_parser("bench", help="perftest-style latency and bandwidth (shmdat bench --help)",
                   add_help=False)
    sub.add_parser("run-verbs", help="run a pyverbs program unchanged on shmdat.verbs "
                   "(shmdat run-verbs --help)", add_help=False)
    sub.add_parser("run", help="launch N ranks of a shmdat.mpi program, or with --mpi4py of an "
                   "unchanged mpi4py program (shmdat run --help)",
                   add_help=False)
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    # bench and run-verbs have their own options: hand them everything after the word.
    if argv and argv[0] == "bench":
        return cmd_bench(argv[1:])
    if argv and argv[0] == "run-verbs":
        from .verbs.__main__ import main as run_verbs
        return run_verbs(argv[1:], prog="shmdat run-verbs")
    if argv and argv[0] == "run":
        return run_mpi(argv[1:], prog="shmdat run", command=True)
    args = _parser().parse_args(argv)
    import shmdat
    try:
        return {"info": cmd_info, "ls": cmd_ls, "gc": cmd_gc, "link": cmd_link}[args.command](args)
    except shmdat.DatError as e:
        print(f"shmdat {args.command}: {e}", file=sys.stderr)
        return 1
