"""The compiled half of rasdf (PyO3): private, used by rasdf/__init__.py alone.

Its classes and functions (File, Keep, Schemas, write, load_yaml) are typed as Any here:
their Python signatures are the Rust functions' (python/src/lib.rs), and only the
package's own code calls them.
"""

from typing import Any

__version__: str

class AsdfError(ValueError):
    file: Any
    block: Any
    offset: Any
    path: Any
    line: Any

def __getattr__(name: str) -> Any: ...
