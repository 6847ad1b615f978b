"""Subclasses of mpi4py's communicator classes (`class MyComm(MPI.Comm)`): Dup, and what
calls it (Dup_with_info, Idup, Clone), give a communicator of the subclass, as mpi4py's
(`New(type(self))`); the other constructors (Split, Create_cart, ...) give mpi4py's own
classes, as there. Attached here to every Dup (each topology has its own)."""

import functools

from .comm import Comm
from .errhandler import plain_class
from .intercomm import Intercomm
from .topology import Cartcomm, Distgraphcomm, Graphcomm


def _of_the_subclass(dup):
    """`dup` (a Dup), giving a communicator of the class of the one duplicated, when that is
    a subclass of the class it made (the program's; not an error handler's)."""
    @functools.wraps(dup)
    def call(self, *args, **kwargs):
        new = dup(self, *args, **kwargs)
        cls = plain_class(type(self))
        if cls is not type(new) and isinstance(new, Comm) and issubclass(cls, type(new)):
            new.__class__ = cls
        return new
    return call


for _cls in (Comm, Intercomm, Cartcomm, Graphcomm, Distgraphcomm):
    _cls.Dup = _of_the_subclass(vars(_cls)["Dup"])
