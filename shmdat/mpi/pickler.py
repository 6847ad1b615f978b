"""MPI.Pickle and MPI.pickle (mpi4py's): how the lowercase calls (send, recv, bcast, ...)
serialize objects. Every object a rank sends or receives goes through the one instance,
`pickle`, so a program may swap the serializer for all of them, as with mpi4py
(`MPI.pickle.__init__(dill.dumps, dill.loads)`). MPI4PY_PICKLE_PROTOCOL and
MPI4PY_PICKLE_THRESHOLD set the defaults, as they do for mpi4py."""

import os
import pickle as _pickle

from .buffer import buffer

DEFAULT_PROTOCOL = int(os.environ.get("MPI4PY_PICKLE_PROTOCOL", _pickle.HIGHEST_PROTOCOL))
DEFAULT_THRESHOLD = int(os.environ.get("MPI4PY_PICKLE_THRESHOLD", 1024 ** 2 // 4))


class Pickle:
    """mpi4py's Pickle: `dumps(obj, protocol)` (or `dumps(obj)` when PROTOCOL is None) and
    `loads(data)`; the defaults are the standard library's pickle at its highest protocol.
    THRESHOLD: the smallest buffer dumps_oob leaves out of band (the lowercase calls send
    every object in band)."""

    def __init__(self, dumps=None, loads=None, protocol=None, threshold=None):
        self._dumps = _pickle.dumps if dumps is None else dumps
        self._loads = _pickle.loads if loads is None else loads
        self.PROTOCOL = protocol
        self.THRESHOLD = threshold

    @property
    def PROTOCOL(self):
        """The protocol passed to dumps (None: dumps is called without one)."""
        return self._protocol

    @PROTOCOL.setter
    def PROTOCOL(self, protocol):
        if protocol is None and self._dumps is _pickle.dumps:
            protocol = DEFAULT_PROTOCOL
        self._protocol = protocol

    @property
    def THRESHOLD(self):
        return self._threshold

    @THRESHOLD.setter
    def THRESHOLD(self, threshold):
        self._threshold = DEFAULT_THRESHOLD if threshold is None else threshold

    def dumps(self, obj):
        """The bytes of `obj`."""
        if self._protocol is None:
            return self._dumps(obj)
        return self._dumps(obj, self._protocol)

    def loads(self, data):
        """The object of `data` (bytes or a buffer)."""
        return self._loads(data)

    def dumps_oob(self, obj):
        """mpi4py's dumps_oob: (the pickle of `obj` at protocol 5 or above, the out-of-band
        buffers: the MPI.buffer of each one of THRESHOLD bytes or more that obj's pickling
        offers, in order; smaller ones stay in band). BufferError for a non-contiguous one."""
        buffers = []

        def out_of_band(picklebuffer):
            memory = buffer(picklebuffer)
            if memory.nbytes < self._threshold:
                return True
            buffers.append(memory)
            return False
        protocol = max(DEFAULT_PROTOCOL if self._protocol is None else self._protocol, 5)
        return self._dumps(obj, protocol, buffer_callback=out_of_band), buffers

    def loads_oob(self, data, buffers):
        """mpi4py's loads_oob: the object of `data` and its out-of-band `buffers`."""
        return self._loads(data, buffers=buffers)


pickle = Pickle()
