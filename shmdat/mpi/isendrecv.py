"""MPI-4's non-blocking Sendrecv (MPI 4.0 section 3.10): Comm.Isendrecv and
Comm.Isendrecv_replace, each one Request over a send and a receive started together. It is
done once both are; its status and error are the receive's (MPI's rule: under MPICH 5.0 the
status of an Isendrecv is not filled and a truncated receive is not reported, which here
would be wrong answers, so shmdat.mpi follows the standard there)."""

from .comm import Comm, Request, _invalid, _NullComm
from .datatypes import message, receive_message, send_message
from .matching import ANY_SOURCE, ANY_TAG, PROC_NULL


class _SendRecv:
    """The operation of an Isendrecv's request: the receive's (its source, tag, bytes, buffer:
    what the request's status reads) and the send's; `ops`, what the engine waits on."""

    def __init__(self, recv, send):
        self.recv, self.send, self.ops = recv, send, (recv, send)

    @property
    def done(self):
        return self.recv.done and self.send.done

    @property
    def error(self):
        return self.recv.error or self.send.error

    def __getattr__(self, name):        # source, tag, nbytes, buf, data: the receive's
        return getattr(self.recv, name)


def _isendrecv(comm, outgoing, dest, sendtag, recvbuf, source, recvtag):
    """The request of the send of byte view `outgoing` and the receive into `recvbuf` (a
    buffer spec), every argument checked before either is started. TypeError for a recvbuf
    None but from PROC_NULL, as mpi4py's."""
    if recvbuf is None and source != PROC_NULL:
        raise TypeError("message: expecting buffer or list/tuple")
    view, _, _, unpack = receive_message(recvbuf)
    comm._checked_send(outgoing, dest, sendtag)
    recv = comm._irecv(view, source, recvtag, comm._context)
    send = comm._isend(outgoing, dest, sendtag, comm._context)
    request = Request(comm._engine, comm._rank_of, _SendRecv(recv, send))
    request._unpack = unpack
    return request


def Isendrecv(self, sendbuf, dest, sendtag=0, recvbuf=None, source=ANY_SOURCE,
              recvtag=ANY_TAG):
    """MPI_Isendrecv: Sendrecv as a Request (started now), done once the send and the
    receive are; its status is the receive's. MPI.Exception ERR_RANK, ERR_TAG, buffer errors
    here (nothing started); ERR_TRUNCATE at the wait; TypeError for recvbuf None (but from
    PROC_NULL)."""
    return _isendrecv(self, send_message(sendbuf)[0], dest, sendtag, recvbuf, source, recvtag)


def Isendrecv_replace(self, buf, dest, sendtag=0, source=ANY_SOURCE, recvtag=ANY_TAG):
    """MPI_Isendrecv_replace: Sendrecv_replace as a Request: `buf`'s data is copied and sent,
    the message received into `buf`. Errors as Isendrecv's."""
    outgoing = memoryview(bytes(message(buf, True)[0]))
    return _isendrecv(self, outgoing, dest, sendtag, buf, source, recvtag)


# Set on Comm here (comm.py, which this module builds on, cannot import it); on COMM_NULL's
# class, ERR_COMM as its other methods.
for _call in (Isendrecv, Isendrecv_replace):
    setattr(Comm, _call.__name__, _call)
    setattr(_NullComm, _call.__name__, _invalid(_call.__name__))
