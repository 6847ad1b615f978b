"""pyverbs.providers.mlx5.mlx5dv: mlx5 direct verbs (mlx5dv_*: contexts, QPs, CQs, DevX,
UARs, ...). shm0 is not that device: creating an object is PyverbsRDMAError with
EOPNOTSUPP; attributes hold what they are given."""

from ...base import Unsupported, UnsupportedAttr
from .mlx5_enums import mlx5dv_context_flags, mlx5dv_cqe_comp_res_format


class Mlx5DCIStreamInitAttr(UnsupportedAttr):
    """Attributes of mlx5 direct verbs."""


class Mlx5DVCQInitAttr(UnsupportedAttr):
    """Attributes of mlx5 direct verbs."""


class Mlx5DVContextAttr(UnsupportedAttr):
    """Attributes of mlx5 direct verbs."""


class Mlx5DVDCInitAttr(UnsupportedAttr):
    """Attributes of mlx5 direct verbs."""


class Mlx5DVQPInitAttr(UnsupportedAttr):
    """Attributes of mlx5 direct verbs."""


class Wqe(UnsupportedAttr):
    """Attributes of mlx5 direct verbs."""


class WqeCtrlSeg(UnsupportedAttr):
    """Attributes of mlx5 direct verbs."""


class WqeDataSeg(UnsupportedAttr):
    """Attributes of mlx5 direct verbs."""


class Mlx5CQ(Unsupported):
    """EOPNOTSUPP on shm0."""


class Mlx5Context(Unsupported):
    """EOPNOTSUPP on shm0."""


class Mlx5Cqe64(Unsupported):
    """EOPNOTSUPP on shm0."""


class Mlx5DevxCmdComp(Unsupported):
    """EOPNOTSUPP on shm0."""


class Mlx5DevxEq(Unsupported):
    """EOPNOTSUPP on shm0."""


class Mlx5DevxMsiVector(Unsupported):
    """EOPNOTSUPP on shm0."""


class Mlx5DevxObj(Unsupported):
    """EOPNOTSUPP on shm0."""


class Mlx5DmOpAddr(Unsupported):
    """EOPNOTSUPP on shm0."""


class Mlx5PP(Unsupported):
    """EOPNOTSUPP on shm0."""


class Mlx5QP(Unsupported):
    """EOPNOTSUPP on shm0."""


class Mlx5UAR(Unsupported):
    """EOPNOTSUPP on shm0."""


class Mlx5UMEM(Unsupported):
    """EOPNOTSUPP on shm0."""


class Mlx5VAR(Unsupported):
    """EOPNOTSUPP on shm0."""


def _flag_names(flags, enum):
    return " ".join(member.name for member in enum if flags & member)


def context_flags_to_str(flags):
    """The names of the mlx5dv_context_flags set in `flags`."""
    return _flag_names(flags, mlx5dv_context_flags)


def cqe_comp_to_str(flags):
    """The names of the mlx5dv_cqe_comp_res_format bits set in `flags`."""
    return _flag_names(flags, mlx5dv_cqe_comp_res_format)
