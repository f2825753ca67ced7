"""An inert stand-in for ``sgl_kernel`` (SGLang's CUDA kernels), put first on PYTHONPATH by
``eagle3lint engine-run --engine sglang``: SGLang's CPU start-up imports it, and on a target-only
path never calls it. Every name and submodule resolves; every call raises, so nothing this package
replaces can produce a result. The one call a 0.5.23 launch makes (the KV-cache copy warm-up,
slot 0 onto slot 0) is answered by the probe, not here."""

import importlib.abc
import importlib.machinery
import sys
import types

__version__ = "0.0.0+eagle3lint.stub"


class _Inert:
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        raise RuntimeError("eagle3lint engine-run: the inert sgl_kernel stand-in was called")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Inert()

    def __getitem__(self, key):
        return _Inert()

    def __mro_entries__(self, bases):
        return (object,)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Inert()


class _Submodules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``sgl_kernel.anything``: an inert module like this one."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith(__name__ + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = __getattr__  # type: ignore[method-assign]
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Submodules())
