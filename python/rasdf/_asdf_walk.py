"""asdf's tree walks through rasdf (part of :mod:`rasdf.asdf_hook`).

``asdf.yamlutil.tagged_tree_to_custom_tree`` (reading) and
``custom_tree_to_tagged_tree`` (writing) end with ``treeutil.walk_and_modify(tree,
_walker, postorder, _context=ctx._tree_modification_context)``, whose Python recursion
is most of an eager ``asdf.open`` of a large tree once rasdf reads the YAML. While the
hook is installed, the name ``treeutil`` in ``asdf.yamlutil`` is :data:`proxy`: asdf's
``treeutil`` in every other respect, whose ``walk_and_modify`` runs those two walks in
Rust (``rasdf._rasdf.Walker``) with asdf's own ``_walker`` as the callback, on asdf's own
modification context. The callback is called for every node but those of the exact
builtin types it returns unchanged without doing anything else (no ``_tag`` when
reading, no converter for the type when writing): converters run for the same nodes, in
the same order, on the same objects, and warn as they do.

Any other call (another callback, asdf's functions or context replaced, an asdf whose
walk is not the one known here) goes to asdf's own ``walk_and_modify``.
"""

from __future__ import annotations

import collections
import datetime
import sys
import types
import weakref
from typing import Any, Optional

from asdf import lazy_nodes, tagged, treeutil, yamlutil

from . import _rasdf


class _Proxy(types.ModuleType):
    """The module ``asdf.treeutil`` with ``walk_and_modify`` through rasdf."""

    def __getattr__(self, name: str) -> Any:
        return getattr(treeutil, name)

    @staticmethod
    def walk_and_modify(top: Any, callback: Any, postorder: bool = True, _context: Any = None) -> Any:
        walker = _walker_for(callback, postorder, _context)
        if walker is None:
            return treeutil.walk_and_modify(top, callback, postorder=postorder, _context=_context)
        with _context:
            return walker.walk(top)


proxy = _Proxy("asdf.treeutil")

# Exact builtin types that can hold no `_tag` (no instance `__dict__`): asdf's reading
# callback returns them as they are. The writing callback does so for those without a
# converter, asked of the walk's extension manager.
_PLAIN = (
    dict,
    list,
    tuple,
    str,
    int,
    float,
    bool,
    type(None),
    bytes,
    complex,
    set,
    datetime.datetime,
    datetime.date,
)
_READ_IDENTITY = frozenset(_PLAIN)
# Atomic leaves (they refer to no other object). Those of the types without a converter
# are given back unchanged by every one of asdf's walks with the same extension manager,
# reading or writing: their entries in the context's map (`(leaf, leaf)`) change no
# walk's result, and rasdf's walk does not write them (see `Walker`).
_ATOMIC = (str, int, float, bool, type(None), bytes)

# asdf's walk uses four Python frames a level of nesting (`_recurse`,
# `_handle_children`, `_handle_generator` and the container's generator); a few more at
# the deepest node for the callback. Deeper than the interpreter's limit allows, asdf
# fails with RecursionError, and so does the walk here (near where asdf would; a hard
# cap keeps Rust's own stack safe).
_FRAMES_A_LEVEL = 4
_CALLBACK_FRAMES = 8
_MOST_LEVELS = 1000

# What `install()` found (`None` when asdf's walk is not the one known here).
_known: Optional[dict] = None


def _nested_code(fn: Any, name: str) -> Optional[types.CodeType]:
    for c in getattr(getattr(fn, "__code__", None), "co_consts", ()):
        if isinstance(c, types.CodeType) and c.co_name == name:
            return c
    return None


# The functions nested in asdf's `walk_and_modify` (4.0 to 6.0): the walk this module
# does in Rust. Another set means another walk, left to asdf.
_WALK_PARTS = {
    "_handle_generator",
    "_handle_callback",
    "_handle_mapping",
    "_handle_mutable_sequence",
    "_handle_immutable_sequence",
    "_handle_children",
    "_recurse",
}
_CONTEXT_PARTS = ("__enter__", "__exit__", "__contains__", "__getitem__", "__setitem__", "is_pending", "pending")


def _inspect() -> Optional[dict]:
    """What the walk needs of this asdf, or ``None`` if its walk is not the known one."""
    walk = treeutil.walk_and_modify
    parts = {c.co_name for c in walk.__code__.co_consts if isinstance(c, types.CodeType)}
    mapping = _nested_code(walk, "_handle_mapping")
    read = _nested_code(yamlutil.tagged_tree_to_custom_tree, "_walker")
    write = _nested_code(yamlutil.custom_tree_to_tagged_tree, "_walker")
    ctx_type = getattr(treeutil, "_TreeModificationContext", None)
    if parts != _WALK_PARTS or mapping is None or read is None or write is None or ctx_type is None:
        return None
    if read.co_argcount != 1 or write.co_argcount != 1:
        return None
    if "extension_manager" not in write.co_freevars or "extension_manager" not in read.co_freevars:
        return None
    # asdf 4.5 and later make an `OrderedDict` of a lazy ordered dict; 4.0 a dict.
    odict = getattr(lazy_nodes, "AsdfOrderedDictNode", None) if "AsdfOrderedDictNode" in mapping.co_names else None
    return {
        "walk": walk,
        "read": read,
        "write": write,
        "context": ctx_type,
        "context_parts": {n: ctx_type.__dict__.get(n) for n in _CONTEXT_PARTS},
        "lazy": (
            getattr(lazy_nodes, "AsdfDictNode", None),
            getattr(lazy_nodes, "AsdfListNode", None),
            odict,
            collections.OrderedDict,
        ),
        "markers": (tagged.Tagged, treeutil.RemoveNode, treeutil.PendingValue),
    }


def _walker_for(callback: Any, postorder: Any, context: Any) -> Any:
    """A ``Walker`` for asdf's own call, or ``None`` for any other."""
    known = _known
    if (
        known is None
        or treeutil.walk_and_modify is not known["walk"]
        or type(callback) is not types.FunctionType
        or type(postorder) is not bool
        or type(context) is not known["context"]
        or type(getattr(context, "_map", None)) is not dict
        or type(getattr(context, "_pending", None)) is not set
        or any(known["context"].__dict__.get(n) is not f for n, f in known["context_parts"].items())
    ):
        return None
    code = callback.__code__
    if not ((code is known["read"] and postorder) or (code is known["write"] and not postorder)):
        return None
    convertible = _convertible(callback)
    if convertible is None:
        return None
    # Reading, every node without a `_tag` is given back; writing, every one of a type
    # without a converter.
    identity = _READ_IDENTITY if postorder else frozenset(t for t in _PLAIN if t not in convertible)
    try:
        return _rasdf.Walker(
            callback,
            postorder,
            context,
            set(identity),
            {t for t in _ATOMIC if t not in convertible},
            known["lazy"],
            known["markers"],
            types.GeneratorType,
            _finish,
            _max_depth(),
        )
    except Exception:  # noqa: BLE001 - a context not as asdf makes it: asdf's walk
        return None


# `{extension manager: the types of _PLAIN it has a converter for}`. A manager's
# converters are fixed when it is made (a type named by its path counts from the first
# look, which resolves it), so the answer holds for its life.
_convertible_of: "weakref.WeakKeyDictionary[Any, frozenset]" = weakref.WeakKeyDictionary()


def _convertible(callback: Any) -> Optional[frozenset]:
    """The builtin types of :data:`_PLAIN` that the extension manager of asdf's callback
    (a variable of its closure) has a converter for; ``None`` if it cannot be found."""
    try:
        cells = dict(zip(callback.__code__.co_freevars, callback.__closure__ or ()))
        manager = cells["extension_manager"].cell_contents
    except Exception:  # noqa: BLE001 - asdf's walk
        return None
    try:
        known = _convertible_of.get(manager)
    except TypeError:  # a manager that cannot be weakly referenced: asked every time
        known = None
    if known is None:
        try:
            known = frozenset(t for t in _PLAIN if manager.handles_type(t))
        except Exception:  # noqa: BLE001 - asdf's walk
            return None
        try:
            _convertible_of[manager] = known
        except TypeError:
            pass
    return known


def _max_depth() -> int:
    depth = 0
    frame: Any = sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back
    room = sys.getrecursionlimit() - depth - _CALLBACK_FRAMES
    return max(0, min(room // _FRAMES_A_LEVEL, _MOST_LEVELS))


def _finish(walker: Any, result: Any, items: list, is_mapping: bool) -> Any:
    """What is left of one of asdf's container generators after its ``yield``: the
    container's pending items, walked when the context drains its generators."""
    walker.fill_pending(result, items, is_mapping)
    yield result


def install() -> None:
    """Learn this asdf's walk (again: a reinstall sees what changed since)."""
    global _known
    try:
        _known = _inspect()
    except Exception:  # noqa: BLE001 - an asdf unlike the known ones: its own walks
        _known = None
