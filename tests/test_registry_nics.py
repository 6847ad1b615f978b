"""Real-NIC providers in the registry (step 8): their ofa-v2-<device>-<port> names and, for
each missing one, why. rdma-core's pyverbs is a stub package written here, put on the
path of a fresh interpreter and named by the seam's SHMDAT_PYVERBS hook; no NIC needed."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from shmdat.dat import seam
from shmdat.verbs.libibverbs_enums import ibv_port_state

TIMEOUT = 60
REPO = pathlib.Path(__file__).resolve().parent.parent
SHIM = REPO / "shmdat" / "verbs" / "shim"
STUB = "stub_pyverbs"
ACTIVE, DOWN, INIT = (int(ibv_port_state.IBV_PORT_ACTIVE), int(ibv_port_state.IBV_PORT_DOWN),
                      int(ibv_port_state.IBV_PORT_INIT))
IPV4_GID = "0000:0000:0000:0000:0000:ffff:c0a8:0702"        # ::ffff:192.168.7.2
LINK_LOCAL_GID = "fe80:0000:0000:0000:5054:00ff:fe12:3456"
ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"

# The stub: get_device_list, Context(name=) with query_device/query_port/query_gid/close,
# and PyverbsRDMAError, as rdma-core's pyverbs spells them; DEVICES is
# {device: [(port state, [gid, ...]), ...]}, or None for "Failed to get devices list".
_DEVICE_PY = '''
from .pyverbs_error import PyverbsRDMAError

DEVICES = {devices!r}


class _Fields:
    def __init__(self, **fields):
        self.__dict__.update(fields)


def get_device_list():
    if DEVICES is None:
        raise PyverbsRDMAError("Failed to get devices list", 38)
    return [_Fields(name=name.encode()) for name in DEVICES]


class Context:
    def __init__(self, name):
        if name not in (DEVICES or {{}}):
            raise PyverbsRDMAError(f"No device named {{name}}", 19)
        self.ports = DEVICES[name]

    def query_device(self):
        return _Fields(phys_port_cnt=len(self.ports))

    def query_port(self, port_num):
        state, gids = self.ports[port_num - 1]
        return _Fields(state=state, gid_tbl_len=len(gids))

    def query_gid(self, port_num, index):
        return _Fields(gid=self.ports[port_num - 1][1][index])

    def close(self):
        pass
'''

_ERROR_PY = '''
class PyverbsError(Exception):
    pass


class PyverbsRDMAError(PyverbsError):
    def __init__(self, msg, error_code=-1):
        super().__init__(f"{msg}. Errno: {error_code}")
        self.error_code = error_code
'''

_EMPTY = ("pd", "mr", "cq", "qp", "srq", "wr", "cmid", "libibverbs_enums", "librdmacm_enums")

# What the fresh interpreter reports: the registry, why NICs are missing, what ia_open of
# each name asked does, and whether the stub was imported before the registry was asked.
_PROBE = '''
import json, sys
import shmdat
from shmdat.dat import seam
from shmdat.dat.registry import registry_missing_providers
with shmdat.ia_open("shm0"):
    pass
imported_by_shm0 = any(m.split(".")[0] in ("{stub}", "pyverbs") for m in sys.modules)
opened = {{}}
for name in sys.argv[1:]:
    try:
        shmdat.ia_open(name)
        opened[name] = "opened"
    except Exception as e:      # (a stub without the modules an IA uses: AttributeError)
        opened[name] = [type(e).__name__, str(e)]
devices = {{}}
for name in sys.argv[1:]:
    try:
        d = seam.open_device(name)
        devices[name] = [d.name, d.port, d.address, d.dv, d.device.__name__]
    except shmdat.DatError:
        pass
print(json.dumps(dict(
    providers=[p.ia_name for p in shmdat.registry_list_providers()],
    missing=registry_missing_providers(), opened=opened, devices=devices,
    imported_by_shm0=imported_by_shm0)))
'''


def _stub(tmp_path, devices):
    package = tmp_path / STUB
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "device.py").write_text(_DEVICE_PY.format(devices=devices))
    (package / "pyverbs_error.py").write_text(_ERROR_PY)
    for name in _EMPTY:
        (package / f"{name}.py").write_text("")
    return tmp_path


def _run(args, path=(), pyverbs=STUB):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*map(str, path), str(REPO)]))
    env[seam.PYVERBS_ENV] = pyverbs
    env.pop(seam.VERBS_ENV, None)
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=TIMEOUT, env=env, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _probe(*names, path=(), pyverbs=STUB):
    return json.loads(_run(["-c", _PROBE.format(stub=STUB), *names], path, pyverbs))


def test_each_active_port_is_named_as_ofa_dat_conf_names_it(tmp_path):
    stub = _stub(tmp_path, {"mlx5_0": [(ACTIVE, [IPV4_GID]), (ACTIVE, [IPV4_GID])],
                            "rxe0": [(ACTIVE, [LINK_LOCAL_GID, IPV4_GID])]})
    out = _probe(path=[stub])
    assert out["providers"] == ["shm0", "ofa-v2-mlx5_0-1", "ofa-v2-mlx5_0-2", "ofa-v2-rxe0-1"]
    assert out["missing"] == []
    assert not out["imported_by_shm0"]      # ia_open("shm0") never looks for pyverbs


def test_a_listed_port_opens_its_device(tmp_path):
    # (ia_open then goes on through the stub's empty modules: test_nic_engine.py opens
    # one through a stand-in that has them)
    stub = _stub(tmp_path, {"rxe0": [(ACTIVE, [ZERO_GID, LINK_LOCAL_GID, IPV4_GID])]})
    out = _probe("ofa-v2-rxe0-1", path=[stub])
    assert out["devices"]["ofa-v2-rxe0-1"] == ["rxe0", 1, "192.168.7.2", None, f"{STUB}.device"]


def test_a_port_without_an_ipv4_gid_is_provider_not_found_naming_why(tmp_path):
    stub = _stub(tmp_path, {"rxe0": [(ACTIVE, [ZERO_GID, LINK_LOCAL_GID])]})
    out = _probe("ofa-v2-rxe0-1", path=[stub])
    assert "ofa-v2-rxe0-1" in out["providers"]
    kind, message = out["opened"]["ofa-v2-rxe0-1"]
    assert kind == "ProviderNotFound" and "IPv4" in message


def test_ports_not_active_are_missing_with_their_state(tmp_path):
    stub = _stub(tmp_path, {"rxe0": [(DOWN, [IPV4_GID])],
                            "mlx5_0": [(ACTIVE, [IPV4_GID]), (INIT, [IPV4_GID])]})
    out = _probe("ofa-v2-rxe0-1", "ofa-v2-mlx5_0-2", "ofa-v2-mlx5_0-3", path=[stub])
    assert out["providers"] == ["shm0", "ofa-v2-mlx5_0-1"]
    assert out["missing"] == ["ofa-v2-rxe0-1: port 1 DOWN", "ofa-v2-mlx5_0-2: port 2 INIT"]
    for name, why in [("ofa-v2-rxe0-1", "port 1 DOWN"), ("ofa-v2-mlx5_0-2", "port 2 INIT"),
                      ("ofa-v2-mlx5_0-3", "not listed")]:
        kind, message = out["opened"][name]
        assert kind == "ProviderNotFound" and why in message, message
    assert out["devices"] == {}


@pytest.mark.parametrize("devices, why", [
    (None, "no RDMA devices (Failed to get devices list"),
    ({}, "no RDMA devices"),
])
def test_no_devices_leaves_shm0_alone_and_says_so(tmp_path, devices, why):
    out = _probe("ofa-v2-mlx5_0-1", path=[_stub(tmp_path, devices)])
    assert out["providers"] == ["shm0"]
    assert len(out["missing"]) == 1 and out["missing"][0].startswith(why)
    kind, message = out["opened"]["ofa-v2-mlx5_0-1"]
    assert kind == "ProviderNotFound" and why in message


def test_pyverbs_not_installed():
    out = _probe("ofa-v2-mlx5_0-1", pyverbs="shmdat_test_no_such_pyverbs")
    assert out["providers"] == ["shm0"]
    assert out["missing"] == ["shmdat_test_no_such_pyverbs not installed"]
    assert out["opened"]["ofa-v2-mlx5_0-1"][0] == "ProviderNotFound"


def test_shmdats_own_pyverbs_shim_is_not_rdma_cores():
    # Under `shmdat run-verbs` `pyverbs` is shmdat.verbs: its shm0 must not show up twice.
    out = _probe("ofa-v2-shm0-1", path=[SHIM], pyverbs="pyverbs")
    assert out["providers"] == ["shm0"]
    assert out["missing"] == ["pyverbs is shmdat's own shim (shmdat run-verbs), not rdma-core's"]
    assert out["opened"]["ofa-v2-shm0-1"][0] == "ProviderNotFound"


def test_a_name_that_is_no_provider_name_at_all():
    out = _probe("ofa-v2-", "ofa-v2-rxe0", "rxe0-1", pyverbs="shmdat_test_no_such_pyverbs")
    assert all(kind == "ProviderNotFound" for kind, _ in out["opened"].values())


def test_shmdat_info_lists_the_ports_and_why_others_are_missing(tmp_path):
    stub = _stub(tmp_path, {"mlx5_0": [(ACTIVE, [IPV4_GID])], "rxe0": [(DOWN, [IPV4_GID])]})
    out = _run(["-m", "shmdat", "info"], path=[stub])
    lines = out.splitlines()
    assert lines[:3] == ["provider shm0: DAT 1.2, thread safe: True",
                         "provider ofa-v2-mlx5_0-1: DAT 1.2, thread safe: True",
                         "no real-NIC provider: ofa-v2-rxe0-1: port 1 DOWN"]
    assert "IA attributes" in out                           # shm0's IA still opens
