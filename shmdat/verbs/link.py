"""The port's link, as iproute2's `rdma link` shows and sets it (`shmdat link`).

The port is the device's, machine-wide (hw/port.py): taking it down is seen by
every Context on the device, in every process, as IBV_EVENT_PORT_ERR, and
bringing it up as IBV_EVENT_PORT_ACTIVE. `ns` names a device instance
(SHMDAT_DEVICE_NS); None is this process's.
"""

from ..hw import hca, port
from .device import DEVICE_NAME, PORT
from .pyverbs_error import PyverbsUserError

LINK = f"{DEVICE_NAME}/{PORT}"


def link_set(link, state, ns=None):
    """`rdma link set shm0/1 down|up`: take the port down or bring it up. Returns
    whether its state changed. Raises PyverbsUserError for another link or state."""
    if link != LINK or state not in ("down", "up"):
        raise PyverbsUserError(f"link set {link!r} {state!r}: link must be {LINK!r}, "
                               "state 'down' or 'up'")
    handle = port.Port(ns)
    try:
        changed = handle.set_down(state == "down")
    finally:
        handle.close()
    if changed:
        hca.ring_all()
    return changed


def link_show(ns=None):
    """`rdma link show`: the link with its state and physical state, as rxe over `lo`."""
    down = port.is_down(ns)
    return dict(link=LINK, state="DOWN" if down else "ACTIVE",
                physical_state="DISABLED" if down else "LINK_UP", netdev="lo")
