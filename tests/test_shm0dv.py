"""shm0's direct verbs (pyverbs.providers.shm0.shm0dv), each behaviour provoked: with
real processes wherever a peer is involved; every function's refusal of another
provider's object (EOPNOTSUPP) and of a wrong type (PyverbsUserError)."""

import errno
import subprocess
import sys
import time

import pytest

from shmdat.verbs import cmid as cmid_module
from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.cmid import CMID, AddrInfo, CMEventChannel
from shmdat.verbs.providers.shm0 import shm0dv
from shmdat.verbs.pyverbs_error import PyverbsRDMAError, PyverbsUserError
from shmdat.verbs.qp import QPAttr

from tests.verbs_ends import POLL_BOUND, bounded


@pytest.fixture(autouse=True)
def _rdma_cm_context_closes():
    """rdma_cm's Context of this process closes after each test (the leak check)."""
    yield
    if cmid_module._the_agent is not None:
        cmid_module._the_agent.ctx.close()


def _until(condition, step):
    """Run step() until condition() holds (bounded)."""
    end = time.monotonic() + POLL_BOUND
    while not condition():
        assert time.monotonic() < end, "the condition did not come true"
        step()


# events_pending

def test_events_pending_moves_with_async_and_cm_events_only(verbs_pair):
    a, b = verbs_pair
    before = shm0dv.events_pending(a.ctx)
    for _ in range(3):
        a.cq.poll()
        b.cq.poll()
    assert shm0dv.events_pending(a.ctx) == before            # quiet rounds: no move
    a.qp.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)     # b's peer leaves
    _until(lambda: shm0dv.events_pending(a.ctx) != before, b.cq.poll)
    event = bounded(b.ctx.get_async_event)
    assert event.event_type == e.IBV_EVENT_QP_FATAL
    event.ack()
    queued = shm0dv.events_pending(b.ctx)
    cmid = CMID(CMEventChannel())
    cmid.resolve_addr(AddrInfo(dst="127.0.0.1", dst_service="1"))     # ADDR_RESOLVED queued
    assert shm0dv.events_pending(a.ctx) == queued + 1


# Every function refuses what is not shm0's.

class Context:
    """Another provider's ibv_context, as rdma-core's pyverbs names it (a NIC's)."""


# function -> the foreign object of the kind it takes first, and the arguments after it
FOREIGN = {
    shm0dv.events_pending: (Context, ()),
}


@pytest.mark.parametrize("function", list(FOREIGN), ids=lambda f: f.__name__)
def test_another_providers_object_is_eopnotsupp(function):
    cls, args = FOREIGN[function]
    with pytest.raises(PyverbsRDMAError) as err:
        function(cls(), *args)
    assert err.value.error_code == errno.EOPNOTSUPP
    assert function.__name__ in str(err.value)


@pytest.mark.parametrize("function", list(FOREIGN), ids=lambda f: f.__name__)
@pytest.mark.parametrize("wrong", ["shm0", None, 1, b"\0"])
def test_a_wrong_type_is_a_pyverbs_user_error(function, wrong):
    _, args = FOREIGN[function]
    with pytest.raises(PyverbsUserError, match="must be a"):
        function(wrong, *args)


def test_the_module_is_pyverbs_providers_shm0_shm0dv_under_the_shim(tmp_path):
    program = tmp_path / "app.py"
    program.write_text("import pyverbs.providers.shm0.shm0dv as dv\n"
                       "import shmdat.verbs.providers.shm0.shm0dv as real\n"
                       "print(dv is real, callable(dv.events_pending))\n")
    done = subprocess.run([sys.executable, "-m", "shmdat.verbs", str(program)],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "True True\n"), done.stderr
