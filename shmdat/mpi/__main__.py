"""`python -m shmdat.mpi -n N [--prefix] [--mpi4py] [--disable-auto-cleanup] script.py args...`
(runs the script with this interpreter) and `shmdat run -n N [...] [--] command args...` (runs
any command)."""

import argparse
import sys

from .launcher import Job


def main(argv=None, prog="python -m shmdat.mpi", command=False):
    """Parse the launcher's options, run the job, return its exit status. With `command`,
    the rest of the line is a command (`shmdat run`); otherwise a Python script."""
    parser = argparse.ArgumentParser(prog=prog, description="Launch N ranks of an MPI-style "
                                     "program on shmdat.mpi.")
    parser.add_argument("-n", "--np", type=int, required=True, dest="size",
                        help="the number of ranks")
    parser.add_argument("--prefix", action="store_true",
                        help="prefix every line of output with [rank]")
    parser.add_argument("--mpi4py", action="store_true",
                        help="run an unchanged mpi4py program: `import mpi4py` gives shmdat.mpi "
                        "in the ranks (a shim directory first on their PYTHONPATH)")
    parser.add_argument("--disable-auto-cleanup", action="store_true",
                        help="a rank that fails does not end the others (as mpiexec's "
                        "-disable-auto-cleanup): fault-tolerant (ULFM) programs go on")
    parser.add_argument("program", nargs=argparse.REMAINDER,
                        help="command and arguments" if command else "script.py and arguments")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        parser.error("no program to run")
    if args.size < 1:
        parser.error(f"-n must be at least 1, not {args.size}")
    return Job(args.size, program if command else [sys.executable] + program, args.prefix,
               args.mpi4py, not args.disable_auto_cleanup).run()


if __name__ == "__main__":
    sys.exit(main())
