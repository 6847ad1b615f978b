"""Run a pyverbs program unchanged on shmdat.verbs: `python -m shmdat.verbs
app.py [args]`, `python -m shmdat.verbs -m module [args]`, or `shmdat run-verbs`."""

import argparse
import importlib
import os
import runpy
import sys

# Holds the `pyverbs` package that answers with shmdat.verbs, and nothing else.
SHIM_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shim")

DESCRIPTION = """\
Run a program written for rdma-core's pyverbs on shmdat.verbs, without editing
it: `import pyverbs.X` gives the module shmdat.verbs.X, in this process and in
the processes it forks or spawns (multiprocessing, subprocess of Python).
The shim directory goes first on sys.path and PYTHONPATH, so shmdat.verbs is
chosen even where rdma-core's own pyverbs is installed. A child given an
environment of its own sees the shim only if that keeps PYTHONPATH.
"""


def _parser(prog):
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-m", dest="module", metavar="module",
                        help="run a library module as a script, as python -m does")
    parser.add_argument("script", nargs="?", help="the program's file")
    parser.add_argument("args", nargs="*", help="the program's arguments, passed as they are")
    return parser


def main(argv=None, prog="python -m shmdat.verbs"):
    argv = sys.argv[1:] if argv is None else list(argv)
    # What follows the script or the module is the program's, options included:
    # only what comes before goes to the parser.
    ours = argv[:2] if argv[:1] == ["-m"] else argv[:1]
    parser = _parser(prog)
    options = parser.parse_args(ours)
    if options.module is None and options.script is None:
        parser.error("a script or -m module is required")
    if options.script is not None and not os.path.exists(options.script):
        parser.error(f"can't open file {options.script!r}")
    args = argv[len(ours):]

    # Children inherit the environment; this process has started already.
    inherited = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = SHIM_DIR + os.pathsep + inherited if inherited else SHIM_DIR
    # sys.path[0] is the launcher's; the program gets the one python would give it.
    here = os.getcwd() if options.module else os.path.dirname(os.path.abspath(options.script))
    sys.path[0:1] = [SHIM_DIR, here]
    # Imported now, so a program that puts a real pyverbs on sys.path still gets ours.
    importlib.import_module("pyverbs")

    if options.module:
        sys.argv = [options.module, *args]
        runpy.run_module(options.module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = [options.script, *args]
        runpy.run_path(options.script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
