"""PyYAML, imported on first use: `from compiler.io.lazyyaml import yaml` gives a stand-in for
the `yaml` module whose first attribute read imports it.

The loader's C fast path (`compiler.io.fastload`) reads nearly every file without PyYAML, and
importing PyYAML costs a one-file `tjc validate` about a tenth of its time (its reader compiles
a large Unicode pattern), so the modules that need it only for the files the fast path cannot
read, or for their errors, import it through this. Type checkers see the real module (the
callers import it under `TYPE_CHECKING`).
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    from yaml import YAMLError


class _Yaml:
    """Stands for the `yaml` module; each attribute is read from it once, then kept."""

    def __getattr__(self, name: str) -> Any:
        value = getattr(importlib.import_module("yaml"), name)
        setattr(self, name, value)
        return value


yaml: Any = _Yaml()


def is_yaml_error(exc: BaseException) -> TypeGuard[YAMLError]:
    """Whether an exception is PyYAML's (without importing it: unimported, it raised none).
    For the handlers of generators, whose `except yaml.YAMLError` would import PyYAML when a
    generator is closed early (its GeneratorExit passes the clause)."""
    module = sys.modules.get("yaml")
    return module is not None and isinstance(exc, module.YAMLError)
