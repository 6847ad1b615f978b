"""`pyverbs`, answered by shmdat.verbs.

This directory is put first on the path by `python -m shmdat.verbs` (and
`shmdat run-verbs`); it is not installed as a package of its own. Importing it
installs a finder that makes every `pyverbs.X` the very module object
`shmdat.verbs.X`, so `pyverbs.device.Context is shmdat.verbs.device.Context`.
A module shmdat.verbs lacks is a ModuleNotFoundError naming `pyverbs.X`.
"""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

import shmdat.verbs

__shmdat__ = True   # how a program (or a test) tells this pyverbs from rdma-core's

# Submodules come only from the finder below, never from a directory.
__path__ = []

_PREFIX = __name__ + "."
_TARGET = shmdat.verbs.__name__ + "."


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """pyverbs.X -> shmdat.verbs.X, at any depth."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(_PREFIX):
            return None
        real_name = _TARGET + fullname[len(_PREFIX):]
        # Only locate it here: executing a module under the import system's
        # global lock (held while finders run) could deadlock other threads.
        if importlib.util.find_spec(real_name) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, loader_state=real_name)

    def create_module(self, spec):
        module = importlib.import_module(spec.loader_state)
        # The import system is about to point module.__spec__ at the alias:
        # keep the module's own spec where exec_module can put it back.
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module):
        # Nothing to run: the module ran already, as shmdat.verbs.X.
        module.__spec__ = module.__spec__.loader_state


sys.meta_path.insert(0, _Alias())
