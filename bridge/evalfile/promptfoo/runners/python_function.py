"""Loading a function from a promptfoo Python file as promptfoo does: the file's folder on
the import path, the file run as a module, the function taken by name. Each Python runner
here is sent after this text to `python3 -I -c` (`functions.python_runner`): a worker may
not have evalrelay installed where the runner runs."""

import importlib.util
import sys
from pathlib import Path
from typing import Any


def python_function(file: str, name: str) -> Any:
    path = Path(file)
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location("promptfoo_module", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)
