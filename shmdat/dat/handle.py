"""The base of every DAT handle: liveness checks and the consumer context."""

from .errors import InvalidHandle


class Handle:
    """A DAT handle. After free()/close() every call raises InvalidHandle."""

    kind = "handle"             # DAT's name for the object, used in messages

    def __init__(self, ia):
        self._ia = ia
        self._freed = False
        self._consumer_context = None

    def _check(self):
        if self._freed:
            raise InvalidHandle(f"this {self.kind} has been freed",
                                subtype=f"INVALID_HANDLE_{self.kind.upper()}")

    def _mark_freed(self):
        self._freed = True

    @property
    def consumer_context(self):
        """dat_get_consumer_context / dat_set_consumer_context."""
        self._check()
        return self._consumer_context

    @consumer_context.setter
    def consumer_context(self, value):
        self._check()
        self._consumer_context = value

    @property
    def ia(self):
        self._check()
        return self._ia

    def __repr__(self):
        state = " freed" if self._freed else ""
        return f"<shmdat.{type(self).__name__}{state} at {id(self):#x}>"


def check_handle(obj, cls, what, subtype=None, allow_none=False, ia=None):
    """Raise InvalidHandle unless obj is a live handle of class cls (of IA `ia`, if given)."""
    if obj is None and allow_none:
        return None
    if not isinstance(obj, cls):
        raise InvalidHandle(f"{what} must be a {cls.__name__} handle, not {type(obj).__name__}",
                            subtype=subtype)
    if obj._freed:
        raise InvalidHandle(f"{what} has been freed", subtype=subtype)
    if ia is not None and obj._ia is not ia:
        raise InvalidHandle(f"{what} belongs to another IA", subtype=subtype)
    return obj

