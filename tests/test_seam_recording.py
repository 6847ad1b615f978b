"""tests/recording_verbs.py through the seam: SHMDAT_DAT_VERBS picks it, it logs each
verbs name in seam.CALLS' spelling (also from a spawned peer that is then killed), it
refuses names outside the list, and its check passes or fails on the log."""

import errno

import pytest

from shmdat.dat import seam
from tests import recording_verbs


@pytest.fixture
def recording(tmp_path, monkeypatch):
    """The seam's shm0 Device on the recording module, and its log's path."""
    log = tmp_path / "calls.log"
    monkeypatch.setenv(seam.VERBS_ENV, recording_verbs.__name__)
    monkeypatch.setenv(recording_verbs.LOG_ENV, str(log))
    return seam.open_device(seam.SHM0), log


def _logged(log):
    return set(log.read_text().split("\n")) - {""}


def test_the_seam_loads_the_stand_in_named_in_the_environment(recording):
    dev, _ = recording
    assert dev.qp is recording_verbs.qp and dev.enums is recording_verbs.libibverbs_enums
    assert dev.dv is recording_verbs.shm0dv
    assert (dev.provider, dev.name, dev.port, dev.address) == ("shm0", "shm0", 1, "127.0.0.1")


def test_without_the_variable_the_seam_uses_shmdat_verbs(monkeypatch):
    monkeypatch.delenv(seam.VERBS_ENV, raising=False)
    dev = seam.open_device(seam.SHM0)
    assert dev.qp.__name__ == "shmdat.verbs.qp" and dev.cm_enums.__name__.endswith("librdmacm_enums")


def _use_verbs(dev):
    """A few verbs calls as DAT will make them; the names they must log."""
    e = dev.enums
    ctx = dev.device.Context(name=dev.name)
    pd = dev.pd.PD(ctx)                             # a proxy given back: unwrapped
    mr = dev.mr.MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    assert mr.lkey == mr.rkey
    cq = dev.cq.CQ(ctx, 4, None, None, 0)
    assert cq.poll(1) == (0, [])
    try:
        dev.mr.MR(pd, 4096, e.IBV_ACCESS_REMOTE_WRITE)     # verbs: not without LOCAL_WRITE
    except dev.pyverbs_error.PyverbsRDMAError as exc:    # the real class: `except` works
        assert exc.error_code == errno.EINVAL
    for obj in (cq, mr, pd, ctx):
        obj.close()
    return {"device.Context", "pd.PD", "mr.MR", "libibverbs_enums.IBV_ACCESS_LOCAL_WRITE",
            "libibverbs_enums.IBV_ACCESS_REMOTE_WRITE", "MR.lkey", "MR.rkey", "cq.CQ",
            "CQ.poll", "pyverbs_error.PyverbsRDMAError", "PyverbsRDMAError.error_code",
            "CQ.close", "MR.close", "PD.close", "Context.close"}


def test_each_call_is_logged_once_in_the_seams_spelling(recording, capsys):
    dev, log = recording
    expected = _use_verbs(dev)
    # PyverbsRDMAError.error_code is read off the real exception, not through a proxy.
    assert _logged(log) == expected - {"PyverbsRDMAError.error_code"}
    assert recording_verbs.check(str(log)) == 0
    assert "every one is in shmdat.dat.seam.CALLS" in capsys.readouterr().out


def test_proxies_given_back_are_unwrapped_also_in_lists_and_keep_identity(recording):
    dev, log = recording
    ctx = dev.device.Context(name=dev.name)
    try:
        pd = dev.pd.PD(ctx)
        mr = dev.mr.MR(pd, 64, dev.enums.IBV_ACCESS_LOCAL_WRITE)
        sge = dev.wr.SGE(mr.buf, 8, mr.lkey)
        dev.wr.SendWR(wr_id=1, opcode=dev.enums.IBV_WR_SEND, num_sge=1, sg=[sge],
                      send_flags=dev.enums.IBV_SEND_SIGNALED)
        channel = dev.cq.CompChannel(ctx)
        cq = dev.cq.CQ(ctx, 4, None, channel, 0)
        cq.req_notify(False)
        assert recording_verbs.wrap(recording_verbs.unwrap(cq)) is cq
        for obj in (cq, channel, mr, pd):
            obj.close()
    finally:
        ctx.close()
    assert {"wr.SGE", "wr.SendWR", "MR.buf", "cq.CompChannel", "CQ.req_notify"} <= _logged(log)


@pytest.mark.parametrize("reach", [lambda dev, ctx: ctx.progress,
                                   lambda dev, ctx: ctx._lock,
                                   lambda dev, ctx: dev.device.GIDEntry,
                                   lambda dev, ctx: dev.qp._cap_field])
def test_a_name_outside_the_list_is_refused_logged_and_fails_the_check(recording, reach,
                                                                        capsys):
    dev, log = recording
    ctx = dev.device.Context(name=dev.name)
    try:
        with pytest.raises(recording_verbs.NotInSeam):
            reach(dev, ctx)
    finally:
        ctx.close()
    refused = {n for n in _logged(log) if n.startswith(recording_verbs.REFUSED)}
    assert len(refused) == 1
    assert recording_verbs.check(str(log)) == 1
    assert "not in seam.CALLS: " + refused.pop()[len(recording_verbs.REFUSED):] \
        in capsys.readouterr().out


def _record_in_peer(ch):
    dev = seam.open_device(seam.SHM0)
    ctx = dev.device.Context(name=dev.name)
    ctx.query_port(dev.port)
    ctx.close()
    ch.send("recorded")
    ch.recv()                   # killed while waiting here


def test_a_spawned_peer_logs_into_the_same_file_even_when_killed(recording, spawn):
    _, log = recording
    peer = spawn(_record_in_peer)
    assert peer.recv() == "recorded"
    peer.kill()
    peer.process.join(20)
    assert {"device.Context", "Context.query_port", "Context.close"} <= _logged(log)


def test_an_empty_log_fails_and_says_so(tmp_path, capsys):
    assert recording_verbs.check(str(tmp_path / "never-written.log")) == 1
    assert "did not run on the recording module" in capsys.readouterr().out


def test_a_log_line_outside_the_list_fails_the_check(tmp_path, capsys):
    log = tmp_path / "calls.log"
    log.write_text("qp.QP\nQP.query_ece\n")
    assert recording_verbs.check(str(log)) == 1
    assert "not in seam.CALLS: QP.query_ece" in capsys.readouterr().out
