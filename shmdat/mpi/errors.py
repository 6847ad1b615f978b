"""MPI.Exception, the error classes (MPICH's numbers and wording, as mpi4py over MPICH shows
them) and the classes, codes and strings a program adds (MPI_Add_error_class/_code/_string)."""

import threading

SUCCESS = 0

# (class, name, MPI_Error_string's wording): every class MPI 3.1 defines, the few of 4.x
# that mpi4py names, and ULFM's three (fault tolerance: shmdat/mpi/ulfm.py) with the numbers
# of MPICH's MPIX_ERR_PROC_FAILED, _PENDING and MPIX_ERR_REVOKED (mpi4py over MPICH, built
# without ULFM, shows ERR_UNKNOWN for all three).
CLASSES = (
    (1, "ERR_BUFFER", "Invalid buffer pointer"),
    (2, "ERR_COUNT", "Invalid count"),
    (3, "ERR_TYPE", "Invalid datatype"),
    (4, "ERR_TAG", "Invalid tag"),
    (5, "ERR_COMM", "Invalid communicator"),
    (6, "ERR_RANK", "Invalid rank"),
    (7, "ERR_ROOT", "Invalid root"),
    (8, "ERR_GROUP", "Invalid group"),
    (9, "ERR_OP", "Invalid MPI_Op"),
    (10, "ERR_TOPOLOGY", "Invalid topology"),
    (11, "ERR_DIMS", "Invalid dimension argument"),
    (12, "ERR_ARG", "Invalid argument"),
    (13, "ERR_UNKNOWN", "Unknown error"),
    (14, "ERR_TRUNCATE", "Message truncated"),
    (15, "ERR_OTHER", "Other MPI error"),
    (16, "ERR_INTERN", "Internal MPI error"),
    (17, "ERR_IN_STATUS", "See the MPI_ERROR field in MPI_Status for the error code"),
    (18, "ERR_PENDING", "Pending request (no error)"),
    (19, "ERR_REQUEST", "Invalid MPI_Request"),
    (20, "ERR_ACCESS", "Access denied to file"),
    (21, "ERR_AMODE", "Invalid amode value in MPI_File_open"),
    (22, "ERR_BAD_FILE", "Invalid file name"),
    (23, "ERR_CONVERSION", "An error occurred in a user-defined data conversion function"),
    (24, "ERR_DUP_DATAREP", "The requested datarep name has already been specified"),
    (25, "ERR_FILE_EXISTS", "File exists"),
    (26, "ERR_FILE_IN_USE", "File in use by some process"),
    (27, "ERR_FILE", "Invalid MPI_File"),
    (28, "ERR_INFO", "Invalid MPI_Info"),
    (29, "ERR_INFO_KEY", "Invalid key for MPI_Info"),
    (30, "ERR_INFO_VALUE", "Invalid MPI_Info value"),
    (31, "ERR_INFO_NOKEY", "MPI_Info key is not defined"),
    (32, "ERR_IO", "Other I/O error"),
    (33, "ERR_NAME", "Invalid service name"),
    (34, "ERR_NO_MEM", "Unable to allocate memory for MPI_Alloc_mem"),
    (35, "ERR_NOT_SAME", "Inconsistent arguments to collective routine"),
    (36, "ERR_NO_SPACE", "Not enough space for file"),
    (37, "ERR_NO_SUCH_FILE", "File does not exist"),
    (38, "ERR_PORT", "Invalid port"),
    (39, "ERR_QUOTA", "Quota exceeded for files"),
    (40, "ERR_READ_ONLY", "Read-only file or filesystem name"),
    (41, "ERR_SERVICE", "Attempt to lookup an unknown service name"),
    (42, "ERR_SPAWN", "Error in spawn call"),
    (43, "ERR_UNSUPPORTED_DATAREP", "Unsupported datarep passed to MPI_File_set_view"),
    (44, "ERR_UNSUPPORTED_OPERATION", "Unsupported file operation"),
    (45, "ERR_WIN", "Invalid MPI_Win"),
    (46, "ERR_BASE", "Invalid base address"),
    (47, "ERR_LOCKTYPE", "Invalid locktype argument"),
    (48, "ERR_KEYVAL", "Invalid keyval"),
    (49, "ERR_RMA_CONFLICT", "Conflicting accesses to window"),
    (50, "ERR_RMA_SYNC", "Wrong synchronization of RMA calls"),
    (51, "ERR_SIZE", "Invalid size argument in RMA call"),
    (52, "ERR_DISP", "Invalid displacement argument in RMA call"),
    (53, "ERR_ASSERT", "Invalid assert argument"),
    (55, "ERR_RMA_RANGE", "Target memory is not part of the window"),
    (56, "ERR_RMA_ATTACH", "Memory cannot be attached"),
    (57, "ERR_RMA_SHARED", "Memory cannot be shared"),
    (58, "ERR_RMA_FLAVOR", "Incorrect window flavor"),
    (75, "ERR_SESSION", "Invalid MPI_Session handle"),
    (76, "ERR_PROC_ABORTED", "Process was aborted"),
    (77, "ERR_VALUE_TOO_LARGE", "Value is too large to store"),
    (80, "ERR_ERRHANDLER", "Invalid errhandler"),
    (101, "ERR_PROC_FAILED", "Process failed"),
    (102, "ERR_PROC_FAILED_PENDING", "Request pending due to failure"),
    (103, "ERR_REVOKED", "Communication object revoked"),
    (0x3FFFFFFF, "ERR_LASTCODE", "Last error code"),
)
NAMES = {name: number for number, name, _ in CLASSES}      # MPI.ERR_BUFFER, ... (MPI.py)
globals().update(NAMES)
_ERR_ARG, _ERR_UNKNOWN = NAMES["ERR_ARG"], NAMES["ERR_UNKNOWN"]
_STRINGS = {SUCCESS: "No MPI error", **{number: string for number, _, string in CLASSES}}

# What MPI_Add_error_class/_code/_string added: code -> its class (a class is its own), and
# their strings. LASTUSEDCODE (Comm.Get_attr) is the last code given.
_lock = threading.Lock()
_added_class = {}
_added_string = {}
_last_used = NAMES["ERR_LASTCODE"]


def last_used_code():
    """The attribute LASTUSEDCODE: the largest error code or class given so far."""
    return _last_used


def _new_code(errorclass):
    global _last_used
    with _lock:
        _last_used += 1
        code = _last_used
        _added_class[code] = code if errorclass is None else errorclass
        _added_string[code] = ""
    return code


def Add_error_class():
    """MPI_Add_error_class: a new error class, above ERR_LASTCODE, whose string is ''."""
    return _new_code(None)


def Add_error_code(errorclass):
    """MPI_Add_error_code: a new error code of `errorclass` (a predefined class or one
    Add_error_class gave), whose string is ''. MPI.Exception ERR_ARG for anything else."""
    if not _is_class(errorclass):
        raise Exception(_ERR_ARG, f"Add_error_code: {errorclass!r} is no error class")
    return _new_code(errorclass)


def Add_error_string(errorcode, string):
    """MPI_Add_error_string: the string of a class or code a program added. MPI.Exception
    ERR_ARG for a predefined or unknown one, or a string that is not a str."""
    if errorcode not in _added_class or not isinstance(string, str):
        raise Exception(_ERR_ARG, f"Add_error_string: {errorcode!r}, {string!r}")
    _added_string[errorcode] = string


def _is_class(errorclass):
    return errorclass in _STRINGS or _added_class.get(errorclass) == errorclass


def Get_error_class(errorcode):
    """MPI_Error_class: a predefined code is its own class; an added code, the class it was
    added to. MPI.Exception ERR_ARG for a code MPI never gave."""
    if errorcode in _STRINGS:
        return errorcode
    errorclass = _added_class.get(errorcode)
    if errorclass is None:
        raise Exception(_ERR_ARG, f"Get_error_class: {errorcode!r} is no error code")
    return errorclass


def Get_error_string(errorcode):
    """MPI_Error_string (MPICH's wording; '' for an added code no string was given to).
    MPI.Exception ERR_ARG for a code MPI never gave."""
    string = _STRINGS.get(errorcode)
    if string is None:
        string = _added_string.get(errorcode)
        if string is None:
            raise Exception(_ERR_ARG, f"Get_error_string: {errorcode!r} is no error code")
    return string


class Exception(RuntimeError):    # noqa: A001 - mpi4py's name: MPI.Exception
    """MPI.Exception(ierr=SUCCESS, detail=""): an MPI error, compared, hashed and converted as
    its error code (an int), as mpi4py's; a negative ierr is ERR_UNKNOWN. str() is the
    error string, then shmdat.mpi's `detail` (what failed) if there is one."""

    def __init__(self, ierr=SUCCESS, detail=""):
        ierr = int(ierr)
        if ierr < SUCCESS:
            ierr = _ERR_UNKNOWN
        super().__init__(ierr)
        self.detail = detail

    def __int__(self):
        return self.args[0]

    def __bool__(self):
        return self.args[0] != SUCCESS

    def __hash__(self):
        return hash(self.args[0])

    def __eq__(self, other):
        return self.args[0] == other

    def __ne__(self, other):
        return self.args[0] != other

    def __lt__(self, other):
        return self.args[0] < other

    def __le__(self, other):
        return self.args[0] <= other

    def __gt__(self, other):
        return self.args[0] > other

    def __ge__(self, other):
        return self.args[0] >= other

    def __repr__(self):
        return f"MPI.Exception({self.args[0]})"

    def __str__(self):
        code = self.args[0]
        string = _STRINGS.get(code, _added_string.get(code, f"Unknown error code {code}"))
        return f"{string}: {self.detail}" if self.detail else string

    def Get_error_code(self):
        return self.args[0]

    def Get_error_class(self):
        return Get_error_class(self.args[0])

    def Get_error_string(self):
        return Get_error_string(self.args[0])

    error_code = property(Get_error_code)
    error_class = property(Get_error_class)
    error_string = property(Get_error_string)
