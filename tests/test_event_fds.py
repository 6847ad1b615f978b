"""shmdat/dat/event_fds.py: the event fds rdma-core's pyverbs keeps to itself, found in
/proc/self/fd by the link the kernel gives them. Here the "kernel's name" is a FIFO's
path, made by the test: the same /proc lookup, real fds."""

import os

import pytest

import shmdat
from shmdat.dat import event_fds


class Opener:
    """An object whose constructor opens `count` fds on the FIFO at `path` (and one on
    /dev/null, which is not looked for), as pyverbs' constructors open theirs."""

    def __init__(self, path, count):
        self.fds = [os.open(path, os.O_RDWR) for _ in range(count)] + [os.open(os.devnull, os.O_RDONLY)]
        self.closed = False

    def close(self):
        for fd in self.fds:
            os.close(fd)
        self.closed = True


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "rdma_cm"
    os.mkfifo(path)
    return str(path)


def test_the_one_fd_with_the_link_is_found_and_made_non_blocking(fifo):
    obj, fd = event_fds.made_with_fd(lambda: Opener(fifo, 1), None, fifo)
    try:
        assert fd == obj.fds[0]
        assert os.get_blocking(fd) is False
    finally:
        obj.close()


@pytest.mark.parametrize("count", [0, 2])
def test_no_fd_or_several_is_an_internal_error_and_the_object_is_closed(fifo, count):
    made = []

    def make():
        made.append(Opener(fifo, count))
        return made[0]
    with pytest.raises(shmdat.InternalError) as err:
        event_fds.made_with_fd(make, None, fifo)
    assert f"opened {count} fds linked to {fifo}" in str(err.value)
    assert made[0].closed


def test_fds_opened_before_are_not_taken(fifo):
    earlier = os.open(fifo, os.O_RDWR)
    try:
        obj, fd = event_fds.made_with_fd(lambda: Opener(fifo, 1), None, fifo)
        assert fd != earlier and fd == obj.fds[0]
        obj.close()
    finally:
        os.close(earlier)


def test_a_module_that_says_where_its_fd_is_is_taken_at_its_word(fifo):
    obj, fd = event_fds.made_with_fd(lambda: Opener(fifo, 2), lambda o: o.fds[1], "unused")
    try:
        assert fd == obj.fds[1] and os.get_blocking(fd) is False
    finally:
        obj.close()
