"""A stand-in for shmdat.verbs that records every verbs name DAT touches and refuses the
ones the seam does not allow (docs/design/dat-over-verbs.md, 3.1 and step 2).

With SHMDAT_DAT_VERBS=tests.recording_verbs the seam loads this module instead of
shmdat.verbs for shm0. Its attributes are the verbs modules (device, qp, ...,
shm0dv) as proxies: each name read is logged as "module.name" (`qp.QP`) or
"Class.member" (`QP.post_send`), the spelling of seam.CALLS; a name not in CALLS, or
one starting with `_`, raises NotInSeam and is logged as "REFUSED <name>". Objects
that verbs calls return come back as proxies too, and proxies passed back as arguments
are unwrapped (shmdat.verbs checks isinstance).

The log is the file SHMDAT_RECORDING_LOG (required): each process appends a line the
first time it sees a name, so the log holds the calls of every spawned peer, also of
those killed. `python -m tests.recording_verbs check LOG` checks it against seam.CALLS.
"""

import enum
import importlib
import os
import sys
import weakref

from shmdat.dat import seam

LOG_ENV = "SHMDAT_RECORDING_LOG"
REFUSED = "REFUSED "
_seen = set()           # (log path, line): what this process has written where


class NotInSeam(AttributeError):
    """DAT reached for a verbs name that seam.CALLS does not list."""


def _log_path():
    path = os.environ.get(LOG_ENV)
    if not path:
        raise RuntimeError(f"{__name__} needs {LOG_ENV}=<file> for its log")
    return path


def _record(name):
    """Check `name` against the allow-list and log it the first time this process sees it."""
    allowed = name in seam.CALLS and not name.split(".")[-1].startswith("_")
    line = name if allowed else REFUSED + name
    path = _log_path()
    if (path, line) not in _seen:
        _seen.add((path, line))
        # One short write in append mode: lines of several processes do not mix.
        with open(path, "a") as log:
            log.write(line + "\n")
    if not allowed:
        raise NotInSeam(f"{name} is not in shmdat.dat.seam.CALLS")


def _is_verbs_object(value):
    kind = type(value)
    return (kind.__module__.startswith("shmdat.verbs.")
            and not isinstance(value, (enum.Enum, BaseException, type)))


_proxies = weakref.WeakValueDictionary()     # id(target) -> its live proxy: `is` holds


def wrap(value):
    """`value` as a proxy if it is a verbs object (lists and tuples elementwise); one
    live proxy per object, so `is` and dict keys work as on the objects themselves."""
    if type(value) in (list, tuple):
        return type(value)(wrap(v) for v in value)
    if not _is_verbs_object(value):
        return value
    proxy = _proxies.get(id(value))
    if proxy is None:
        proxy = _proxies[id(value)] = _Object(value)
    return proxy


def unwrap(value):
    if isinstance(value, _Object):
        return object.__getattribute__(value, "_target")
    if type(value) in (list, tuple):
        return type(value)(unwrap(v) for v in value)
    return value


def _passing(function):
    """`function` called with proxies unwrapped, its results wrapped."""
    def call(*args, **kwargs):
        return wrap(function(*unwrap(args), **{k: unwrap(v) for k, v in kwargs.items()}))
    return call


def _member(value):
    # Exception and enum classes are used as they are (`except`, comparisons).
    if isinstance(value, type) and issubclass(value, (BaseException, enum.Enum)):
        return value
    return _passing(value) if callable(value) else wrap(value)


class _Object:
    """A verbs object: members logged as Class.member."""
    __slots__ = ("_target", "__weakref__")

    def __init__(self, target):
        object.__setattr__(self, "_target", target)

    def __getattr__(self, name):
        target = object.__getattribute__(self, "_target")
        _record(f"{type(target).__name__}.{name}")
        return _member(getattr(target, name))

    def __setattr__(self, name, value):
        target = object.__getattribute__(self, "_target")
        _record(f"{type(target).__name__}.{name}")
        setattr(target, name, unwrap(value))

    def __repr__(self):
        return f"<recorded {object.__getattribute__(self, '_target')!r}>"


class _Module:
    """A verbs module: names logged as module.name."""

    def __init__(self, name, module):
        self._name, self._module = name, module

    def __getattr__(self, name):
        _record(f"{self._name}.{name}")
        return _member(getattr(self._module, name))


def _verbs(name):
    return _Module(name, importlib.import_module(f"shmdat.verbs.{name}"))


def _shm0dv():
    """shm0dv when it exists (step 3 of the plan builds it), else None."""
    module = seam.optional_module(seam.SHM0DV)
    return None if module is None else _Module("shm0dv", module)


# The attributes the seam reads from a stand-in: seam.MODULES and shm0dv.
device = _verbs("device")
pd = _verbs("pd")
mr = _verbs("mr")
cq = _verbs("cq")
qp = _verbs("qp")
srq = _verbs("srq")
wr = _verbs("wr")
cmid = _verbs("cmid")
libibverbs_enums = _verbs("libibverbs_enums")
librdmacm_enums = _verbs("librdmacm_enums")
pyverbs_error = _verbs("pyverbs_error")
shm0dv = _shm0dv()


def check(path):
    """0 when the log holds names and every one is in seam.CALLS, else 1 (nothing recorded
    means the recording module was not used: the proof proves nothing)."""
    names = set()
    if os.path.exists(path):
        with open(path) as log:
            names = {line.strip() for line in log if line.strip()}
    refused = sorted(n[len(REFUSED):] for n in names if n.startswith(REFUSED))
    outside = sorted(n for n in names if not n.startswith(REFUSED) and n not in seam.CALLS)
    if not names:
        print("recorded verbs calls: none: the DAT tests did not run on the recording module")
        return 1
    print(f"recorded verbs calls: {len(names)} distinct names")
    if refused or outside:
        for name in refused + outside:
            print(f"  not in seam.CALLS: {name}")
        return 1
    print("every one is in shmdat.dat.seam.CALLS")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "check":
        sys.exit(f"usage: python -m {__spec__.name} check LOG")
    sys.exit(check(sys.argv[2]))
