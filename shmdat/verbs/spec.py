"""Flow specs (pyverbs.spec): what a Flow matches. They hold their fields;
the Flow they go into is EOPNOTSUPP on shm0."""

from .base import UnsupportedAttr


class Spec(UnsupportedAttr):
    """ibv_flow_spec."""


class EthSpec(Spec):
    """ibv_flow_spec_eth."""


class Ipv4ExtSpec(Spec):
    """ibv_flow_spec_ipv4_ext."""


class Ipv6Spec(Spec):
    """ibv_flow_spec_ipv6."""


class TcpUdpSpec(Spec):
    """ibv_flow_spec_tcp_udp."""
