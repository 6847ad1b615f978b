"""Unchanged pyverbs programs (issue 11, item 2): `python -m shmdat.verbs` and
`shmdat run-verbs` make `import pyverbs.X` give shmdat.verbs.X, in the program
and in the processes it spawns or forks. Every program runs in a real process.

The aliasing is checked on modules the tests add to shmdat.verbs' path (extra/),
so it does not depend on which verbs modules exist yet.
"""

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

import shmdat.verbs.__main__ as launcher

TIMEOUT = 60

# Imported by the programs: adds extra/ to shmdat.verbs and reports, as one line,
# whether pyverbs is the shim and pyverbs.X is shmdat.verbs.X at any depth.
CHECK = """
import importlib
import os

import pyverbs
import shmdat.verbs

shmdat.verbs.__path__.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "extra"))


def report(who, name):
    alias = importlib.import_module("pyverbs." + name)
    real = importlib.import_module("shmdat.verbs." + name)
    print(who, pyverbs.__shmdat__, alias is real, real.__spec__.name, flush=True)
"""


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def app(tmp_path):
    """A directory with check.py and the extra modules; returns a function that
    writes a program there and returns its path."""
    write(tmp_path / "check.py", CHECK)
    for name in ("probe.py", "late.py", "probepkg/__init__.py", "probepkg/inner.py"):
        write(tmp_path / "extra" / name, "")

    def program(text, name="app.py"):
        return write(tmp_path / name, text)
    return program


def launch(*argv, cwd, env=None, via=("-m", "shmdat.verbs")):
    done = subprocess.run([sys.executable, *via, *map(str, argv)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)
    return done.returncode, done.stdout, done.stderr


def test_pyverbs_modules_are_shmdat_verbs_modules(app, tmp_path):
    script = app("""
        import check
        import pyverbs
        import pyverbs.probe
        from pyverbs.probepkg import inner
        import shmdat.verbs.probe
        import shmdat.verbs.probepkg.inner

        print(pyverbs.__file__)
        print(pyverbs.probe is shmdat.verbs.probe, inner is shmdat.verbs.probepkg.inner)
        check.report("nested", "probepkg.inner")
    """)
    code, out, err = launch(script, cwd=tmp_path)
    assert code == 0, err
    assert out.splitlines() == [
        os.path.join(launcher.SHIM_DIR, "pyverbs", "__init__.py"),
        "True True",
        "nested True True shmdat.verbs.probepkg.inner",   # keeps its own __spec__
    ]


@pytest.mark.skipif(importlib.util.find_spec("shmdat.verbs.pyverbs_error") is None,
                    reason="shmdat.verbs.pyverbs_error is not written yet")
def test_the_pyverbs_error_module(tmp_path):
    script = write(tmp_path / "app.py", """
        import pyverbs, pyverbs.pyverbs_error as pe
        from pyverbs.pyverbs_error import PyverbsRDMAError
        import shmdat.verbs.pyverbs_error

        print(pyverbs.__shmdat__, pe is shmdat.verbs.pyverbs_error,
              PyverbsRDMAError is shmdat.verbs.pyverbs_error.PyverbsRDMAError)
    """)
    code, out, err = launch(script, cwd=tmp_path)
    assert (code, out) == (0, "True True True\n"), err


def test_a_module_shmdat_verbs_lacks_is_not_found_under_its_pyverbs_name(tmp_path):
    script = write(tmp_path / "app.py", """
        import pyverbs.no_such_module
    """)
    code, out, err = launch(script, cwd=tmp_path)
    assert code == 1
    assert "ModuleNotFoundError: No module named 'pyverbs.no_such_module'" in err


def test_arguments_reach_the_program_untouched(app, tmp_path):
    script = app("""
        import sys
        print(sys.argv)
    """)
    code, out, err = launch(script, "a b", "-m", "x", "--help", cwd=tmp_path)
    assert code == 0, err
    assert out == f"{[str(script), 'a b', '-m', 'x', '--help']}\n"


def test_the_exit_status_is_the_programs(app, tmp_path):
    script = app("""
        import sys
        sys.exit(3)
    """)
    assert launch(script, cwd=tmp_path)[0] == 3


def test_an_exception_in_the_program_is_a_traceback_and_a_failure(app, tmp_path):
    script = app("""
        def deep():
            raise ValueError("the program failed")
        deep()
    """)
    code, out, err = launch(script, cwd=tmp_path)
    assert code == 1
    assert "Traceback" in err and "in deep" in err and "ValueError: the program failed" in err


@pytest.mark.parametrize("how", ["spawn", "subprocess", "fork"])
def test_children_see_the_shim(app, tmp_path, how):
    script = app("""
        import multiprocessing
        import os
        import subprocess
        import sys

        import check


        def child():
            check.report("spawn", "probe")


        if __name__ == "__main__":
            how = sys.argv[1]
            if how == "spawn":
                p = multiprocessing.get_context("spawn").Process(target=child)
                p.start()
                p.join(60)
                sys.exit(p.exitcode)
            if how == "subprocess":
                command = "import check; check.report('subprocess', 'probe')"
                sys.exit(subprocess.run([sys.executable, "-c", command], timeout=60).returncode)
            pid = os.fork()
            if pid == 0:
                check.report("fork", "late")    # first imported after the fork
                os._exit(0)
            sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    """)
    code, out, err = launch(script, how, cwd=tmp_path)
    assert code == 0, err
    module = "late" if how == "fork" else "probe"
    assert out == f"{how} True True shmdat.verbs.{module}\n"


def test_ours_wins_over_an_installed_pyverbs(app, tmp_path):
    write(tmp_path / "real" / "pyverbs" / "__init__.py", "__shmdat__ = False\n")
    script = app("""
        import subprocess
        import sys

        sys.path.insert(0, "real")      # as a program adding rdma-core's build dir
        import check

        check.report("parent", "probe")
        subprocess.run([sys.executable, "-c", "import check; check.report('child', 'probe')"],
                       check=True, timeout=60)
    """)
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "real"))
    code, out, err = launch(script, cwd=tmp_path, env=env)
    assert code == 0, err
    assert out == "parent True True shmdat.verbs.probe\nchild True True shmdat.verbs.probe\n"


def test_dash_m_runs_a_module_as_main(app, tmp_path):
    app("""
        import sys
        import check

        print(__name__, sys.argv[1:])
        check.report("module", "probe")
    """, name="probe_main.py")
    code, out, err = launch("-m", "probe_main", "-x", "y", cwd=tmp_path)
    assert code == 0, err
    assert out == "__main__ ['-x', 'y']\nmodule True True shmdat.verbs.probe\n"


def test_the_program_sees_its_own_directory_first(app, tmp_path):
    app("""
        import os, sys
        import check

        print(sys.path[1] == os.path.dirname(os.path.abspath(__file__)))
        check.report("sibling", "probe")
    """)
    # Run from elsewhere: check.py is found beside the program, as python would.
    code, out, err = launch(tmp_path / "app.py", cwd=tmp_path / "extra")
    assert code == 0, err
    assert out == "True\nsibling True True shmdat.verbs.probe\n"


def test_shmdat_run_verbs(app, tmp_path):
    script = app("""
        import sys
        import check

        check.report(sys.argv[1], "probe")
    """)
    code, out, err = launch("run-verbs", script, "run-verbs", cwd=tmp_path, via=("-m", "shmdat"))
    assert code == 0, err
    assert out == "run-verbs True True shmdat.verbs.probe\n"


def test_shmdat_run_verbs_help(tmp_path):
    code, out, err = launch("run-verbs", "--help", cwd=tmp_path, via=("-m", "shmdat"))
    assert code == 0, err
    assert out.startswith("usage: shmdat run-verbs [-h] [-m module] [script] [args ...]")
    assert "even where rdma-core's own pyverbs is installed" in " ".join(out.split())


def test_without_a_program_it_is_a_usage_error(tmp_path):
    code, out, err = launch(cwd=tmp_path)
    assert code == 2 and "a script or -m module is required" in err
    code, out, err = launch(tmp_path / "missing.py", cwd=tmp_path)
    assert code == 2 and "can't open file" in err
