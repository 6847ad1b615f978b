"""shmdat.verbs' enums and errors: verbs.h's and rdma_cma.h's numbers, both spellings of
every member (ibv_qp_type.IBV_QPT_RC and IBV_QPT_RC), the old flat modules, and
pyverbs' error messages."""

import enum
import errno

import pytest

from shmdat.verbs import cm_enums, enums, libibverbs_enums, librdmacm_enums
from shmdat.verbs.libibverbs_enums import (ibv_access_flags, ibv_qp_attr_mask, ibv_qp_type,
                                           ibv_wc_status)
from shmdat.verbs.pyverbs_error import PyverbsError, PyverbsRDMAError, PyverbsUserError

# Values read in rdma-core's headers (verbs.h, driver.h, rdma_cma.h).
VERBS_VALUES = {
    'IBV_QPT_RC': 2, 'IBV_QPT_UC': 3, 'IBV_QPT_UD': 4, 'IBV_QPT_RAW_PACKET': 8,
    'IBV_QPS_RESET': 0, 'IBV_QPS_RTS': 3, 'IBV_QPS_SQE': 5, 'IBV_QPS_ERR': 6,
    'IBV_WC_SUCCESS': 0, 'IBV_WC_LOC_PROT_ERR': 4, 'IBV_WC_WR_FLUSH_ERR': 5,
    'IBV_WC_REM_ACCESS_ERR': 10, 'IBV_WC_RNR_RETRY_EXC_ERR': 13,
    'IBV_WC_SEND': 0, 'IBV_WC_RECV': 0x80, 'IBV_WC_RECV_RDMA_WITH_IMM': 0x81,
    'IBV_WR_RDMA_WRITE': 0, 'IBV_WR_SEND': 2, 'IBV_WR_RDMA_READ': 4,
    'IBV_WR_ATOMIC_FETCH_AND_ADD': 6, 'IBV_WR_FLUSH': 14,
    'IBV_SEND_SIGNALED': 2, 'IBV_SEND_INLINE': 8,
    'IBV_ACCESS_LOCAL_WRITE': 1, 'IBV_ACCESS_REMOTE_WRITE': 2,
    'IBV_ACCESS_RELAXED_ORDERING': 1 << 20,
    'IBV_QP_STATE': 1, 'IBV_QP_CAP': 1 << 19, 'IBV_QP_DEST_QPN': 1 << 20,
    'IBV_QP_RATE_LIMIT': 1 << 25,
    'IBV_EVENT_CQ_ERR': 0, 'IBV_EVENT_QP_FATAL': 1, 'IBV_EVENT_COMM_EST': 4,
    'IBV_EVENT_DEVICE_FATAL': 8, 'IBV_EVENT_SRQ_LIMIT_REACHED': 15,
    'IBV_EVENT_QP_LAST_WQE_REACHED': 16,
    'IBV_MTU_1024': 3, 'IBV_PORT_ACTIVE': 4, 'IBV_LINK_LAYER_ETHERNET': 2, 'IBV_NODE_CA': 1,
    'IBV_TRANSPORT_UNKNOWN': -1, 'IBV_SRQ_LIMIT': 2,
    'IBV_GID_TYPE_ROCE_V2': 2, 'IBV_GID_TYPE_SYSFS_ROCE_V2': 1,
    'IBV_DEVICE_MANAGED_FLOW_STEERING': 1 << 29, 'IBV_WC_STANDARD_FLAGS': 0x7f,
    '_IBV_DEVICE_RAW_SCATTER_FCS': 1 << 34, '_IBV_ALLOCATOR_USE_DEFAULT': 2**64 - 1,
}
CM_VALUES = {
    'RDMA_CM_EVENT_ADDR_RESOLVED': 0, 'RDMA_CM_EVENT_CONNECT_REQUEST': 4,
    'RDMA_CM_EVENT_REJECTED': 8, 'RDMA_CM_EVENT_ESTABLISHED': 9,
    'RDMA_CM_EVENT_DISCONNECTED': 10, 'RDMA_PS_TCP': 0x106, 'RDMA_PS_UDP': 0x111,
    'RDMA_PS_IB': 0x13f, 'RAI_PASSIVE': 1, 'RDMA_OPTION_ID_ACK_TIMEOUT': 3,
}
MODULES = [libibverbs_enums, librdmacm_enums]


def enum_classes(module):
    return [v for v in vars(module).values()
            if isinstance(v, enum.EnumMeta) and v.__module__ == module.__name__]


def api(module):
    """The names a program uses: enum classes and int constants (not the helpers)."""
    return {name: value for name, value in vars(module).items()
            if isinstance(value, int) or value in enum_classes(module)}


@pytest.mark.parametrize('name, value', VERBS_VALUES.items())
def test_verbs_values(name, value):
    assert getattr(libibverbs_enums, name) == value


@pytest.mark.parametrize('name, value', CM_VALUES.items())
def test_cm_values(name, value):
    assert getattr(librdmacm_enums, name) == value


@pytest.mark.parametrize('module', MODULES, ids=lambda m: m.__name__)
def test_members_are_module_level_names(module):
    assert len(enum_classes(module)) > 3
    for cls in enum_classes(module):
        for name, member in cls.__members__.items():
            assert getattr(module, name) is member, name


def test_named_enums():
    assert ibv_qp_type.IBV_QPT_RC == 2 and isinstance(ibv_qp_type.IBV_QPT_RC, int)
    assert ibv_wc_status(5) is ibv_wc_status.IBV_WC_WR_FLUSH_ERR
    assert librdmacm_enums.rdma_port_space.RDMA_PS_TCP == 0x106
    # Bit masks combine as the C code ORs them.
    mask = ibv_qp_attr_mask.IBV_QP_STATE | ibv_qp_attr_mask.IBV_QP_PKEY_INDEX
    assert mask == 0x11 and mask & ibv_qp_attr_mask.IBV_QP_STATE
    access = ibv_access_flags.IBV_ACCESS_LOCAL_WRITE | libibverbs_enums.IBV_ACCESS_REMOTE_READ
    assert access == 5 and not access & ibv_access_flags.IBV_ACCESS_REMOTE_WRITE


@pytest.mark.parametrize('flat, module', [(enums, libibverbs_enums), (cm_enums, librdmacm_enums)],
                         ids=['enums', 'cm_enums'])
def test_flat_modules_have_the_same_names(flat, module):
    names = api(module)
    assert names
    for name, value in names.items():
        assert getattr(flat, name) is value, name


def test_names_only_older_versions_had():
    assert enums.IBV_GID_TYPE_IB_ROCE_V1 == 0
    assert enums.IBV_FLOW_ATTR_FLAGS_ALLOW_LOOP_BACK == 1
    assert enums.IBV_QP_INIT_ATTR_RESERVED == 1 << 6


def test_error_message_format():
    err = PyverbsRDMAError('Failed to modify QP', errno.EINVAL)
    assert str(err) == 'Failed to modify QP. Errno: 22, Invalid argument'
    assert err.error_code == errno.EINVAL
    assert isinstance(err, PyverbsError)
    assert str(PyverbsRDMAError('Failed')) == 'Failed'
    assert PyverbsRDMAError('Failed').error_code == -1
    # Only -1 means "no errno": 0 is printed like any other.
    assert str(PyverbsError('Odd', 0)) == 'Odd. Errno: 0, Success'


def test_user_error():
    err = PyverbsUserError('No device named shm9')
    assert str(err) == 'No device named shm9'
    assert isinstance(err, PyverbsError)
    with pytest.raises(TypeError):
        PyverbsUserError('No device', errno.ENODEV)
    with pytest.raises(PyverbsError, match='Errno: 11'):
        raise PyverbsRDMAError('Failed to get async event', errno.EAGAIN)
