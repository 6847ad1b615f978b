"""The DAT registry: which providers exist and ia_open (dat_ia_open, dat_registry_list_providers)."""

from .args import check_qlen, expected
from .errors import ProviderNotFound
from .ia import DAT_VERSION, IA, PROVIDER_NAME
from .values import ProviderInfo


def registry_list_providers():
    """dat_registry_list_providers -> list of ProviderInfo."""
    return [ProviderInfo(PROVIDER_NAME, DAT_VERSION, True)]


def ia_open(name="shm0", async_evd_qlen=8):
    """dat_ia_open: open an Interface Adapter of provider `name` with an async EVD of
    `async_evd_qlen` entries. Use it as a context manager to close it ABRUPT on exit.

    Raises ProviderNotFound (unknown name), InvalidParameter (name not a str, qlen),
    InsufficientResources (/dev/shm cannot hold the IA).
    """
    if not isinstance(name, str):
        raise expected(1, "name", "a provider name (str)", name)
    names = [p.ia_name for p in registry_list_providers()]
    if name not in names:
        raise ProviderNotFound(f"no provider is registered as {name!r}; the registry has "
                               f"{', '.join(names)}", subtype="NAME_NOT_REGISTERED")
    check_qlen(async_evd_qlen, 2, "async_evd_qlen")
    return IA(name, async_evd_qlen)
