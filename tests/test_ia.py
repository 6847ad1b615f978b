"""dat_ia_open / close / query, the registry, and handles in general."""

import ipaddress

import pytest

import shmdat
from shmdat import CloseFlags, EventNumber, EvdFlags, Return

from tests.nodes import WAIT


def test_registry_lists_shm0():
    providers = shmdat.registry_list_providers()
    assert [p.ia_name for p in providers] == ["shm0"]
    assert providers[0].thread_safe is True
    assert providers[0].version == (1, 2)


def test_unknown_provider_raises_provider_not_found():
    with pytest.raises(shmdat.ProviderNotFound) as e:
        shmdat.ia_open("mlx5_0")
    assert e.value.code == Return.PROVIDER_NOT_FOUND
    assert "mlx5_0" in str(e.value)


@pytest.mark.parametrize("qlen", [0, -1, "8"])
def test_bad_async_qlen_is_invalid_parameter(qlen):
    with pytest.raises(shmdat.InvalidParameter) as e:
        shmdat.ia_open(async_evd_qlen=qlen)
    assert e.value.code == Return.INVALID_PARAMETER


def test_addresses_are_the_devices_ip_and_ports_tell_connections_apart(ia):
    attr, _ = ia.query()
    assert ipaddress.ip_address(ia.address).version == 4
    assert ia.address == attr.ia_address == "127.0.0.1"         # shm0's port is on loopback
    with shmdat.ia_open() as other:
        assert other.address == ia.address          # one device, one address: ports decide
        cr_evd = other.evd_create(4, EvdFlags.CR)
        conn_qual = other.psp_create_any(cr_evd).conn_qual
        with pytest.raises(shmdat.ConnQualInUse) as e:
            ia.psp_create(conn_qual, ia.evd_create(4, EvdFlags.CR))    # one port table
        assert e.value.code == Return.CONN_QUAL_IN_USE
        evd, other_evd = ia.evd_create(8), other.evd_create(8)
        ep = ia.ep_create(ia.pz_create(), evd, evd, evd)
        other_ep = other.ep_create(other.pz_create(), other_evd, other_evd, other_evd)
        ep.connect(other.address, conn_qual, WAIT)
        cr = cr_evd.wait(WAIT)[0].data.cr
        request = cr.query()
        cr.accept(other_ep)
        assert evd.wait(WAIT)[0].number == EventNumber.CONNECTION_EVENT_ESTABLISHED
        assert other_evd.wait(WAIT)[0].number == EventNumber.CONNECTION_EVENT_ESTABLISHED
        active, passive = ep.query(), other_ep.query()
        port = active.local_port_qual                # the active side's own port
        assert 1 <= port <= 65535 and port != conn_qual
        assert (active.local_ia_address, active.remote_ia_address, active.remote_port_qual) == \
            (ia.address, other.address, conn_qual)
        assert (request.remote_ia_address, request.remote_port_qual) == (ia.address, port)
        assert (passive.local_ia_address, passive.local_port_qual,
                passive.remote_ia_address, passive.remote_port_qual) == \
            (other.address, conn_qual, ia.address, port)


def test_query_tells_true_values(ia):
    attr, prov = ia.query()
    assert attr.adapter_name == "shm0"
    assert prov.provider_name == "shm0"
    assert prov.max_private_data_size >= 64
    assert prov.is_thread_safe is True
    assert prov.optimal_buffer_alignment == 64
    for name in ("max_eps", "max_dto_per_ep", "max_evds", "max_evd_qlen", "max_iov_segments_per_dto",
                 "max_lmrs", "max_lmr_block_size", "max_pzs", "max_message_size", "max_rdma_size",
                 "max_rmrs", "max_srqs", "max_ep_per_srq", "max_recv_per_srq",
                 "max_rdma_read_per_ep_in", "max_rdma_read_per_ep_out"):
        assert getattr(attr, name) > 0, name


def test_async_evd_exists_and_cannot_be_freed(ia):
    evd = ia.async_evd
    assert evd.query().evd_flags & EvdFlags.ASYNC
    with pytest.raises(shmdat.InvalidState) as e:
        evd.free()
    assert e.value.code == Return.INVALID_STATE


def test_graceful_close_refuses_while_objects_remain():
    ia = shmdat.ia_open()
    pz = ia.pz_create()
    with pytest.raises(shmdat.InvalidState) as e:
        ia.close(CloseFlags.GRACEFUL)
    assert e.value.code == Return.INVALID_STATE and "PZ" in str(e.value)
    pz.free()
    ia.close(CloseFlags.GRACEFUL)


def test_abrupt_close_destroys_everything():
    ia = shmdat.ia_open()
    pz = ia.pz_create()
    evd = ia.evd_create(4)
    lmr = ia.lmr_create(pz, 4096)
    ep = ia.ep_create(pz, evd, evd, evd)
    ia.close()
    for h in (ia, pz, evd, lmr, ep):
        with pytest.raises(shmdat.InvalidHandle) as e:
            h.query()
        assert e.value.code == Return.INVALID_HANDLE


def test_second_close_is_invalid_handle():
    ia = shmdat.ia_open()
    ia.close()
    with pytest.raises(shmdat.InvalidHandle):
        ia.close()


def test_bad_close_flags(ia):
    with pytest.raises(shmdat.InvalidParameter):
        ia.close(7)


def test_consumer_context_on_every_handle(ia):
    pz = ia.pz_create()
    evd = ia.evd_create(4)
    cr_evd = ia.evd_create(4, EvdFlags.CR)
    handles = [ia, pz, evd, ia.lmr_create(pz, 64), ia.ep_create(pz, evd, evd, evd),
               ia.cno_create(), pz.rmr_create(), ia.psp_create_any(cr_evd)]
    for i, h in enumerate(handles):
        assert h.consumer_context is None
        h.consumer_context = ("ctx", i)
        assert h.consumer_context == ("ctx", i)
    pz2 = ia.pz_create()
    pz2.free()
    with pytest.raises(shmdat.InvalidHandle):
        pz2.consumer_context
    with pytest.raises(shmdat.InvalidHandle):
        pz2.consumer_context = 1


def test_error_message_and_subtype():
    err = shmdat.InvalidState("the EP is connected", subtype="INVALID_STATE_EP_CONNECTED")
    assert str(err) == "DAT_INVALID_STATE (INVALID_STATE_EP_CONNECTED): the EP is connected"
    assert err.code == Return.INVALID_STATE == 0x00070000
    assert isinstance(err, shmdat.DatError)
