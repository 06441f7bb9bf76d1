# SPDX-License-Identifier: Apache-2.0
"""Makes torch.compile see the calls without the user importing elementwise.torch, and without
``import elementwise`` importing torch.

elementwise.torch (the custom ops and the substitutes torch.compile traces in place of the C
functions) costs tens of milliseconds to register and needs torch._dynamo, which ``import torch``
does not load. So registration waits for torch._dynamo: torch.compile imports it before it traces
anything. ``install()`` (called at the end of ``elementwise/__init__.py``) registers at once where
torch._dynamo is already loaded, else puts a finder on ``sys.meta_path`` that, when torch._dynamo
has been imported, imports elementwise.torch and takes itself off. A process that never compiles
never pays; one that imported torch pays nothing at ``import elementwise``.
"""

import importlib.util
import sys
import warnings

_TRIGGER = "torch._dynamo"


def _register() -> None:
    try:
        import elementwise.torch  # noqa: F401 -- registers on import
    except Exception as error:  # never break torch._dynamo's own import; say why instead
        warnings.warn("elementwise: torch.compile support is not registered (%s: %s); "
                      "`import elementwise.torch` shows the whole error" % (type(error).__name__, error),
                      RuntimeWarning, stacklevel=2)


class _AfterDynamo:
    """A meta path finder that finds nothing itself: it wraps torch._dynamo's loader so that
    elementwise.torch is imported right after torch._dynamo has run, then leaves sys.meta_path."""

    def find_spec(self, name, path=None, target=None):
        if name != _TRIGGER:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)  # the finders that really find it
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader_exec = spec.loader.exec_module

        def exec_module(module):
            loader_exec(module)
            _register()

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    """Register elementwise.torch now if torch._dynamo is loaded, else when it is."""
    if _TRIGGER in sys.modules:
        _register()
    elif not any(isinstance(finder, _AfterDynamo) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterDynamo())
