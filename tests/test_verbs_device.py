"""shmdat.verbs: the device, its Context, PDs and MRs, as pyverbs programs use them."""

import atexit
import ctypes
import errno
import gc
import os
import subprocess
import sys

import pytest

from shmdat.hw import shm
from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.addr import AH, GID, AHAttr, GlobalRoute
from shmdat.verbs.base import PyverbsRDMAErrno, inc_rkey
from shmdat.verbs import device as d
from shmdat.verbs.device import Context, get_device_list
from shmdat.verbs.mr import MR
from shmdat.verbs.pd import PD
from shmdat.verbs.pyverbs_error import PyverbsRDMAError, PyverbsUserError

RW = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ


@pytest.fixture
def ctx():
    with Context(name="shm0") as c:
        yield c


@pytest.fixture
def pd(ctx):
    return PD(ctx)


def rdma_error(call, code):
    with pytest.raises(PyverbsRDMAError) as err:
        call()
    assert err.value.error_code == code, err.value
    return err.value


def test_one_device_like_soft_roce():
    [dev] = get_device_list()
    assert dev.name == b"shm0" and dev.node_type == e.IBV_NODE_CA
    assert dev.transport_type == e.IBV_TRANSPORT_IB
    with Context(name=dev.name.decode()) as ctx:
        attr = ctx.query_device()
        assert attr.node_guid == dev.guid and attr.phys_port_cnt == 1
        # at least rxe's where the issue names them
        assert attr.max_qp_wr >= 1000 and attr.max_sge >= 2 and attr.max_srq_wr >= 2000
        assert attr.max_qp_rd_atom >= 12 and attr.atomic_caps == e.IBV_ATOMIC_HCA
        assert ctx.query_device_ex().orig_attr.max_cqe == attr.max_cqe


def test_context_needs_a_known_name():
    with pytest.raises(PyverbsUserError):
        Context()
    with pytest.raises(PyverbsRDMAError, match="Failed to find device mlx5_0"):
        Context(name="mlx5_0")


def test_the_port_is_an_active_ethernet_port(ctx):
    port = ctx.query_port(1)
    assert port.state == e.IBV_PORT_ACTIVE and port.link_layer == e.IBV_LINK_LAYER_ETHERNET
    assert port.gid_tbl_len >= 4 and port.active_mtu == e.IBV_MTU_1024
    rdma_error(lambda: ctx.query_port(2), errno.EINVAL)
    assert ctx.query_pkey(1, 0) == 0xFFFF and ctx.get_pkey_index(1, 0xFFFF) == 0
    rdma_error(lambda: ctx.query_pkey(1, 1), errno.EINVAL)


def test_roce_gids_of_loopback(ctx):
    table = ctx.query_gid_table(16)
    v2 = [g for g in table if g.gid_type == e.IBV_GID_TYPE_ROCE_V2]
    assert "0000:0000:0000:0000:0000:ffff:7f00:0001" in [g.gid_str() for g in v2]
    for entry in table:
        assert ctx.query_gid(1, entry.gid_index) == entry.gid
        sysfs = ctx.query_gid_type(1, entry.gid_index)
        assert (sysfs == e.IBV_GID_TYPE_SYSFS_ROCE_V2) == (entry.gid_type == e.IBV_GID_TYPE_ROCE_V2)
        assert ctx.query_gid_ex(1, entry.gid_index).gid_str() == entry.gid_str()
    empty = len(table)
    assert ctx.query_gid(1, empty) == GID()                  # unused entries read as zero
    rdma_error(lambda: ctx.query_gid_ex(1, empty), errno.ENODATA)
    rdma_error(lambda: ctx.query_gid(1, 10_000), errno.EINVAL)
    rdma_error(lambda: ctx.query_gid_table(1), -errno.EINVAL)   # pyverbs passes on the negative return
    assert GID("::ffff:127.0.0.1") == GID("127.0.0.1")
    assert GID("fe80::1").gid == "fe80:0000:0000:0000:0000:0000:0000:0001"


def test_closing_is_idempotent_and_parents_close_children():
    ctx = Context(name="shm0")
    pd = PD(ctx)
    mr = MR(pd, 4096, RW)
    ctx.close()
    assert pd._closed and mr._closed and mr.buf == 0
    ctx.close()
    pd.close()
    rdma_error(lambda: ctx.query_device(), errno.EBADF)
    rdma_error(lambda: mr.read(1, 0), errno.EBADF)
    with pytest.raises(PyverbsUserError):
        PD(pd)


def test_mr_buffer_is_a_real_address(pd):
    mr = MR(pd, 4096, RW)
    mr.write(b"hello", 5, 10)
    mr.write("text", 4, 100)
    assert mr.read(5, 10) == b"hello" and mr.read(4, 100) == b"text"
    assert ctypes.string_at(mr.buf + 10, 5) == b"hello"
    assert mr.length == 4096 and mr.lkey == mr.rkey != 0 and mr.lkey < 1 << 32
    with pytest.raises(PyverbsUserError):
        mr.read(10, 4090)
    with pytest.raises(PyverbsUserError):
        mr.read(1, -1)


def test_mr_over_program_memory(pd):
    buf = ctypes.create_string_buffer(256)
    mr = MR(pd, 256, e.IBV_ACCESS_LOCAL_WRITE, address=ctypes.addressof(buf))
    mr.write(b"mine", 4, 1)
    assert buf.raw[:6] == b"\0mine\0" and mr.buf == ctypes.addressof(buf)
    assert mr.rkey == mr.lkey                # one key, whatever the access, as on Soft-RoCE


def test_mr_access_is_checked_at_registration(pd):
    rdma_error(lambda: MR(pd, 64, e.IBV_ACCESS_REMOTE_WRITE), errno.EINVAL)
    rdma_error(lambda: MR(pd, 64, e.IBV_ACCESS_REMOTE_ATOMIC), errno.EINVAL)
    rdma_error(lambda: MR(pd, 64, e.IBV_ACCESS_ON_DEMAND | e.IBV_ACCESS_LOCAL_WRITE), errno.EOPNOTSUPP)
    assert MR(pd, 64, e.IBV_ACCESS_REMOTE_READ).rkey != 0     # remote read needs no local write
    with pytest.raises(PyverbsUserError):
        MR(PD, 64, 0)


def test_rereg_keeps_the_keys(ctx, pd):
    mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    lkey = mr.lkey
    mr.rereg(e.IBV_REREG_MR_CHANGE_ACCESS, access=RW)
    assert mr.lkey == lkey and mr.rkey == lkey
    other = PD(ctx)
    mr.rereg(e.IBV_REREG_MR_CHANGE_PD, pd=other)
    assert mr in other.mrs and mr not in pd.mrs
    buf = ctypes.create_string_buffer(64)
    mr.rereg(e.IBV_REREG_MR_CHANGE_TRANSLATION, addr=ctypes.addressof(buf), length=64)
    mr.write(b"moved", 5)
    assert buf.raw[:5] == b"moved" and mr.lkey == lkey and mr.length == 64
    rdma_error(lambda: mr.rereg(0), errno.EINVAL)
    rdma_error(lambda: mr.rereg(e.IBV_REREG_MR_CHANGE_PD), errno.EINVAL)
    rdma_error(lambda: mr.rereg(e.IBV_REREG_MR_CHANGE_ACCESS, access=e.IBV_ACCESS_REMOTE_WRITE),
               errno.EINVAL)


def test_closed_mrs_leave_nothing_in_dev_shm(ctx, pd):
    def of_this_context():
        return [o["name"] for o in shm.list_objects() if ctx.hca.prefix in o["name"]]

    mrs = [MR(pd, 1 << 16, RW) for _ in range(4)]
    with_mrs = of_this_context()
    for mr in mrs:
        mr.close()
    assert len(of_this_context()) == len(with_mrs) - 4       # one segment per MR, gone
    ctx.close()
    assert of_this_context() == []


def test_a_forked_child_opens_its_own_context(ctx, pd):
    MR(pd, 4096, RW)                                   # the parent holds a live device
    pid = os.fork()
    if pid == 0:                                       # the child: exit status is the verdict
        code = 1
        try:
            shm.refresh_identity()
            with Context(name="shm0") as child:
                mr = MR(PD(child), 64, RW)
                mr.write(b"child", 5)
                code = 0 if mr.read(5, 0) == b"child" else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


PYVERBS_PROGRAM = '''
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.libibverbs_enums import ibv_access_flags
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError

name = d.get_device_list()[0].name.decode()
with d.Context(name=name) as ctx:
    with PD(ctx) as pd:
        access = ibv_access_flags.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ
        mr = MR(pd, 4096, access)
        mr.write("pyverbs", 7)
        print(name, ctx.query_port(1).state == e.IBV_PORT_ACTIVE, mr.read(7, 0).decode())
        try:
            MR(pd, 8, e.IBV_ACCESS_REMOTE_WRITE)
        except PyverbsRDMAError as err:
            print("refused", err.error_code)
'''


def test_a_pyverbs_program_runs_unchanged(tmp_path):
    script = tmp_path / "app.py"
    script.write_text(PYVERBS_PROGRAM)
    done = subprocess.run([sys.executable, "-m", "shmdat.verbs", str(script)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["shm0 True pyverbs", f"refused {errno.EINVAL}"]


def test_base_helpers_as_pyverbs_has_them():
    assert inc_rkey(0x12345678) == 0x12345679 and inc_rkey(0x123456FF) == 0x12345600
    err = PyverbsRDMAErrno("Failed to poll CQ")
    assert isinstance(err, PyverbsRDMAError) and str(err) == "Failed to poll CQ"
    assert PyverbsRDMAErrno("x", errno.EAGAIN).error_code == errno.EAGAIN


def test_an_address_handle_needs_a_grh_on_roce(ctx, pd):
    gr = GlobalRoute(ctx.query_gid(1, 3), sgid_index=3)
    ah = AH(pd, attr=AHAttr(is_global=1, gr=gr, port_num=1))
    assert ah in pd.ahs and ah.attr.dgid == "0000:0000:0000:0000:0000:ffff:7f00:0001"
    rdma_error(lambda: AH(pd, attr=AHAttr(dlid=1)), errno.EINVAL)                   # not global
    rdma_error(lambda: AH(pd, attr=AHAttr(is_global=1, gr=gr, port_num=2)), errno.EINVAL)
    rdma_error(lambda: AH(pd, attr=AHAttr(is_global=1, gr=GlobalRoute(GID(), sgid_index=99))),
               errno.EINVAL)
    with pytest.raises(PyverbsUserError):
        AH(ctx, attr=AHAttr())
    pd.close()
    assert ah._closed                            # the PD closes its AHs


def test_a_forked_child_exiting_normally_leaves_the_parents_context_alone(ctx, pd):
    mr = MR(pd, 64, RW)
    child = os.fork()
    if child == 0:                      # what a normal exit runs, then out (not back into pytest)
        atexit._run_exitfuncs()
        os._exit(0)
    _, status = os.waitpid(child, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert os.path.exists(os.path.join(shm.SHM_DIR, ctx.hca.prefix + ".ia"))
    mr.write(b"still ours", 10)
    assert mr.read(10, 0) == b"still ours"


def test_port_speed_and_descriptions(ctx):
    assert ctx.query_port_speed(1) == 250                       # 25 Gb/s at 1X, in 100 Mb/s
    rdma_error(lambda: ctx.query_port_speed(2), errno.EINVAL)
    port = ctx.query_port(1)
    assert d.phys_state_to_str(port.phys_state) == "Link up (5)"
    assert d.width_to_str(port.active_width) == "1X (1)"
    assert d.speed_to_str(port.active_speed, port.active_speed_ex) == "25.0 Gbps (32)"
    assert d.translate_mtu(port.active_mtu) == "1024 (3)"
    assert d.translate_link_layer(port.link_layer) == "Ethernet"
    assert "Invalid" in d.translate_mtu(9) and "Invalid" in d.width_to_str(3)


def test_extended_capabilities_are_all_absent(ctx):
    attr_ex = ctx.query_device_ex()
    assert attr_ex.tso_caps.max_tso == 0 and attr_ex.rss_caps.supported_qpts == 0
    assert attr_ex.odp_caps.general_caps == 0 and attr_ex.tm_caps.max_num_tags == 0
    assert attr_ex.max_dm_size == 0 and attr_ex.hca_core_clock == 0
    rdma_error(ctx.query_rt_values_ex, errno.EOPNOTSUPP)
    rdma_error(lambda: d.DM(ctx, d.AllocDmAttr(length=64)), errno.EOPNOTSUPP)


def test_a_context_nobody_holds_is_closed_by_the_next_one():
    fds = len(os.listdir("/proc/self/fd"))
    for _ in range(50):                      # rdma-core's tests drop Contexts unclosed
        PD(Context(name="shm0"))
    gc.collect()
    with Context(name="shm0"):
        assert len(os.listdir("/proc/self/fd")) <= fds + 8


_DROPPED_IN_A_FORKED_CHILD = """
import gc, os, shmdat
from shmdat.verbs.device import Context
ctx, ia = Context(name="shm0"), shmdat.ia_open()
pid = os.fork()
if pid == 0:                    # the child drops what it inherited
    del ctx, ia
    gc.collect()
    os._exit(0)
os.waitpid(pid, 0)
ctx.close()
ia.close()
"""


def test_a_forked_child_dropping_the_parents_context_and_ia_gives_no_warning():
    done = subprocess.run([sys.executable, "-X", "dev", "-c", _DROPPED_IN_A_FORKED_CHILD],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "ResourceWarning" not in done.stderr
