"""pyverbs' exceptions, with its message format: a message given an errno ends with
". Errno: <errno>, <strerror>", e.g. "Failed to modify QP. Errno: 22, Invalid argument".
"""

import os


class PyverbsError(Exception):
    """Base of the pyverbs errors; error_code -1 means no errno."""

    def __init__(self, msg, error_code=-1):
        if error_code != -1:
            msg = f'{msg}. Errno: {error_code}, {os.strerror(error_code)}'
        super().__init__(msg)


class PyverbsRDMAError(PyverbsError):
    """A verb failed; error_code is its errno (-1 if none was given)."""

    def __init__(self, msg, error_code=-1):
        super().__init__(msg, error_code)
        self._error_code = error_code

    @property
    def error_code(self):
        return self._error_code


class PyverbsUserError(PyverbsError):
    """A wrong use of the API, caught before any verb is called; it has no errno."""

    def __init__(self, msg):
        super().__init__(msg)
