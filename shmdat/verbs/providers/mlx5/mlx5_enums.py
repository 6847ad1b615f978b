"""The enums of pyverbs.providers.mlx5.mlx5_enums that rdma-core's tests use,
with the values of rdma-core's <infiniband/mlx5dv.h>; the underscore names are
C macros, as pyverbs gives them."""

from enum import IntEnum, IntFlag
from functools import partial

from ...libibverbs_enums import cython_enum

_enum = partial(cython_enum, globals())


mlx5dv_block_size = _enum(IntEnum, 'mlx5dv_block_size',
    MLX5DV_BLOCK_SIZE_512=0, MLX5DV_BLOCK_SIZE_520=1, MLX5DV_BLOCK_SIZE_4048=2,
    MLX5DV_BLOCK_SIZE_4096=3, MLX5DV_BLOCK_SIZE_4160=4)

mlx5dv_context_attr_comp_mask = _enum(IntFlag, 'mlx5dv_context_attr_comp_mask',
    MLX5DV_CONTEXT_ATTR_MASK_FD_ARRAY=1)

mlx5dv_context_attr_flags = _enum(IntFlag, 'mlx5dv_context_attr_flags',
    MLX5DV_CONTEXT_FLAGS_DEVX=1)

mlx5dv_context_comp_mask = _enum(IntFlag, 'mlx5dv_context_comp_mask',
    MLX5DV_CONTEXT_MASK_CQE_COMPRESION=1, MLX5DV_CONTEXT_MASK_SWP=2,
    MLX5DV_CONTEXT_MASK_STRIDING_RQ=1 << 2, MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS=1 << 3,
    MLX5DV_CONTEXT_MASK_DYN_BFREGS=1 << 4, MLX5DV_CONTEXT_MASK_CLOCK_INFO_UPDATE=1 << 5,
    MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS=1 << 6, MLX5DV_CONTEXT_MASK_DC_ODP_CAPS=1 << 7,
    MLX5DV_CONTEXT_MASK_NUM_LAG_PORTS=1 << 9, MLX5DV_CONTEXT_MASK_SIGNATURE_OFFLOAD=1 << 10,
    MLX5DV_CONTEXT_MASK_DCI_STREAMS=1 << 11, MLX5DV_CONTEXT_MASK_WR_MEMCPY_LENGTH=1 << 12,
    MLX5DV_CONTEXT_MASK_CRYPTO_OFFLOAD=1 << 13, MLX5DV_CONTEXT_MASK_MAX_DC_RD_ATOM=1 << 14,
    MLX5DV_CONTEXT_MASK_OOO_RECV_WRS=1 << 16)

mlx5dv_context_flags = _enum(IntFlag, 'mlx5dv_context_flags',
    MLX5DV_CONTEXT_FLAGS_CQE_V1=1, MLX5DV_CONTEXT_FLAGS_MPW_ALLOWED=1 << 2,
    MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW=1 << 3, MLX5DV_CONTEXT_FLAGS_CQE_128B_COMP=1 << 4,
    MLX5DV_CONTEXT_FLAGS_CQE_128B_PAD=1 << 5, MLX5DV_CONTEXT_FLAGS_PACKET_BASED_CREDIT_MODE=1 <<
    6, MLX5DV_CONTEXT_FLAGS_REAL_TIME_TS=1 << 7, MLX5DV_CONTEXT_FLAGS_BLUEFLAME=1 << 8)

mlx5dv_cq_init_attr_flags = _enum(IntFlag, 'mlx5dv_cq_init_attr_flags',
    MLX5DV_CQ_INIT_ATTR_FLAGS_CQE_PAD=1, MLX5DV_CQ_INIT_ATTR_FLAGS_RESERVED=2)

mlx5dv_cq_init_attr_mask = _enum(IntFlag, 'mlx5dv_cq_init_attr_mask',
    MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE=1, MLX5DV_CQ_INIT_ATTR_MASK_FLAGS=2,
    MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE=1 << 2)

mlx5dv_cqe_comp_res_format = _enum(IntFlag, 'mlx5dv_cqe_comp_res_format',
    MLX5DV_CQE_RES_FORMAT_HASH=1, MLX5DV_CQE_RES_FORMAT_CSUM=2,
    MLX5DV_CQE_RES_FORMAT_CSUM_STRIDX=1 << 2)

mlx5dv_crypto_caps_flags = _enum(IntFlag, 'mlx5dv_crypto_caps_flags',
    MLX5DV_CRYPTO_CAPS_CRYPTO=1, MLX5DV_CRYPTO_CAPS_WRAPPED_CRYPTO_OPERATIONAL=2,
    MLX5DV_CRYPTO_CAPS_WRAPPED_CRYPTO_GOING_TO_COMMISSIONING=1 << 2)

mlx5dv_crypto_engines_caps = _enum(IntFlag, 'mlx5dv_crypto_engines_caps',
    MLX5DV_CRYPTO_ENGINES_CAP_AES_XTS=1, MLX5DV_CRYPTO_ENGINES_CAP_AES_XTS_SINGLE_BLOCK=2,
    MLX5DV_CRYPTO_ENGINES_CAP_AES_XTS_MULTI_BLOCK=1 << 2)

mlx5dv_crypto_key_purpose = _enum(IntEnum, 'mlx5dv_crypto_key_purpose',
    MLX5DV_CRYPTO_KEY_PURPOSE_AES_XTS=0)

mlx5dv_crypto_key_size = _enum(IntEnum, 'mlx5dv_crypto_key_size',
    MLX5DV_CRYPTO_KEY_SIZE_128=0, MLX5DV_CRYPTO_KEY_SIZE_256=1)

mlx5dv_crypto_login_state = _enum(IntEnum, 'mlx5dv_crypto_login_state',
    MLX5DV_CRYPTO_LOGIN_STATE_VALID=0, MLX5DV_CRYPTO_LOGIN_STATE_NO_LOGIN=1,
    MLX5DV_CRYPTO_LOGIN_STATE_INVALID=2)

mlx5dv_crypto_standard = _enum(IntEnum, 'mlx5dv_crypto_standard',
    MLX5DV_CRYPTO_STANDARD_AES_XTS=0)

mlx5dv_crypto_wrapped_import_method_caps = _enum(IntFlag, 'mlx5dv_crypto_wrapped_import_method_caps',
    MLX5DV_CRYPTO_WRAPPED_IMPORT_METHOD_CAP_AES_XTS=1)

mlx5dv_dc_type = _enum(IntEnum, 'mlx5dv_dc_type',
    MLX5DV_DCTYPE_DCT=1, MLX5DV_DCTYPE_DCI=2)

mlx5dv_dek_init_attr_mask = _enum(IntFlag, 'mlx5dv_dek_init_attr_mask',
    MLX5DV_DEK_INIT_ATTR_CRYPTO_LOGIN=1)

mlx5dv_devx_create_event_channel_flags = _enum(IntFlag, 'mlx5dv_devx_create_event_channel_flags',
    MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA=1)

mlx5dv_dr_action_dest_type = _enum(IntEnum, 'mlx5dv_dr_action_dest_type',
    MLX5DV_DR_ACTION_DEST=0, MLX5DV_DR_ACTION_DEST_REFORMAT=1)

mlx5dv_dr_action_flags = _enum(IntFlag, 'mlx5dv_dr_action_flags',
    MLX5DV_DR_ACTION_FLAGS_ROOT_LEVEL=1)

mlx5dv_dr_domain_type = _enum(IntEnum, 'mlx5dv_dr_domain_type',
    MLX5DV_DR_DOMAIN_TYPE_NIC_RX=0, MLX5DV_DR_DOMAIN_TYPE_NIC_TX=1, MLX5DV_DR_DOMAIN_TYPE_FDB=2)

mlx5dv_dr_matcher_layout_flags = _enum(IntFlag, 'mlx5dv_dr_matcher_layout_flags',
    MLX5DV_DR_MATCHER_LAYOUT_RESIZABLE=1, MLX5DV_DR_MATCHER_LAYOUT_NUM_RULE=2)

mlx5dv_flow_action_type = _enum(IntEnum, 'mlx5dv_flow_action_type',
    MLX5DV_FLOW_ACTION_DEST_IBV_QP=0, MLX5DV_FLOW_ACTION_DROP=1,
    MLX5DV_FLOW_ACTION_IBV_COUNTER=2, MLX5DV_FLOW_ACTION_IBV_FLOW_ACTION=3,
    MLX5DV_FLOW_ACTION_TAG=4, MLX5DV_FLOW_ACTION_DEST_DEVX=5,
    MLX5DV_FLOW_ACTION_COUNTERS_DEVX=6, MLX5DV_FLOW_ACTION_DEFAULT_MISS=7,
    MLX5DV_FLOW_ACTION_COUNTERS_DEVX_WITH_OFFSET=8)

mlx5dv_flow_matcher_attr_mask = _enum(IntFlag, 'mlx5dv_flow_matcher_attr_mask',
    MLX5DV_FLOW_MATCHER_MASK_FT_TYPE=1, MLX5DV_FLOW_MATCHER_MASK_IB_PORT=2)

mlx5dv_mkey_err_type = _enum(IntEnum, 'mlx5dv_mkey_err_type',
    MLX5DV_MKEY_NO_ERR=0, MLX5DV_MKEY_SIG_BLOCK_BAD_GUARD=1, MLX5DV_MKEY_SIG_BLOCK_BAD_REFTAG=2,
    MLX5DV_MKEY_SIG_BLOCK_BAD_APPTAG=3)

mlx5dv_mkey_init_attr_flags = _enum(IntFlag, 'mlx5dv_mkey_init_attr_flags',
    MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT=1, MLX5DV_MKEY_INIT_ATTR_FLAGS_BLOCK_SIGNATURE=2,
    MLX5DV_MKEY_INIT_ATTR_FLAGS_CRYPTO=1 << 2, MLX5DV_MKEY_INIT_ATTR_FLAGS_REMOTE_INVALIDATE=1
    << 4)

mlx5dv_obj_type = _enum(IntEnum, 'mlx5dv_obj_type',
    MLX5DV_OBJ_QP=1, MLX5DV_OBJ_CQ=2, MLX5DV_OBJ_SRQ=4, MLX5DV_OBJ_RWQ=8, MLX5DV_OBJ_DM=16,
    MLX5DV_OBJ_AH=32, MLX5DV_OBJ_PD=64)

mlx5dv_qp_create_flags = _enum(IntFlag, 'mlx5dv_qp_create_flags',
    MLX5DV_QP_CREATE_TUNNEL_OFFLOADS=1, MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_UC=2,
    MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_MC=1 << 2,
    MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE=1 << 3, MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE=1 <<
    4, MLX5DV_QP_CREATE_PACKET_BASED_CREDIT_MODE=1 << 5, MLX5DV_QP_CREATE_SIG_PIPELINING=1 << 6,
    MLX5DV_QP_CREATE_OOO_DP=1 << 7)

mlx5dv_qp_create_send_ops_flags = _enum(IntFlag, 'mlx5dv_qp_create_send_ops_flags',
    MLX5DV_QP_EX_WITH_MR_INTERLEAVED=1, MLX5DV_QP_EX_WITH_MR_LIST=2,
    MLX5DV_QP_EX_WITH_MKEY_CONFIGURE=1 << 2, MLX5DV_QP_EX_WITH_RAW_WQE=1 << 3,
    MLX5DV_QP_EX_WITH_MEMCPY=1 << 4)

mlx5dv_qp_init_attr_mask = _enum(IntFlag, 'mlx5dv_qp_init_attr_mask',
    MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS=1, MLX5DV_QP_INIT_ATTR_MASK_DC=2,
    MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS=1 << 2, MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS=1 << 3)

mlx5dv_sched_elem_attr_flags = _enum(IntFlag, 'mlx5dv_sched_elem_attr_flags',
    MLX5DV_SCHED_ELEM_ATTR_FLAGS_BW_SHARE=1, MLX5DV_SCHED_ELEM_ATTR_FLAGS_MAX_AVG_BW=2)

mlx5dv_sig_crc_type = _enum(IntEnum, 'mlx5dv_sig_crc_type',
    MLX5DV_SIG_CRC_TYPE_CRC32=0, MLX5DV_SIG_CRC_TYPE_CRC32C=1, MLX5DV_SIG_CRC_TYPE_CRC64_XP10=2)

mlx5dv_sig_mask = _enum(IntEnum, 'mlx5dv_sig_mask',
    MLX5DV_SIG_MASK_T10DIF_GUARD=192, MLX5DV_SIG_MASK_T10DIF_APPTAG=48,
    MLX5DV_SIG_MASK_T10DIF_REFTAG=15, MLX5DV_SIG_MASK_CRC32=240, MLX5DV_SIG_MASK_CRC32C=240,
    MLX5DV_SIG_MASK_CRC64_XP10=255)

mlx5dv_sig_t10dif_bg_type = _enum(IntEnum, 'mlx5dv_sig_t10dif_bg_type',
    MLX5DV_SIG_T10DIF_CRC=0, MLX5DV_SIG_T10DIF_CSUM=1)

mlx5dv_sig_t10dif_flags = _enum(IntFlag, 'mlx5dv_sig_t10dif_flags',
    MLX5DV_SIG_T10DIF_FLAG_REF_REMAP=1, MLX5DV_SIG_T10DIF_FLAG_APP_ESCAPE=2,
    MLX5DV_SIG_T10DIF_FLAG_APP_REF_ESCAPE=1 << 2)

mlx5dv_sig_type = _enum(IntEnum, 'mlx5dv_sig_type',
    MLX5DV_SIG_TYPE_T10DIF=0, MLX5DV_SIG_TYPE_CRC=1)

mlx5dv_signature_crypto_order = _enum(IntEnum, 'mlx5dv_signature_crypto_order',
    MLX5DV_SIGNATURE_CRYPTO_ORDER_SIGNATURE_AFTER_CRYPTO_ON_TX=0,
    MLX5DV_SIGNATURE_CRYPTO_ORDER_SIGNATURE_BEFORE_CRYPTO_ON_TX=1)

mlx5dv_wc_opcode = _enum(IntEnum, 'mlx5dv_wc_opcode',
    MLX5DV_WC_UMR=135, MLX5DV_WC_RAW_WQE=136, MLX5DV_WC_MEMCPY=137)

MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL_ = 1
MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L3_TUNNEL_ = 3
MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2_ = 0
MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L3_TUNNEL_TO_L2_ = 2
MLX5DV_FLOW_TABLE_TYPE_NIC_RX_ = 0
MLX5DV_FLOW_TABLE_TYPE_NIC_TX_ = 1
MLX5DV_FLOW_TABLE_TYPE_RDMA_RX_ = 3
MLX5DV_FLOW_TABLE_TYPE_RDMA_TRANSPORT_RX_ = 5
MLX5DV_FLOW_TABLE_TYPE_RDMA_TRANSPORT_TX_ = 6
MLX5DV_FLOW_TABLE_TYPE_RDMA_TX_ = 4
MLX5DV_QUERY_PORT_VPORT_REG_C0_ = 16
MLX5DV_QUERY_PORT_VPORT_STEERING_ICM_RX_ = 4
MLX5DV_QUERY_PORT_VPORT_STEERING_ICM_TX_ = 8
MLX5DV_REG_DMABUF_ACCESS_DATA_DIRECT_ = 1
MLX5DV_UMEM_MASK_DMABUF = 1
MLX5DV_VAR_ALLOC_FLAG_TLP_ = 1
MLX5_CQE_INVALID = 15
MLX5_CQE_REQ = 0
MLX5_CQE_REQ_ERR = 13
MLX5_CQE_RESP_ERR = 14
MLX5_CQE_RESP_SEND_IMM = 3
MLX5_OPCODE_SEND = 10
MLX5_OPCODE_SEND_IMM = 11
MLX5_RCV_DBR = 0
MLX5_SEND_WQE_BB = 64
MLX5_SEND_WQE_SHIFT = 6
MLX5_SND_DBR = 1
MLX5_WQE_CTRL_CQ_UPDATE = 8
_MLX5DV_PP_ALLOC_FLAGS_DEDICATED_INDEX = 1
_MLX5DV_UAR_ALLOC_TYPE_BF = 0
_MLX5DV_UAR_ALLOC_TYPE_NC = 1
