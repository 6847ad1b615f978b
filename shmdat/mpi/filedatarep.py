"""A file view's data representation (MPI 4.1 section 14.5): how a buffer's data becomes the
bytes of the view's stream, and back. "native" (and "internal", which is native in MPICH
too): the data's bytes as they are in memory (a derived datatype's packed, a padded pair
type's without its padding, as MPI's type map has them). "external32": each element big
endian, in MPI's portable form (external32.py), where that form takes as many bytes as the
machine's: the view's datatypes then lay the file out as they lay memory out. The rest is
NotImplementedCall: the types whose external32 size differs (a C long, wchar_t; ROMIO gives
them sizes of its own), and derived memory datatypes (their elements' types are not kept)."""

from . import typemap, unimplemented
from .datatypes import Derived, _external32, receive_message, send_message

NATIVE = ("native", "internal")
EXTERNAL32 = "external32"


def _form(datatype):
    """external32's Form of a named `datatype` whose elements keep their size there;
    NotImplementedCall for any other (a derived datatype included)."""
    form = _external32(datatype)
    if form.itemsize != datatype.size:
        raise unimplemented.NotImplementedCall(
            f"external32 of {datatype.Get_name()} ({form.itemsize} bytes there, "
            f"{datatype.size} here) is not implemented by shmdat.mpi in files")
    return form


def _leaves(datatype):
    """The datatypes a derived one was made of, down to the predefined ones."""
    if isinstance(datatype, Derived):
        for part in datatype._contents[3]:
            yield from _leaves(part)
    else:
        yield datatype


def check(datarep, *datatypes):
    """A view's etype and filetype (or Get_type_extent's datatype) in `datarep` (NATIVE or
    EXTERNAL32): NotImplementedCall for external32 over a type whose size changes there."""
    if datarep == EXTERNAL32:
        for datatype in datatypes:
            for leaf in _leaves(datatype):
                _form(leaf)


def _spec(buf):
    """mpi4py's file calls take no None (NULL) for a buffer: TypeError."""
    if buf is None:
        raise TypeError("expected a buffer object, not None")
    return buf


def outgoing(datarep, buf):
    """A write's buffer spec: (the bytes of its data in `datarep`, its datatype)."""
    data, count, datatype = send_message(_spec(buf))
    if datarep == EXTERNAL32:
        return memoryview(_form(datatype).pack(data, count)), datatype
    if datatype.is_named and datatype.size != datatype.extent:
        data = memoryview(typemap.pack(datatype.typemap, data, count))
    return data, datatype


def incoming(datarep, buf):
    """A read's buffer spec: (room for the bytes of its data in `datarep`, its datatype, and
    unpack(nbytes) that places the bytes read, None if the room is the buffer itself)."""
    room, count, datatype, unpack = receive_message(_spec(buf))
    if datarep == EXTERNAL32:
        form = _form(datatype)
        data, room = room, memoryview(bytearray(count * form.itemsize))

        def unpack(nbytes):
            elements = nbytes // form.itemsize
            form.unpack(room[:elements * form.itemsize], data, elements)
    elif unpack is None and datatype.is_named and datatype.size != datatype.extent:
        data, room = room, memoryview(bytearray(count * datatype.size))

        def unpack(nbytes):
            typemap.unpack(datatype.typemap, room, data, count, nbytes)
    return room, datatype, unpack
