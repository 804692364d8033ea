"""asdf's validation of a tagged tree through rasdf (part of :mod:`rasdf.asdf_hook`).

``asdf.yamlutil.dump_tree`` validates the tagged tree before a write with
``schema.validate(tree, ctx)``, and ``AsdfFile._validate`` a tree read (asdf's
``validate_on_read``, on by default before asdf 5) or ``AsdfFile.validate()``'s with
``schema.validate(tree, ctx, reading=...)`` (the same calls from asdf 4.0 to 6.0): most
of the time of a ``write_to`` once rasdf writes the YAML and walks the tree. While the
hook is installed, the name ``schema`` in ``asdf.yamlutil`` and in ``asdf._asdf`` is
:data:`proxy`: asdf's ``schema`` module in every other respect, whose ``validate`` has rasdf's validator judge the tree first
(``rasdf._rasdf.hook_validate``, with asdf's own schemas, taken from its resource
manager as they are needed, and the tags its extension manager defines). Only a "valid"
that rasdf is sure of is taken: the annotations asdf's validator would store on the
nodes (``property_order``, ``flow_style``, ``style``, which asdf's YAML writer follows)
are stored on the same objects, and asdf's own validation is skipped. Anything else
runs asdf's own, which raises or warns as it always does: an invalid tree, a value
asdf's checks treat otherwise than YAML's (bytes, dates, tuples, numpy floats other
than float64), an integer or a mapping key asdf refuses, a ``$ref`` mapping, a schema
not among asdf's resources, a validator an extension adds (other than asdf's own
``ndim``, ``max_ndim`` and ``datatype``), a custom schema of the file, or any other
call than ``dump_tree``'s.
"""

from __future__ import annotations

import threading
import types
from typing import Any, Optional

from asdf import schema as _schema

from . import _rasdf

# Counts of the validations rasdf judged and those it left to asdf (for the tests).
stats = {"rasdf": 0, "asdf": 0}


class _Proxy(types.ModuleType):
    """The module ``asdf.schema`` with ``validate`` through rasdf."""

    def __getattr__(self, name: str) -> Any:
        return getattr(_schema, name)

    @staticmethod
    def validate(instance: Any, ctx: Any = None, schema: Any = None, validators: Any = None, reading: bool = False, *args: Any, **kwargs: Any) -> None:
        if ctx is not None and schema is None and validators is None and type(reading) is bool and not args and not kwargs:
            try:
                judged = _judge(instance, ctx)
            except Exception:  # noqa: BLE001 - asdf's own validation judges
                judged = False
            if judged:
                stats["rasdf"] += 1
                return None
        stats["asdf"] += 1
        return _schema.validate(instance, ctx, schema, validators, reading, *args, **kwargs)


proxy = _Proxy("asdf.schema")

# asdf's resources read so far, for the resource manager they came from:
# [manager, {uri: text}, _rasdf.Schemas]. Read as validations need them.
_resources: list = []
_lock = threading.Lock()

# The keywords of asdf's own validators, and their classes.
_OWN_VALIDATORS = {"ndim": "NdimValidator", "max_ndim": "MaxNdimValidator", "datatype": "DatatypeValidator"}
_NDARRAY_TAGS = ["tag:stsci.edu:asdf/core/ndarray-*"]
_ASDF_KEYWORDS = {
    "tag": "validate_tag",
    "propertyOrder": "validate_propertyOrder",
    "flowStyle": "validate_flowStyle",
    "style": "validate_style",
    "type": "validate_type",
    "enum": "validate_enum",
}


def _validators_are_asdfs(ctx: Any) -> bool:
    """Whether the validation would run with asdf's own keywords alone: JSON Schema draft
    4's, asdf's six, and the ``ndim``, ``max_ndim`` and ``datatype`` of asdf's core."""
    from asdf._jsonschema import validators as mvalidators

    table = _schema.YAML_VALIDATORS
    draft4 = mvalidators.Draft4Validator.VALIDATORS
    if set(table) != set(draft4) | set(_ASDF_KEYWORDS):
        return False
    for key, f in table.items():
        own = _ASDF_KEYWORDS.get(key)
        if (own is not None and f is not getattr(_schema, own)) or (own is None and f is not draft4[key]):
            return False
    # A list of them up to asdf 5, sets by keyword from asdf 6.
    found = ctx.extension_manager.validator_manager._validators
    every = [v for s in found.values() for v in s] if isinstance(found, dict) else list(found)
    for v in every:
        cls = type(v)
        name = _OWN_VALIDATORS.get(v.schema_property)
        if name is None or cls.__name__ != name or not cls.__module__.startswith("asdf._core._validators"):
            return False
        # asdf before 5 applies them to every node (`**`): rasdf is then unsure of any
        # node but an ndarray they meet.
        if list(v.tags) not in (_NDARRAY_TAGS, ["**"]):
            return False
    return True


def _schemas_with(missing: Optional[list]) -> Optional["_rasdf.Schemas"]:
    """asdf's resources read so far (and those of ``missing`` now), as rasdf's
    ``Schemas``; ``None`` when none of ``missing`` is one of asdf's resources."""
    import asdf

    manager = asdf.get_config().resource_manager
    with _lock:
        if not _resources or _resources[0] is not manager:
            _resources[:] = [manager, {}, _rasdf.Schemas([], [], [], True)]
        texts = _resources[1]
        if missing:
            added = False
            for uri in missing:
                if uri in texts or uri not in manager:
                    continue
                content = manager[uri]
                if isinstance(content, bytes):
                    content = content.decode("utf-8")
                texts[uri] = content
                added = True
            if not added:
                return None
            _resources[2] = _rasdf.Schemas([], list(texts.items()), [], True)
        return _resources[2]


def _judge(instance: Any, ctx: Any) -> bool:
    """Whether rasdf found ``instance`` valid as asdf's validator would (and stored the
    annotations it would have)."""
    from . import _asdf_yaml

    if getattr(ctx, "_custom_schema", True) is not None or not _validators_are_asdfs(ctx):
        return False
    types_ = _asdf_yaml._type_codes()
    if types_ is None:
        return False
    manager = ctx.extension_manager

    def tag_schemas(tag: str) -> Optional[list]:
        if not manager.handles_tag_definition(tag):
            return None
        return list(manager.get_tag_definition(tag).schema_uris)

    from asdf import constants

    limits = (constants.MIN_NUMBER, constants.MAX_NUMBER)
    schemas = _schemas_with(None)
    # Each round reads the schemas the last one found missing (a `$ref` chain a round).
    for _ in range(16):
        verdict, missing = _rasdf.hook_validate(instance, tag_schemas, schemas, types_, limits)
        if verdict != "missing":
            return verdict == "valid"
        schemas = _schemas_with(missing)
        if schemas is None:
            return False
    return False
