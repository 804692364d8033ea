"""asdf's YAML dump through rasdf (part of :mod:`rasdf.asdf_hook`).

``asdf.yamlutil.dump_tree`` ends with ``yaml.dump_all([tree], stream=fd,
Dumper=AsdfDumper, ...)`` (the same call from asdf 4.0 to 6.0). While the hook is
installed, the name ``yaml`` in ``asdf.yamlutil`` is :data:`proxy`: PyYAML in every
other respect, whose ``dump_all`` has rasdf write that call's text (asdf's representers
and libyaml's emitter, as PyYAML's ``CSafeDumper`` runs them: the same bytes). Any other
call, a dumper or representer changed from asdf's own, PyYAML without libyaml, or an
object rasdf does not represent exactly as PyYAML would goes to PyYAML's ``dump_all``,
which then writes or raises what it always does.
"""

from __future__ import annotations

import datetime
import types
from collections import OrderedDict
from typing import Any, Optional

import yaml

from . import _rasdf


class _Proxy(types.ModuleType):
    """The module ``yaml`` with ``dump_all`` through rasdf."""

    def __getattr__(self, name: str) -> Any:
        return getattr(yaml, name)

    @staticmethod
    def dump_all(documents: Any, stream: Any = None, Dumper: Any = None, **kwds: Any) -> Any:
        try:
            text = _dump(documents, stream, Dumper, kwds)
        except Exception:  # noqa: BLE001 - PyYAML's own dump writes or raises
            text = None
        if text is None:
            if Dumper is None:
                return yaml.dump_all(documents, stream, **kwds)
            return yaml.dump_all(documents, stream, Dumper=Dumper, **kwds)
        stream.write(text)
        return None


proxy = _Proxy("yaml")

_types: Optional[dict] = None
_EXPECTED_KW = {"explicit_start", "explicit_end", "version", "allow_unicode", "encoding", "tags"}


def _type_codes() -> Optional[dict]:
    """``{type: kind}`` of the types asdf's dumper represents, when its registry holds
    exactly asdf's and PyYAML's own representers for them; ``None`` otherwise."""
    import numpy as np
    from asdf import tagged, yamlutil

    D = yamlutil.AsdfDumper
    S = yaml.representer.SafeRepresenter
    reps = D.yaml_representers
    rd = D.__dict__.get("represent_data")
    if D.yaml_multi_representers or getattr(rd, "__qualname__", "") != "AsdfDumper.represent_data":
        return None
    if getattr(rd, "__module__", "") != "asdf.yamlutil":
        return None
    expected = {
        type(None): (0, S.represent_none),
        str: (1, S.represent_str),
        bytes: (2, S.represent_binary),
        bool: (3, S.represent_bool),
        int: (4, S.represent_int),
        float: (5, S.represent_float),
        list: (6, S.represent_list),
        tuple: (6, S.represent_list),
        dict: (7, S.represent_dict),
        set: (8, S.represent_set),
        datetime.date: (9, S.represent_date),
        datetime.datetime: (10, S.represent_datetime),
        tagged.TaggedList: (11, yamlutil.represent_sequence),
        tagged.TaggedDict: (12, yamlutil.represent_mapping),
        tagged.TaggedString: (13, yamlutil.represent_scalar),
        OrderedDict: (14, yamlutil.represent_ordereddict),
        np.str_: (17, getattr(yamlutil, "represent_numpy_str", None)),
        np.bytes_: (18, S.represent_binary),
    }
    codes = {}
    for t, (code, f) in expected.items():
        if f is None or reps.get(t) is not f:
            return None
        codes[t] = code
    for t, f in reps.items():
        if t in codes or t is None:
            continue
        lam = getattr(f, "__name__", "") == "<lambda>" and getattr(f, "__module__", "") == "asdf.yamlutil"
        if lam and isinstance(t, type) and issubclass(t, np.floating):
            codes[t] = 15
        elif lam and isinstance(t, type) and issubclass(t, np.integer):
            codes[t] = 16
        # Any other representer: its type is left out (PyYAML represents it).
    if reps.get(None) is not S.represent_undefined:
        return None
    return codes


def _dump(documents: Any, stream: Any, Dumper: Any, kwds: dict) -> Optional[bytes]:
    """rasdf's text of asdf's dump call, or ``None`` for a call that is not asdf's."""
    global _types
    from asdf import yamlutil

    if (
        Dumper is not yamlutil.AsdfDumper
        or stream is None
        or set(kwds) != _EXPECTED_KW
        or kwds["explicit_start"] is not True
        or kwds["explicit_end"] is not True
        or tuple(kwds["version"]) != (1, 1)
        or kwds["allow_unicode"] is not True
        or kwds["encoding"] != "utf-8"
        or type(kwds["tags"]) is not dict
        or not isinstance(documents, list)
        or len(documents) != 1
        or not getattr(yaml, "__with_libyaml__", False)
        or yamlutil.AsdfDumper.__mro__[1] is not yaml.CSafeDumper
    ):
        return None
    # Read at every dump (a few dozen entries): a representer registered or replaced
    # since the last one counts.
    _types = _type_codes()
    if _types is None:
        return None
    tags = [(str(h), str(p)) for h, p in kwds["tags"].items()]
    if any(type(h) is not str or type(p) is not str for h, p in kwds["tags"].items()):
        return None
    return _rasdf.hook_dump(documents[0], tags, _types)


def install() -> None:
    """Forget what the dumper's registry held (read again at the next dump)."""
    global _types
    _types = None
