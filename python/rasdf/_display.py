"""The tree of an :class:`rasdf.AsdfFile` drawn as text, and searched: ``af.info()`` once
``af.tree`` is built (so that edits show) and ``af.search()``, as the reference library
(``asdf._display``, ``asdf.search``) draws and searches its tree.

The drawing is ``rasdf info``'s: the reference's renderer (breadth-first layout, a
container met again marked ``(recursive reference)``, ``max_rows`` keeping the
shallowest nodes, ``max_cols`` cutting lines to end in ``(truncated)``), with an array
shown on one line (``shape=(64, 64), dtype=float32, block 1 (zlib)``) and the class
names the reference gives tagged nodes (``AsdfObject``, ``Software``...).
"""

from __future__ import annotations

import builtins
import inspect
import re
from typing import Any, Callable, List, Optional, Tuple, Union

import numpy as np

DEFAULT_MAX_ROWS = 24
DEFAULT_MAX_COLS = 120
DEFAULT_SHOW_VALUES = True


class _NotSet:
    """The reference's ``NOT_SET``: no constraint."""

    _instance: Optional["_NotSet"] = None

    def __new__(cls) -> "_NotSet":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_SET"

    def __reduce__(self) -> Any:
        return (_NotSet, ())


NOT_SET: Any = _NotSet()

# The reference's class of each core tag (`tag:stsci.edu:asdf/<name>-<version>` or
# `asdf://asdf-format.org/core/tags/<name>-<version>`).
_CORE_CLASSES = {
    "core/asdf": "AsdfObject",
    "core/software": "Software",
    "core/history_entry": "HistoryEntry",
    "core/extension_metadata": "ExtensionMetadata",
    "core/ndarray": "NDArrayType",
    "core/complex": "complex",
    "core/integer": "IntegerType",
    "core/externalarray": "ExternalArrayReference",
}
_CORE_TAG = re.compile(r"^(?:tag:stsci\.edu:asdf/|asdf://asdf-format\.org/core/tags/)(core/)?([a-z_]+)-[0-9]")


def _is_array(node: Any) -> bool:
    from . import NDArray

    return isinstance(node, (NDArray, np.ndarray))


def type_name(node: Any, root: bool = False) -> str:
    """The name of the node's type as the reference shows it: the class it makes of a
    core tag, the tag of another tagged node, else the Python type's name (a file
    without a tree has the reference's empty ``AsdfObject``)."""
    from . import NDArray

    if root and type(node) is dict and not node:
        return "AsdfObject"

    if isinstance(node, NDArray):
        return "NDArrayType"
    tag = getattr(node, "tag", None) if isinstance(node, (dict, list, str)) else None
    if isinstance(tag, str):
        m = _CORE_TAG.match(tag)
        if m:
            name = _CORE_CLASSES.get(f"core/{m.group(2)}")
            if name is not None and (m.group(1) or tag.startswith("asdf://")):
                return name
        return tag
    return type(node).__name__


def children(node: Any) -> List[Tuple[Any, Any]]:
    """``(key or index, child)`` of a container (the reference's ``get_children``);
    arrays and scalars have none."""
    if hasattr(node, "__asdf_traverse__") and not _is_array(node):
        node = node.__asdf_traverse__()
    if isinstance(node, dict):
        return list(node.items())
    if isinstance(node, (list, tuple)):
        return list(enumerate(node))
    return []


def _is_container(node: Any) -> bool:
    return isinstance(node, (dict, list, tuple)) or (hasattr(node, "__asdf_traverse__") and not _is_array(node))


# The most characters of the repr of one container shown as a value (an alias bomb's
# repr would be far too long to make).
_REPR_MAX = 1 << 20


def _bounded_repr(obj: Any, out: List[str], budget: List[int], open_: set) -> None:
    """Python's repr of ``obj`` (plain dicts, lists and tuples), appended to ``out``
    until ``budget[0]`` characters are spent."""
    if budget[0] <= 0:
        return
    if _plain_container(obj):
        if id(obj) in open_:
            text = "{...}" if isinstance(obj, dict) else "[...]"
            out.append(text)
            budget[0] -= len(text)
            return
        open_.add(id(obj))
        if isinstance(obj, dict):
            opening, closing = "{", "}"
            items: Any = obj.items()
        else:
            opening, closing = ("[", "]") if isinstance(obj, list) else ("(", ",)" if len(obj) == 1 else ")")
            items = obj
        out.append(opening)
        budget[0] -= 1
        for i, item in enumerate(items):
            if budget[0] <= 0:
                break
            if i:
                out.append(", ")
                budget[0] -= 2
            if isinstance(obj, dict):
                _bounded_repr(item[0], out, budget, open_)
                out.append(": ")
                budget[0] -= 2
                _bounded_repr(item[1], out, budget, open_)
            else:
                _bounded_repr(item, out, budget, open_)
        out.append(closing)
        budget[0] -= len(closing)
        open_.discard(id(obj))
        return
    try:
        # A tagged string as the reference's str subclass shows: as the string.
        text = str.__repr__(obj) if isinstance(obj, str) else repr(obj)
    except Exception:  # noqa: BLE001 - a value whose repr fails shows as empty
        text = ""
    out.append(text)
    budget[0] -= len(text)


def _plain_container(obj: Any) -> bool:
    """A dict, list or tuple shown as Python shows the plain ones (the tagged ones too,
    as the reference's classes of them show)."""
    from . import TaggedDict, TaggedList

    return type(obj) in (dict, list, tuple, TaggedDict, TaggedList)


def value_text(node: Any) -> str:
    """Python's ``str()`` of a node shown as a value (a container's repr is cut at
    ``_REPR_MAX`` characters, ending in ``...``)."""
    if _plain_container(node):
        out: List[str] = []
        budget = [_REPR_MAX]
        _bounded_repr(node, out, budget, set())
        text = "".join(out)
        return text[:_REPR_MAX] + "..." if budget[0] < 0 or len(text) > _REPR_MAX else text
    try:
        return str(node)
    except Exception:  # noqa: BLE001 - as the reference: a failing str() shows nothing
        return ""


def array_text(node: Any) -> str:
    """An array's line: ``shape=(64, 64), dtype=float32, block 1 (zlib)`` for an array of
    the file (as ``rasdf info`` shows it), ``shape=(3,), dtype=float64, in memory`` for
    a numpy array put in the tree."""
    from . import NDArray

    if isinstance(node, NDArray):
        try:
            return node._file.array_text(node._id)
        except Exception:  # noqa: BLE001 - a closed file: from what the node knows
            pass
        try:
            shape, dtype = node.shape, node.dtype
        except Exception as e:  # noqa: BLE001
            return f"invalid: {e}"
        where = "in memory" if node._array is not None else "unread"
    else:
        shape, dtype, where = node.shape, node.dtype, "in memory"
    shape_text = f"({shape[0]},)" if len(shape) == 1 else "(" + ", ".join(str(d) for d in shape) + ")"
    return f"shape={shape_text}, dtype={dtype}, {where}"


class _Info:
    """One node of the drawing (the reference's ``NodeSchemaInfo``)."""

    __slots__ = ("identifier", "node", "parent", "depth", "recursive", "visible", "children")

    def __init__(self, identifier: Any, node: Any, parent: Optional["_Info"], depth: int, recursive: bool) -> None:
        self.identifier = identifier
        self.node = node
        self.parent = parent
        self.depth = depth
        self.recursive = recursive
        self.visible = True
        self.children: List[_Info] = []

    @property
    def visible_children(self) -> List["_Info"]:
        return [c for c in self.children if c.visible]


def _layout(root: Any, identifier: Any) -> _Info:
    """The nodes breadth first: a container (or array) met again is marked recursive and
    not entered."""
    root_info = _Info(identifier, root, None, 0, False)
    seen = set()
    level = [root_info]
    while level:
        following = []
        for info in level:
            node = info.node
            if _is_container(node) or _is_array(node):
                if id(node) in seen:
                    info.recursive = True
                    continue
                seen.add(id(node))
            for key, child in children(node):
                c = _Info(key, child, info, info.depth + 1, False)
                info.children.append(c)
                following.append(c)
        level = following
    return root_info


def _filter_tree(info: _Info, filters: List[Callable[[Any, Any], bool]]) -> bool:
    """Keeps the nodes that pass every filter, and their ancestors."""
    info.children = [c for c in info.children if _filter_tree(c, filters)]
    return len(info.children) > 0 or all(f(info.node, info.identifier) for f in filters)


def _mark_visible(root: _Info, max_rows: Any) -> None:
    if isinstance(max_rows, tuple):
        rows = (None, *max_rows)
        level = [root]
        while level:
            following = []
            for info in level:
                if info.depth + 1 < len(rows):
                    left = rows[info.depth + 1]
                    if left is None or left >= len(info.children):
                        following.extend(info.children)
                    elif left > 1:
                        for child in info.children[left - 1 :]:
                            child.visible = False
                        following.extend(info.children[: left - 1])
                    else:
                        for child in info.children:
                            child.visible = False
                else:
                    for child in info.children:
                        child.visible = False
            level = following
        return
    if max_rows is None:
        return
    if max_rows < 2:
        root.visible = False
        return
    # One row for the root, one for the "Some nodes not shown." line.
    left = max_rows - 2
    level = [root]
    while level:
        following = []
        for info in level:
            if left >= len(info.children):
                left -= len(info.children)
                following.extend(info.children)
            elif left > 1:
                for child in info.children[left - 1 :]:
                    child.visible = False
                following.extend(info.children[: left - 1])
                left = 0
            else:
                for child in info.children:
                    child.visible = False
        level = following


def _cut(line: str, max_cols: Optional[int]) -> str:
    message = " (truncated)"
    if max_cols is not None and len(line) > max_cols:
        return line[: max_cols - len(message)] + message
    return line


def _node_line(info: _Info, show_values: bool, file_root: bool) -> str:
    node = info.node
    if info.parent is not None and isinstance(info.parent.node, (list, tuple)):
        name = f"[{info.identifier}]"
    else:
        name = value_text(info.identifier)
    line = f"{name} ({type_name(node, file_root and info.depth == 0)})"
    if _is_array(node):
        line += ": " + array_text(node)
    elif show_values and not info.children:
        text = value_text(node)
        if text and len(text.splitlines()) <= 1:
            line += ": " + text
    if not info.visible_children and info.children:
        line += " ..."
    if info.recursive:
        line += " (recursive reference)"
    return line


def render(
    node: Any,
    max_rows: Any = DEFAULT_MAX_ROWS,
    max_cols: Optional[int] = DEFAULT_MAX_COLS,
    show_values: bool = DEFAULT_SHOW_VALUES,
    filters: Optional[List[Callable[[Any, Any], bool]]] = None,
    identifier: Any = "root",
    file_root: bool = False,
) -> List[str]:
    """The lines of the drawing of ``node`` (none when no node passes ``filters``), the
    last ``Some nodes not shown.`` when nodes were left out. ``file_root``: ``node`` is
    a file's tree (a plain dict there is the reference's ``AsdfObject``)."""
    root = _layout(node, identifier)
    if filters and not _filter_tree(root, filters):
        return []
    _mark_visible(root, max_rows)
    lines: List[str] = []
    elided = False
    # Depth first, without recursion (deep trees): (info, prefix of its children, last).
    stack: List[Tuple[Any, str, bool]] = [(root, "", True)]
    while stack:
        info, prefix, last = stack.pop()
        if isinstance(info, str):  # a "N not shown" line
            lines.append(info)
            continue
        if not info.visible:
            elided = True
            continue
        if info.depth == 0:
            head, child_prefix = "", ""
        else:
            head = prefix + ("└─" if last else "├─")
            child_prefix = prefix + ("  " if last else "│ ")
        lines.append(_cut(head + _node_line(info, show_values, file_root), max_cols))
        shown = info.visible_children
        n = len(info.children)
        if len(shown) < n:
            elided = True
            if shown:
                stack.append((f"{child_prefix}└─{n - len(shown)} not shown", "", True))
        for j in range(len(shown) - 1, -1, -1):
            # A child is drawn as the last only when all are shown.
            stack.append((shown[j], child_prefix, j == n - 1))
    if elided:
        lines.append("Some nodes not shown.")
    return lines


# Searching, as the reference's `AsdfSearchResult`.


def _wrap_filter(filter_: Optional[Callable[..., bool]]) -> Optional[Callable[[Any, Any], bool]]:
    if filter_ is None:
        return None
    arity = len(inspect.signature(filter_).parameters)
    if arity == 1:
        return lambda n, i: filter_(n)
    if arity == 2:
        return filter_
    raise ValueError("filter must accept 1 or 2 arguments")


def _safe_equals(a: Any, b: Any) -> bool:
    try:
        result = a == b
    except Exception:  # noqa: BLE001 - as the reference: no match
        return False
    return result if isinstance(result, bool) else False


def _qualified_type(value: Any) -> str:
    t = type(value)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def _walk_breadth_first(identifiers: list, root: Any, callback: Callable[[list, Any, Any], None]) -> None:
    current: List[Tuple[list, Any, Any]] = [(identifiers, None, root)]
    seen = set()
    while current:
        following: List[Tuple[list, Any, Any]] = []
        for ids, parent, node in current:
            if (_is_container(node) or _is_array(node)) and id(node) in seen:
                continue
            callback(ids, parent, node)
            following.extend(([*ids, i], node, c) for i, c in children(node))
            seen.add(id(node))
        current = following


def _build_path(identifiers: list) -> str:
    if not identifiers:
        return ""
    return identifiers[0] + "".join(f"[{i!r}]" for i in identifiers[1:])


class AsdfSearchResult:
    """What :meth:`rasdf.AsdfFile.search` finds, as the reference's ``AsdfSearchResult``:
    ``.paths`` (``"root['sci']['data']"``) and ``.nodes`` of every match, breadth first;
    ``.path`` and ``.node`` of the one match (``None`` for none, ``RuntimeError`` for
    several); ``.search(...)`` narrows it, ``result["key"]`` goes down a level,
    ``.replace(value)`` puts ``value`` in place of every match, ``.format(...)`` sets the
    display; ``repr()`` draws the matches in the tree (24 rows of 120 columns by
    default), or says ``No results found.``"""

    def __init__(
        self,
        identifiers: list,
        node: Any,
        filters: Optional[list] = None,
        parent_node: Any = None,
        max_rows: Any = DEFAULT_MAX_ROWS,
        max_cols: Optional[int] = DEFAULT_MAX_COLS,
        show_values: bool = DEFAULT_SHOW_VALUES,
        file_root: bool = False,
    ) -> None:
        self._identifiers = identifiers
        self._file_root = file_root
        self._node = node
        self._filters = [] if filters is None else filters
        self._parent_node = parent_node
        self._max_rows = max_rows
        self._max_cols = max_cols
        self._show_values = show_values

    def _with(self, **changes: Any) -> "AsdfSearchResult":
        args = dict(
            identifiers=self._identifiers,
            node=self._node,
            filters=self._filters,
            parent_node=self._parent_node,
            max_rows=self._max_rows,
            max_cols=self._max_cols,
            show_values=self._show_values,
            file_root=self._file_root,
        )
        args.update(changes)
        return AsdfSearchResult(**args)

    def format(self, max_rows: Any = NOT_SET, max_cols: Any = NOT_SET, show_values: Any = NOT_SET) -> "AsdfSearchResult":
        """The result drawn with other limits (``NOT_SET`` keeps one)."""
        return self._with(
            max_rows=self._max_rows if max_rows is NOT_SET else max_rows,
            max_cols=self._max_cols if max_cols is NOT_SET else max_cols,
            show_values=self._show_values if show_values is NOT_SET else show_values,
        )

    def search(
        self,
        key: Any = NOT_SET,
        type_: Any = NOT_SET,
        value: Any = NOT_SET,
        filter_: Optional[Callable[..., bool]] = None,
    ) -> "AsdfSearchResult":
        """Narrows the search, as the reference's ``search``: ``key`` a regular
        expression searched in ``str()`` of the key or list index (anything else: equal
        to it); ``type_`` a type the node is an instance of (``numpy.ndarray`` matches
        the lazy arrays too) or a regular expression searched in the node's fully
        qualified type name, the class name the reference gives it (``NDArrayType``,
        ``Software``) and its tag; ``value`` a regular expression searched in ``str()``
        of non-containers, or a value the node equals (arrays are never compared, nor
        read); ``filter_(node)`` or ``filter_(node, key)`` keeps the nodes it is true
        for."""
        if not (isinstance(type_, (str, re.Pattern, builtins.type)) or type_ is NOT_SET):
            raise TypeError("type must be NOT_SET, str, regular expression, or instance of builtins.type")
        key = re.compile(key) if isinstance(key, str) else key
        type_ = re.compile(type_) if isinstance(type_, str) else type_
        value = re.compile(value) if isinstance(value, str) else value
        wrapped = _wrap_filter(filter_)

        def _filter(node: Any, identifier: Any) -> bool:
            if isinstance(key, re.Pattern):
                if key.search(str(identifier)) is None:
                    return False
            elif key is not NOT_SET and not _safe_equals(identifier, key):
                return False
            if isinstance(type_, re.Pattern):
                names = [_qualified_type(node)]
                core = type_name(node)
                if core in _CORE_CLASSES.values() or core == "NDArrayType":
                    names.append(core)  # the reference's class of a core tag
                if not any(type_.search(n) for n in names):
                    return False
            elif isinstance(type_, builtins.type):
                from . import NDArray

                lazy = isinstance(node, NDArray) and issubclass(np.ndarray, type_)
                if not (isinstance(node, type_) or lazy):
                    return False
            if value is not NOT_SET:
                if _is_array(node):
                    return False
                if isinstance(value, re.Pattern):
                    if _is_container(node):
                        return False
                    if value.search(str(node)) is None:
                        return False
                elif not _safe_equals(node, value):
                    return False
            if wrapped is not None and not wrapped(node, identifier):
                return False
            return True

        return self._with(filters=[*self._filters, _filter])

    def _matches(self) -> List[Tuple[list, Any, Any]]:
        found: List[Tuple[list, Any, Any]] = []

        def callback(ids: list, parent: Any, node: Any) -> None:
            if all(f(node, ids[-1]) for f in self._filters):
                found.append((ids, parent, node))

        _walk_breadth_first(self._identifiers, self._node, callback)
        return found

    def replace(self, value: Any) -> None:
        """Puts ``value`` in place of every node found."""
        for ids, parent, _ in self._matches():
            parent[ids[-1]] = value

    @property
    def nodes(self) -> List[Any]:
        """Every node found, breadth first."""
        return [node for _, _, node in self._matches()]

    @property
    def paths(self) -> List[str]:
        """The path of every node found (``"root['sci']['data']"``), breadth first."""
        return [_build_path(ids) for ids, _, _ in self._matches()]

    @property
    def node(self) -> Any:
        """The one node found (``None`` for none; ``RuntimeError`` for several)."""
        nodes = self.nodes
        if not nodes:
            return None
        if len(nodes) == 1:
            return nodes[0]
        raise RuntimeError("More than one result")

    @property
    def path(self) -> Optional[str]:
        """The path of the one node found (``None`` for none; ``RuntimeError`` for
        several)."""
        paths = self.paths
        if not paths:
            return None
        if len(paths) == 1:
            return paths[0]
        raise RuntimeError("More than one result")

    def __getitem__(self, key: Any) -> "AsdfSearchResult":
        if isinstance(self._node, (dict, list, tuple)) or (
            hasattr(self._node, "__asdf_traverse__") and not _is_array(self._node)
        ):
            node = self._node.__asdf_traverse__() if hasattr(self._node, "__asdf_traverse__") else self._node
            child = node[key]
        else:
            raise TypeError("This node cannot be indexed")
        return self._with(
            identifiers=[*self._identifiers, key], node=child, parent_node=self._node, file_root=False
        )

    def __repr__(self) -> str:
        lines = render(
            self._node,
            max_rows=self._max_rows,
            max_cols=self._max_cols,
            show_values=self._show_values,
            filters=self._filters,
            identifier=self._identifiers[-1],
            file_root=self._file_root,
        )
        if not lines:
            return "No results found."
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


SearchKey = Union[str, Any]
