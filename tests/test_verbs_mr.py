"""shmdat.verbs MRs seen from a peer: the rkey, and what rereg and MREx change."""

import errno

import pytest

from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.mr import MR, MREx
from shmdat.verbs.pyverbs_error import PyverbsRDMAError


def test_an_mr_without_remote_access_has_an_rkey_that_fails_remotely(verbs_pair):
    a, b = verbs_pair
    local = MR(b.pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    assert local.rkey == local.lkey                # one key, as on Soft-RoCE
    a.rdma(e.IBV_WR_RDMA_WRITE, 1, 0, 8, local.rkey, local.buf)
    assert a.completion().status == e.IBV_WC_REM_ACCESS_ERR


def test_rereg_widening_access_keeps_the_rkey_a_peer_holds(verbs_pair):
    a, b = verbs_pair
    rkey = b.mr.rkey
    b.mr.rereg(e.IBV_REREG_MR_CHANGE_ACCESS, access=e.IBV_ACCESS_LOCAL_WRITE)
    b.mr.rereg(e.IBV_REREG_MR_CHANGE_ACCESS,
               access=e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    a.mr.write(b"widened", 7, 0)
    a.rdma(e.IBV_WR_RDMA_WRITE, 2, 0, 7, rkey, b.mr.buf + 16)
    assert a.completion().status == e.IBV_WC_SUCCESS
    assert b.mr.read(7, 16) == b"widened"


def test_mrex_registers_as_reg_mr_does(verbs_pair):
    a, b = verbs_pair
    mr = MREx(b.pd, 64, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    a.mr.write(b"extended", 8, 0)
    a.rdma(e.IBV_WR_RDMA_WRITE, 3, 0, 8, mr.rkey, mr.buf)
    assert a.completion().status == e.IBV_WC_SUCCESS
    assert mr.read(8, 0) == b"extended"


@pytest.mark.parametrize("kwargs, code", [
    ({"access": e.IBV_ACCESS_REMOTE_WRITE}, errno.EINVAL),
    ({"implicit": True, "fd": 0}, errno.EINVAL),
    ({"fd": 3}, errno.EINVAL),                              # an fd needs an iova
    ({"fd": 3, "iova": 0}, errno.EOPNOTSUPP),               # DMA-BUF
    ({"dmah": object()}, errno.EOPNOTSUPP),
    ({"address": 4096, "iova": 8192}, errno.EOPNOTSUPP),
])
def test_mrex_errors(verbs_pair, kwargs, code):
    pd = verbs_pair[1].pd
    kwargs.setdefault("access", e.IBV_ACCESS_LOCAL_WRITE)
    with pytest.raises(PyverbsRDMAError, match="Failed to register MR using extended API") as err:
        MREx(pd, 64, **kwargs)
    assert err.value.error_code == code
