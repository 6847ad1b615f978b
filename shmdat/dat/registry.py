"""The DAT registry: which providers exist and ia_open (dat_ia_open, dat_registry_list_providers)."""

from . import seam
from .args import check_qlen, expected
from .errors import ProviderNotFound
from .ia import DAT_VERSION, IA, PROVIDER_NAME
from .values import ProviderInfo


def registry_list_providers():
    """dat_registry_list_providers -> list of ProviderInfo: shm0, then one
    ofa-v2-<device>-<port> (OFA dat.conf's names) per ACTIVE port of each RDMA device
    rdma-core's pyverbs lists; registry_missing_providers() says why others are not here."""
    return [ProviderInfo(name, DAT_VERSION, True)
            for name in [PROVIDER_NAME, *seam.nic_listing().names]]


def registry_missing_providers():
    """Why real-NIC providers are missing from the registry (shmdat's own, for `shmdat
    info`): "pyverbs not installed", "no RDMA devices", "ofa-v2-rxe0-1: port 1 DOWN"...;
    empty when every port of every device is listed."""
    return seam.nic_listing().missing


def ia_open(name="shm0", async_evd_qlen=8):
    """dat_ia_open: open an Interface Adapter of provider `name` with an async EVD of
    `async_evd_qlen` entries. Use it as a context manager to close it ABRUPT on exit.

    An ofa-v2 provider opens its port through rdma-core's pyverbs, with DAT's NIC
    engine (nic_engine.py: pyverbs has no shm0dv); untested on a NIC (README "DAT on
    a real NIC").

    Raises ProviderNotFound (unknown name, or an ofa-v2 port that cannot be used: why is
    in the message), InvalidParameter (name not a str, qlen), InsufficientResources
    (/dev/shm cannot hold the IA).
    """
    if not isinstance(name, str):
        raise expected(1, "name", "a provider name (str)", name)
    if name != PROVIDER_NAME:
        _check_listed(name)
    check_qlen(async_evd_qlen, 2, "async_evd_qlen")
    return IA(name, async_evd_qlen)


def _check_listed(name):
    listing = seam.nic_listing()
    if name not in listing.names:
        why = f" (not listed: {'; '.join(listing.missing)})" if listing.missing else ""
        raise ProviderNotFound(f"no provider is registered as {name!r}; the registry has "
                               f"{', '.join([PROVIDER_NAME, *listing.names])}{why}",
                               subtype="NAME_NOT_REGISTERED")
