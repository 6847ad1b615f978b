"""mpi4py's Grequest: MPI's generalized requests (MPI-3.1 section 12.2). The program carries
out the operation itself (in another thread, typically) and ends it with Complete; Wait,
Test and the other completion calls then call its query_fn to fill the status, and its
free_fn once the request is both complete and freed (completed by one of them, or Free).

A Grequest is a Request (comm.py) whose op is the request's _Generalized: the engine's
waits look at its `done` as at any operation's, so a generalized request is waited on beside
sends and receives (Waitall, Waitany, ...), and the rank makes progress meanwhile. Complete
wakes a thread waiting in the engine, which would otherwise look again only after its
current slice of waiting on the EVD."""

import threading
import traceback

from . import errors
from .comm import Request, Status
from .errors import Exception as MPIException


class _Generalized:
    """What the handles of one generalized request share: the callbacks and their arguments,
    `done` (Complete was called: what the engine's waits look at), `result` (what
    complete(obj) gave, for wait() and test())."""

    ops = ()        # (the engine asks what a pending operation waits on: nothing of MPI's)

    def __init__(self, query_fn, free_fn, cancel_fn, args, kwargs):
        self.query_fn, self.free_fn, self.cancel_fn = query_fn, free_fn, cancel_fn
        self.args, self.kwargs = tuple(args or ()), dict(kwargs or {})
        self.done, self.result = False, None
        self.lock = threading.Lock()    # Complete and Free may come from two threads
        self.ends = 0                   # of the two: Complete, and the request released

    def call(self, fn, *first):
        """fn(*first, *args, **kwargs): SUCCESS, or the error code of what it raised (its
        MPI.Exception's, ERR_OTHER for another exception) with its traceback printed on
        stderr, as mpi4py's callbacks do: the error reaches the program as MPI.Exception
        from the call that ran fn."""
        try:
            fn(*first, *self.args, **self.kwargs)
        except Exception as e:
            traceback.print_exc()
            return e.Get_error_code() if isinstance(e, MPIException) else errors.ERR_OTHER
        return errors.SUCCESS

    def end(self):
        """One of Complete and the request's release has come: free_fn runs once both have.
        Its error code, or SUCCESS."""
        with self.lock:
            self.ends += 1
            last = self.ends == 2
        return self.call(self.free_fn) if last and self.free_fn is not None else errors.SUCCESS


def _raise(code, what):
    if code != errors.SUCCESS:
        raise MPIException(code, f"the {what} of a generalized request raised")


class Grequest(Request):
    """MPI's generalized request (mpi4py's Grequest): Start, Complete and complete, Cancel,
    Free, and Request's completion calls."""

    COMM_SELF = None    # set by MPI.py (it cannot be imported): whose engine Start's requests use

    def __init__(self, request=None):
        """mpi4py's Grequest(), or Grequest of a null request: a null request (equal to
        REQUEST_NULL); Grequest(greq): another handle to greq. TypeError for anything else
        (a request under way that is not a generalized one included)."""
        if isinstance(request, Request) and not request:
            request = None
        if request is not None and not isinstance(request, Grequest):
            raise TypeError(f"cannot convert {type(request).__name__} to Grequest")
        super().__init__(request)

    @classmethod
    def Start(cls, query_fn=None, free_fn=None, cancel_fn=None, args=None, kwargs=None):
        """MPI_Grequest_start: an active request that Complete ends. Called with `args` and
        `kwargs` after their own arguments: query_fn(status) when a completion call (or
        Get_status) finds the request complete, to fill its status (source, tag, elements,
        cancelled; an empty Status if query_fn is None), free_fn() once the request is both
        complete and freed, cancel_fn(completed) on Cancel. TypeError if `args` or `kwargs`
        is not a sequence or a mapping."""
        request = cls.__new__(cls)
        Request.__init__(request, cls.COMM_SELF._engine, None,
                         _Generalized(query_fn, free_fn, cancel_fn, args, kwargs))
        return request

    def Complete(self):
        """MPI_Grequest_complete: the operation has ended; completion calls may now complete
        the request (free_fn runs here if the request was freed already: an error of it is
        printed and not raised, as under MPICH, since the program has given the request up).
        MPI.Exception ERR_REQUEST for a request Start did not give or completed already."""
        self.complete()

    def complete(self, obj=None):
        """mpi4py's complete: Complete, with `obj` the result wait() and test() give."""
        state = self._op
        if not isinstance(state, _Generalized) or state.done:
            raise MPIException(errors.ERR_REQUEST, "Complete of a request that is no "
                               "generalized request under way (Start, and Complete once)")
        state.result = obj
        state.end()                 # (before `done`: a Wait that sees it runs free_fn itself)
        state.done = True
        engine = self._engine
        with engine.lock:           # (the engine's waiters look at their operations again)
            engine.wake()

    def Cancel(self):
        """MPI_Cancel: cancel_fn(completed), `completed` saying whether Complete was called;
        the request still completes through Complete (its status Is_cancelled if query_fn
        says so). MPI.Exception with cancel_fn's error."""
        self._not_null("Cancel")
        state = self._op
        if self._active and state.cancel_fn is not None:
            _raise(state.call(state.cancel_fn, state.done), "cancel_fn")

    cancel = Cancel

    def Free(self):
        """MPI_Request_free: the request becomes REQUEST_NULL; free_fn runs now if Complete
        was called, else at Complete. MPI.Exception with free_fn's error, ERR_REQUEST for
        REQUEST_NULL."""
        self._not_null("Free")
        if self._active:
            self._active = False
            _raise(self._op.end(), "free_fn")

    def _fill(self, status):
        """(Get_status of a complete request) query_fn's status into `status`."""
        _raise(self._query(status), "query_fn")

    def _finish(self, status):
        """A completion call has found the request complete: query_fn fills `status`, then
        the request is released (free_fn); MPI.Exception with the first of their errors."""
        self._active = False
        queried = self._query(status)
        freed = self._op.end()
        _raise(queried, "query_fn")
        _raise(freed, "free_fn")

    def _query(self, status):
        """query_fn's answer (on a new, empty Status) copied into `status` if there is one,
        its error SUCCESS (an error of query_fn is raised instead); query_fn's error code."""
        state = self._op
        answer = Status()
        code = errors.SUCCESS if state.query_fn is None else state.call(state.query_fn, answer)
        if status is not None:
            Status.__init__(status, answer)
            status.error = errors.SUCCESS
        return code

    def _result(self):
        return self._op.result
