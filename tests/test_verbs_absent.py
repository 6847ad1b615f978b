"""What shm0 does not have, as pyverbs offers it: every name rdma-core's tests
import exists; objects of absent features raise PyverbsRDMAError with
EOPNOTSUPP (rdma-core's tests skip on it), their attributes hold what they are
given; and the small real helpers (fork, mem_alloc, utils) work."""

import ctypes
import errno
import subprocess
import sys
import textwrap

import pytest

from shmdat.verbs import dmabuf, flow, fork, mem_alloc, pd, qp, srq, utils, wq, xrcd
from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs import mr as mr_module
from shmdat.verbs.providers.efa import efa_enums, efadv
from shmdat.verbs.providers.mlx5 import dr_domain, mlx5_enums, mlx5dv
from shmdat.verbs.pyverbs_error import PyverbsRDMAError

ABSENT = [xrcd.XRCD, wq.WQ, wq.RwqIndTable, flow.Flow, dmabuf.DmaBuf, mr_module.MW,
          mr_module.DMMR, mr_module.DmaBufMR, mr_module.Buf, mr_module.DMAHandle,
          pd.ParentDomain, qp.QPEx, mlx5dv.Mlx5Context, mlx5dv.Mlx5QP, dr_domain.DrDomain,
          efadv.EfaCQ]


@pytest.mark.parametrize("cls", ABSENT, ids=lambda cls: cls.__name__)
def test_an_absent_feature_is_eopnotsupp(cls):
    with pytest.raises(PyverbsRDMAError) as err:
        cls(None, 1, name="shm0")
    assert err.value.error_code == errno.EOPNOTSUPP
    assert cls.__name__ in str(err.value)


def test_attributes_of_absent_features_hold_what_they_are_given():
    attr = wq.WQInitAttr(wq_type=e.IBV_WQT_RQ, max_wr=8)
    attr.wq_cq = "cq"
    assert (attr.wq_type, attr.max_wr, attr.wq_cq) == (e.IBV_WQT_RQ, 8, "cq")
    assert xrcd.XRCDInitAttr(1, 2, 3).args == (1, 2, 3)


def test_srq_init_attr_ex_defaults():
    attr = srq.SrqInitAttrEx(max_wr=64)
    assert (attr.max_wr, attr.max_sge, attr.srq_limit) == (64, 1, 0)
    assert (attr.comp_mask, attr.srq_type, attr.pd, attr.xrcd, attr.cq) == \
        (0, e.IBV_SRQT_BASIC, None, None, None)


def test_provider_enums_have_the_headers_values():
    assert mlx5_enums.mlx5dv_dc_type.MLX5DV_DCTYPE_DCI == mlx5_enums.MLX5DV_DCTYPE_DCI == 2
    assert mlx5_enums.MLX5_SEND_WQE_BB == 64 and mlx5_enums.MLX5_CQE_INVALID == 15
    assert mlx5_enums.MLX5DV_FLOW_TABLE_TYPE_NIC_TX_ == 1
    assert efa_enums.EFADV_QP_DRIVER_TYPE_SRD == 0
    assert mlx5dv.context_flags_to_str(1 | 4) == \
        "MLX5DV_CONTEXT_FLAGS_CQE_V1 MLX5DV_CONTEXT_FLAGS_MPW_ALLOWED"


def test_fork_needs_nothing():
    fork.fork_init()
    assert fork.is_fork_initialized() == e.IBV_FORK_UNNEEDED


def test_mem_alloc_gives_real_memory():
    ptr = mem_alloc.posix_memalign(8192, 4096)
    assert ptr % 4096 == 0 and ctypes.string_at(ptr, 8192) == bytes(8192)
    mem_alloc.free(ptr)
    addr = mem_alloc.mmap(length=4096)
    ctypes.memmove(addr, b"mapped", 6)
    assert ctypes.string_at(addr, 6) == b"mapped"
    mem_alloc.madvise(addr, 4096)                     # MADV_DONTNEED: zero again
    assert ctypes.string_at(addr, 6) == bytes(6)
    mem_alloc.munmap(addr, 4096)
    with pytest.raises(PyverbsRDMAError) as err:
        mem_alloc.madvise(addr + 1, 4096)             # not page aligned
    assert err.value.error_code == errno.EINVAL
    with pytest.raises(MemoryError):
        mem_alloc.posix_memalign(64, 3)               # not a power of two


def test_utils_names():
    assert utils.qp_type_to_str(e.IBV_QPT_RC) == "RC"
    assert utils.qp_state_to_str(e.IBV_QPS_ERR) == "Error"
    assert utils.qp_type_to_str(77) == "Unknown (77)"


def test_provider_modules_through_the_pyverbs_shim(tmp_path):
    program = tmp_path / "app.py"
    program.write_text(textwrap.dedent("""
        import pyverbs.providers.mlx5.mlx5dv as dv
        import shmdat.verbs.providers.mlx5.mlx5dv as real
        from pyverbs.providers.mlx5.mlx5_enums import MLX5DV_DCTYPE_DCI
        from pyverbs.providers.efa.efadv import EfaCQ
        print(dv is real, MLX5DV_DCTYPE_DCI, EfaCQ.__module__)
    """))
    done = subprocess.run([sys.executable, "-m", "shmdat.verbs", str(program)],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["True", "2", "shmdat.verbs.providers.efa.efadv"], done.stderr
