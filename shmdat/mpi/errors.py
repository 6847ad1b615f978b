"""MPI.Exception and the error classes (MPICH's numbers, as mpi4py over MPICH shows them)."""

SUCCESS = 0
ERR_BUFFER = 1
ERR_COUNT = 2
ERR_TYPE = 3
ERR_TAG = 4
ERR_COMM = 5
ERR_RANK = 6
ERR_ROOT = 7
ERR_GROUP = 8
ERR_OP = 9
ERR_ARG = 12
ERR_TRUNCATE = 14
ERR_OTHER = 15
ERR_INTERN = 16
ERR_REQUEST = 19
ERR_KEYVAL = 48

_STRINGS = {
    SUCCESS: "No MPI error", ERR_BUFFER: "Invalid buffer pointer", ERR_COUNT: "Invalid count",
    ERR_TYPE: "Invalid datatype", ERR_TAG: "Invalid tag", ERR_COMM: "Invalid communicator",
    ERR_RANK: "Invalid rank", ERR_ROOT: "Invalid root", ERR_OP: "Invalid MPI_Op",
    ERR_ARG: "Invalid argument", ERR_TRUNCATE: "Message truncated",
    ERR_OTHER: "Other MPI error", ERR_INTERN: "Internal MPI error",
    ERR_GROUP: "Invalid group", ERR_REQUEST: "Invalid MPI_Request", ERR_KEYVAL: "Invalid keyval",
}

# One-sided communication's classes (shmdat/mpi/win.py).
ERR_WIN = 45
ERR_RMA_SYNC = 50
ERR_SIZE = 51
ERR_DISP = 52
ERR_RMA_RANGE = 55
_STRINGS.update({
    ERR_WIN: "Invalid MPI_Win", ERR_SIZE: "Invalid size argument in RMA call",
    ERR_RMA_SYNC: "Wrong synchronization of RMA calls",
    ERR_DISP: "Invalid displacement argument in RMA call",
    ERR_RMA_RANGE: "Target memory is not part of the window",
})


class Exception(RuntimeError):    # noqa: A001 - mpi4py's name: MPI.Exception
    """MPI.Exception(ierr, detail=""): an MPI error; `error_class` is one of the ERR_* above."""

    def __init__(self, ierr=ERR_OTHER, detail=""):
        self.error_code = self.error_class = ierr
        self.error_string = _STRINGS.get(ierr, f"Unknown error class {ierr}")
        super().__init__(f"{self.error_string}: {detail}" if detail else self.error_string)

    def Get_error_class(self):
        return self.error_class

    def Get_error_code(self):
        return self.error_code

    def Get_error_string(self):
        return self.error_string

    def __int__(self):
        return self.error_code
