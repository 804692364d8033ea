"""Exact comparison of two YAML trees as PyYAML / asdf build them: the same types (not
just equal values), tags, key order, float bits, and the same sharing (an object seen
twice in one tree is one object seen twice at the same places in the other)."""

from __future__ import annotations

import math
import struct
from typing import Any, Callable, Dict, List, Optional


def differences(a: Any, b: Any, limit: int = 5, leaf: Optional[Callable[[Any], Any]] = None) -> List[str]:
    """Where ``a`` and ``b`` differ (empty when they are the same). ``leaf``: for an
    object it returns something other than ``None`` for (a lazy array), that is what is
    compared (not its tag), and the object is not looked into."""
    out: List[str] = []
    seen_a: Dict[int, str] = {}
    seen_b: Dict[int, str] = {}

    def tag(x: Any) -> Any:
        return getattr(x, "_tag", getattr(x, "tag", None)) if not isinstance(x, (int, float, bytes)) else None

    def step(x: Any, y: Any, path: str) -> None:
        if type(x) is not type(y):
            out.append(f"{path}: {type(x).__name__} {x!r:.80} != {type(y).__name__} {y!r:.80}")
            return
        if leaf is not None and leaf(x) is not None:
            if leaf(x) != leaf(y):
                out.append(f"{path}: {leaf(x)!r:.80} != {leaf(y)!r:.80}")
            return
        if tag(x) != tag(y):
            out.append(f"{path}: tag {tag(x)!r} != {tag(y)!r}")
            return
        container = isinstance(x, (dict, list, set, tuple)) or hasattr(x, "data") and isinstance(x.data, (dict, list))
        if container:
            px, py = seen_a.get(id(x)), seen_b.get(id(y))
            if px is not None or py is not None:
                if px != py:
                    out.append(f"{path}: shared with {px!r} in one tree, {py!r} in the other")
                return
            seen_a[id(x)] = path
            seen_b[id(y)] = path
        if isinstance(x, float):
            same_nan = math.isnan(x) and math.isnan(y) and struct.pack("<d", x) == struct.pack("<d", y)
            if not (x == y and math.copysign(1, x) == math.copysign(1, y) or same_nan):
                out.append(f"{path}: {x!r} != {y!r}")
            return
        if isinstance(x, complex):
            todo.append((x.imag, y.imag, path + ".imag"))
            todo.append((x.real, y.real, path + ".real"))
            return
        if hasattr(x, "keys") and hasattr(x, "__getitem__"):
            kx, ky = list(x.keys()), list(y.keys())
            if len(kx) != len(ky):
                out.append(f"{path}: {len(kx)} keys != {len(ky)}")
                return
            for i, (k1, k2) in reversed(list(enumerate(zip(kx, ky)))):
                todo.append((x[k1], y[k2], f"{path}/{k1}"))
                todo.append((k1, k2, f"{path}/<key {i}>"))
            return
        if isinstance(x, (set, frozenset)):
            if x != y:
                out.append(f"{path}: {x!r:.80} != {y!r:.80}")
            return
        if isinstance(x, (list, tuple)) or hasattr(x, "data") and isinstance(x.data, list):
            if len(x) != len(y):
                out.append(f"{path}: length {len(x)} != {len(y)}")
                return
            for i in reversed(range(len(x))):
                todo.append((x[i], y[i], f"{path}/{i}"))
            return
        if x != y or str(x) != str(y):
            out.append(f"{path}: {x!r:.80} != {y!r:.80}")
            return
        if hasattr(x, "tzinfo") and x.tzinfo != y.tzinfo:
            out.append(f"{path}: tz {x.tzinfo!r} != {y.tzinfo!r}")

    # Iterative (a stack, not recursion): trees may nest thousands deep.
    todo = [(a, b, "")]
    while todo and len(out) < limit:
        step(*todo.pop())
    return out
