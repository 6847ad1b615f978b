"""Remote Memory Regions (dat_rmr_*): memory windows bound into an LMR through an EP."""

from . import limits
from .args import check_flags, check_lmr_triplet
from .constants import CompletionFlags, DtoStatus, EventNumber, MemPriv
from .errors import InsufficientResources, PrivilegesViolation, ProtectionViolation, bad_arg
from .handle import Handle, check_handle
from .ep import EP
from .lmr import REMOTE, check_privileges, register
from .values import LmrTriplet, RmrBindCompletion, RmrParam


_SUPPRESS = int(CompletionFlags.SUPPRESS)
_UNSIGNALLED = int(CompletionFlags.UNSIGNALLED)
_BIND_FLAGS = _SUPPRESS | _UNSIGNALLED

class RMR(Handle):
    kind = "rmr"

    def __init__(self, ia, pz):
        super().__init__(ia)
        if len(ia._rmrs) >= limits.MAX_RMRS:
            raise InsufficientResources(f"the IA has max_rmrs ({limits.MAX_RMRS}) RMRs",
                                        subtype="RESOURCE_MEMORY_REGION")
        self._pz = pz
        self._lmr = None
        self._triplet = None
        self._priv = MemPriv.NONE
        self._mr = None                 # the MR over the bound range: its rkey is the rmr_context
        self.rmr_context = None
        ia._rmrs.add(self)
        pz._users.add(self)

    def bind(self, lmr_triplet, mem_privileges, ep, user_cookie, completion_flags=CompletionFlags.DEFAULT):
        """dat_rmr_bind: expose `lmr_triplet` to the peer of `ep` with `mem_privileges`.

        Returns the new rmr_context (None when segment_length is 0: that unbinds).
        The old context stops working at once. An RMR_BIND_COMPLETION_EVENT goes to
        the EP's request EVD unless completion_flags has SUPPRESS.

        Raises InvalidParameter, InvalidState (EP not connected), ProtectionViolation
        (LMR, RMR and EP in different PZs), PrivilegesViolation (the LMR lacks the
        local privilege the remote one needs), InsufficientResources, InvalidHandle.
        """
        ia = self._ia
        with ia._engine.lock:
            self._check()
            check_handle(ep, EP, "ep", "INVALID_HANDLE_EP", ia=ia)
            priv = check_privileges(mem_privileges, 3)
            if priv & ~int(REMOTE):
                raise bad_arg(3, "an RMR carries only remote privileges (REMOTE_READ, REMOTE_WRITE)")
            ctx, addr, length = check_lmr_triplet(lmr_triplet, 2, "lmr_triplet")
            completion_flags = check_flags(completion_flags, 6, "completion_flags", _BIND_FLAGS,
                                           "CompletionFlags of a bind (SUPPRESS, UNSIGNALLED)")
            ep._require("rmr_bind", "bind")
            if ep._pz is not self._pz:
                raise ProtectionViolation("the EP and the RMR are in different PZs")
            if length:
                lmr = ia._lmrs.get(ctx)
                if lmr is None:
                    raise bad_arg(2, f"no LMR has lmr_context {ctx:#x}")
                if lmr._pz is not self._pz:
                    raise ProtectionViolation("the LMR and the RMR are in different PZs")
                if lmr._sge(addr, length) is None:
                    raise bad_arg(2, "the triplet is not inside its LMR")
                if priv & MemPriv.REMOTE_WRITE and not lmr._priv & MemPriv.LOCAL_WRITE:
                    raise PrivilegesViolation("REMOTE_WRITE needs an LMR with LOCAL_WRITE")
                if not lmr._shared and lmr.rmr_context is None:
                    raise PrivilegesViolation("consumer memory must be registered with a remote "
                                              "privilege before an RMR can expose it")
            self._unbind()
            if length:
                # A memory window where the device has them; shm0 has none: an MR of its own
                # over the range, with the remote privileges asked (its rkey dies with unbind).
                self._mr = register(ia, self._pz, length, priv | (lmr._priv & MemPriv.LOCAL_WRITE),
                                    address=addr)
                self.rmr_context = self._mr.rkey
                self._lmr = lmr
                self._triplet = LmrTriplet(ctx, addr, length)
                self._priv = priv
                lmr._rmrs.add(self)
            if not completion_flags & _SUPPRESS and ep._request_evd is not None:
                ep._request_evd._post(EventNumber.RMR_BIND_COMPLETION_EVENT,
                                      RmrBindCompletion(self, user_cookie, DtoStatus.SUCCESS),
                                      not completion_flags & _UNSIGNALLED)
            return self.rmr_context

    def _unbind(self):
        if self.rmr_context is not None:
            self._mr.close()
            self._mr = None
            self._lmr._rmrs.discard(self)
        self.rmr_context = None
        self._lmr = None
        self._triplet = None
        self._priv = MemPriv.NONE

    def query(self):
        """dat_rmr_query -> RmrParam."""
        with self._ia._engine.lock:
            self._check()
            return RmrParam(ia=self._ia, pz=self._pz, lmr_triplet=self._triplet,
                            mem_priv=self._priv, rmr_context=self.rmr_context)

    def free(self):
        """dat_rmr_free: unbind (the context stops working at once) and destroy."""
        with self._ia._engine.lock:
            self._check()
            self._destroy()

    def _destroy(self):
        self._unbind()
        self._mark_freed()
        self._ia._rmrs.discard(self)
        self._pz._users.discard(self)
