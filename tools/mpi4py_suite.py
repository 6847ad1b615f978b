"""Run mpi4py's own unit tests (the test/ directory of mpi4py's source distribution) under
`shmdat run -n N --mpi4py`, one module at a time, each bounded, and print a table per module
and N: tests run, passed, failed, errors, how many of the failed and errors are
NotImplementedCall (a call shmdat.mpi lists as missing, also when mpi4py's test turns it into
a failure), skipped, and whether the run ended well, hung (the test it hung in) or could not
load the module (the missing name it stopped at).

    python tools/mpi4py_suite.py --testdir .../mpi4py-4.1.2/test [-n 1 2 3] [--timeout S]
                                 [--details] [--mpiexec] [test_p2p_obj test_cco_buf ...]

--details lists every failure and error that is not NotImplementedCall (test, exception,
message); --missing counts, per call shmdat.mpi lacks, the tests that stopped at it (what
to implement next); --mpiexec runs the same modules under MPICH's `mpiexec` with the real mpi4py, for
comparison; --no-cuda-arrays leaves out the test arrays that offer only the CUDA array
interface (mpi4py's tests run every buffer test on them too, and shmdat.mpi does not take
them: NotImplementedCall), so that what the other arrays meet shows. The test directory may
also come from SHMDAT_MPI4PY_TESTS.

Each rank runs this file with `--rank-run`: it loads mpi4py's test runner (main.py) and
writes one JSON line per finished test to OUT.<rank>, flushed as it goes, so a module that
hangs still says which test it hung in.
"""

import argparse
import collections
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import traceback
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOT_IMPLEMENTED = "NotImplementedCall"
NO_CUDA_ARRAYS = "MPI4PY_SUITE_NO_CUDA_ARRAYS"     # (--no-cuda-arrays, to the ranks)


class _Recorder(unittest.TextTestResult):
    """unittest's text result that also writes each test's outcome to the rank's file."""

    out = None     # the rank's open file, set by _rank_run

    def startTest(self, test):
        self._write(test, "started")
        super().startTest(test)

    def _write(self, test, outcome, err=None, reason=""):
        record = {"test": test.id(), "outcome": outcome}
        if err is not None:
            kind, value, _ = err
            record["exception"] = kind.__name__
            record["message"] = str(value).splitlines()[0][:300] if str(value) else ""
            # mpi4py's catchNotImplementedError(version) turns a NotImplementedError into a
            # failure when the MPI version says the call should be there: still a missing call.
            if type(value.__context__).__name__ == NOT_IMPLEMENTED:
                record["exception"] = NOT_IMPLEMENTED
                record["message"] = str(value.__context__)[:300]
            frames = [f"{os.path.basename(f.filename)}:{f.lineno}"
                      for f in traceback.extract_tb(err[2])]
            # The line of the test that failed, and where the exception was raised.
            record["where"] = " -> ".join(
                [f for f in frames if f.startswith("test_")][-1:] + frames[-1:])
        if reason:
            record["message"] = reason[:300]
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()

    def addSuccess(self, test):
        super().addSuccess(test)
        self._write(test, "passed")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._write(test, "failed", err)

    def addError(self, test, err):
        super().addError(test, err)
        self._write(test, "error", err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._write(test, "skipped", reason=reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._write(test, "skipped", reason="expected failure")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._write(test, "passed")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:     # recorded under the test's own name: it is one test
            failed = issubclass(err[0], test.failureException)
            self._write(test, "failed" if failed else "error", err)


def _rank_run(testdir, module, out_prefix):
    """In a rank: run one mpi4py test module with mpi4py's runner, recording outcomes."""
    sys.path.insert(0, testdir)
    sys.dont_write_bytecode = True
    import main as mpi4py_tests     # mpi4py's test/main.py, found through testdir
    if os.environ.get(NO_CUDA_ARRAYS):
        import arrayimpl            # mpi4py's test arrays: those with the CUDA interface out
        arrayimpl.ArrayBackends[:] = [b for b in arrayimpl.ArrayBackends
                                      if not hasattr(b, "set_interface")]

    from mpi4py import MPI
    rank = MPI.COMM_WORLD.Get_rank()
    with open(f"{out_prefix}.{rank}", "w") as out:
        _Recorder.out = out
        runner = unittest.TextTestRunner(resultclass=_Recorder, stream=open(os.devnull, "w"))
        try:
            mpi4py_tests.main(module=None, testRunner=runner,
                              argv=[module, "--no-builddir", module])
        except SystemExit:
            pass
        except Exception:       # the module could not be loaded: one error for all of it
            _Recorder(None, False, 0)._write(_Module(module), "error", sys.exc_info())


class _Module:
    """A test module that failed to load, as a test for _Recorder's records."""

    def __init__(self, name):
        self.name = name

    def id(self):
        return f"{self.name} (import)"


def _summary(records):
    """Counts of one rank's records (a test 'started' without an outcome hung or crashed)."""
    done = {}
    for r in records:
        if r["outcome"] != "started":
            done.setdefault(r["test"], r)   # a test's first bad subtest stands for it
    hung = records[-1]["test"] if records and records[-1]["outcome"] == "started" else None
    counts = {k: 0 for k in ("passed", "failed", "error", "skipped")}
    for r in done.values():
        counts[r["outcome"]] += 1
    counts["run"] = len(done)
    counts["notimpl"] = sum(1 for r in done.values()
                            if r.get("exception") == NOT_IMPLEMENTED)
    return counts, done, hung


def _run_module(args, module, n, tmp):
    """Run `module` on n ranks; (status, {rank: records}). status is the exit status, or
    'timeout'."""
    out_prefix = os.path.join(tmp, f"{module}.{n}")
    rank_cmd = [os.path.abspath(__file__), "--rank-run", args.testdir, module, out_prefix]
    if args.mpiexec:
        cmd = ["mpiexec", "-n", str(n), sys.executable, *rank_cmd]
        env = dict(os.environ)
    else:
        cmd = [sys.executable, "-m", "shmdat", "run", "-n", str(n), "--mpi4py", "--",
               sys.executable, *rank_cmd]
        env = dict(os.environ, PYTHONPATH=ROOT)
    if args.no_cuda_arrays:
        env[NO_CUDA_ARRAYS] = "1"
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        status = proc.wait(args.timeout)
    except subprocess.TimeoutExpired:
        status = "timeout"
        os.killpg(proc.pid, signal.SIGTERM)    # the launcher ends its ranks and cleans up
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    ranks = {}
    for rank in range(n):
        try:
            with open(f"{out_prefix}.{rank}") as f:
                ranks[rank] = [json.loads(line) for line in f]
        except FileNotFoundError:
            ranks[rank] = []
    return status, ranks


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--testdir", default=os.environ.get("SHMDAT_MPI4PY_TESTS"),
                        help="mpi4py's test/ directory (or SHMDAT_MPI4PY_TESTS)")
    parser.add_argument("-n", type=int, nargs="+", default=[1, 2, 3], dest="sizes")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per module")
    parser.add_argument("--details", action="store_true")
    parser.add_argument("--missing", action="store_true")
    parser.add_argument("--mpiexec", action="store_true",
                        help="run under MPICH's mpiexec and the real mpi4py instead")
    parser.add_argument("--no-cuda-arrays", action="store_true",
                        help="leave out mpi4py's test arrays with only the CUDA interface")
    parser.add_argument("modules", nargs="*")
    args = parser.parse_args()
    if not args.testdir:
        parser.error("--testdir (or SHMDAT_MPI4PY_TESTS) must name mpi4py's test/ directory")
    modules = args.modules or sorted(
        os.path.basename(p)[:-3] for p in glob.glob(os.path.join(args.testdir, "test_*.py")))
    print("| module | N | run | passed | failed | errors | NotImplementedCall | skipped | status |")
    print("|---|---|---|---|---|---|---|---|---|")
    details = []
    missing = collections.Counter()      # NotImplementedCall's message -> tests (all runs)
    with tempfile.TemporaryDirectory(prefix="mpi4py_suite.") as tmp:
        for module in modules:
            for n in args.sizes:
                status, ranks = _run_module(args, module, n, tmp)
                counts, done, hung = _summary(ranks[0])
                note = "ok" if status == 0 else f"exit {status}"
                loading = done.get(f"{module} (import)")
                if loading:
                    note = f"not loaded: {loading['exception']}: {loading['message']}"
                if hung:
                    note += f", in {hung.rsplit('.', 1)[-1]}"
                if any(_summary(ranks[r])[0] != counts for r in ranks):
                    note += ", ranks differ"
                print(f"| {module} | {n} | {counts['run']} | {counts['passed']} | "
                      f"{counts['failed']} | {counts['error']} | {counts['notimpl']} | "
                      f"{counts['skipped']} | {note} |", flush=True)
                missing.update(rec["message"] for rec in done.values()
                               if rec.get("exception") == NOT_IMPLEMENTED)
                for r in ranks:
                    for test, rec in _summary(ranks[r])[1].items():
                        if rec["outcome"] in ("failed", "error") and \
                                rec.get("exception") != NOT_IMPLEMENTED:
                            details.append((module, n, r, test, rec))
    if args.missing:
        for message, tests in missing.most_common():
            print(f"{tests:5d}  {message}")
    if args.details:
        seen = set()
        for module, n, rank, test, rec in details:
            key = (test, rec.get("exception"), rec.get("message"))
            if key in seen:
                continue
            seen.add(key)
            print(f"{test} [N={n} rank {rank}] {rec['outcome']}: {rec.get('exception')}: "
                  f"{rec.get('message')} ({rec.get('where')})")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rank-run"]:
        _rank_run(*sys.argv[2:5])
    else:
        main()
