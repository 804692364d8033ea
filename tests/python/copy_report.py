"""What rasdf keeps of real files, judged by the reference library with the extensions
installed (run it in the astro venv: asdf-astropy, gwcs, roman_datamodels,
stdatamodels), over the repository's real-file fixtures the reference reads:

1. copies: ``rasdf.write(out, rasdf.open(F))`` read back by ``asdf.open`` to the same
   objects as ``asdf.open(F)`` (a deep comparison of the converted trees: arrays by
   value, other objects by type and state) with no warning the original did not give;
2. trees: ``rasdf.open(F).tree`` equal to asdf's raw tree
   (``asdf.open(F, _force_raw_types=True)``, schema defaults filled);
3. verdicts: ``rasdf.validate(F)`` valid exactly when asdf (``validate_on_read``) is.

Usage: python copy_report.py [-v] [FILE...]     (no files: every real fixture)

The functions are used by python/tests/test_copies.py.
"""

from __future__ import annotations

import datetime
import math
import os
import sys
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, List, Optional, Tuple

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
TESTDATA = ROOT / "testdata"

# Folders of files other programs wrote (the hand-made YAML fixtures are left out).
REAL_FOLDERS = ("reference_files", "oldasdf", "oldastro", "astro", "pyasdf")


def real_files() -> List[Path]:
    """Every real-file fixture (``.asdf``; the block files of exploded files are read
    through their main file and are not files of their own here)."""
    out = [TESTDATA / "example.asdf"]
    for folder in REAL_FOLDERS:
        for p in sorted((TESTDATA / folder).rglob("*.asdf")):
            stem = p.stem
            if len(stem) > 4 and stem[-4:].isdigit() and p.with_name(stem[:-4] + ".asdf").exists():
                continue
            out.append(p)
    return out


def _normalise(message: str, paths: List[str]) -> str:
    for p in paths:
        message = message.replace(p, "<file>")
    return message


def asdf_read(path: Any, **kwargs: Any) -> Tuple[Any, List[Tuple[str, str]]]:
    """``asdf.open(path)``'s tree, every array read, and the warnings it gave as
    ``(category, message)``, the file's path in them replaced."""
    import asdf

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with asdf.open(path, lazy_load=False, memmap=False, **kwargs) as af:
            tree = dict(af.tree)
    told = sorted({(w.category.__name__, _normalise(str(w.message), [str(path)])) for w in caught})
    return tree, told


class _State(dict):
    """An object's state, from ``__reduce_ex__``."""


def object_differences(a: Any, b: Any, limit: int = 5) -> List[str]:
    """Where two trees of converted objects differ: types, mapping keys, sequences,
    scalars (NaN equal to NaN), arrays by value (dtype without byte order, shape,
    elements, masks), other objects by ``==`` when it gives ``True``, else by their
    pickled state (``__reduce_ex__``)."""
    out: List[str] = []
    seen = set()
    todo = [(a, b, "")]

    def arrays(x: np.ndarray, y: np.ndarray, path: str) -> None:
        if x.shape != y.shape or x.dtype.newbyteorder("=") != y.dtype.newbyteorder("="):
            out.append(f"{path}: array {x.dtype}{x.shape} != {y.dtype}{y.shape}")
            return
        mx, my = np.ma.getmaskarray(x), np.ma.getmaskarray(y)
        if isinstance(x, np.ma.MaskedArray) != isinstance(y, np.ma.MaskedArray) or not np.array_equal(mx, my):
            out.append(f"{path}: masks differ")
            return
        dx, dy = np.asarray(np.ma.getdata(x)), np.asarray(np.ma.getdata(y))
        try:
            same = np.array_equal(dx, dy, equal_nan=dx.dtype.kind in "fc")
        except TypeError:
            same = np.array_equal(dx, dy)
        if not same:
            if dx.dtype.names:
                same = dx.tobytes() == dy.astype(dx.dtype).tobytes()
            if not same:
                out.append(f"{path}: array values differ")

    while todo and len(out) < limit:
        x, y, path = todo.pop()
        if type(x) is not type(y):
            out.append(f"{path}: {type(x).__name__} {x!r:.60} != {type(y).__name__} {y!r:.60}")
            continue
        if x is None or isinstance(x, (bool, int, str, bytes, datetime.date)):
            if x != y:
                out.append(f"{path}: {x!r:.60} != {y!r:.60}")
            continue
        if isinstance(x, float):
            if not (x == y or math.isnan(x) and math.isnan(y)):
                out.append(f"{path}: {x!r} != {y!r}")
            continue
        if isinstance(x, complex):
            todo.append((x.real, y.real, path + ".real"))
            todo.append((x.imag, y.imag, path + ".imag"))
            continue
        key = (id(x), id(y))
        if key in seen:
            continue
        seen.add(key)
        if isinstance(x, np.ndarray):
            arrays(x, y, path)
            if type(x) in (np.ndarray, np.ma.MaskedArray, np.memmap):
                continue
            # A subclass (Quantity, Column): its state too (unit, name...).
        elif isinstance(x, np.generic):
            arrays(np.asarray(x), np.asarray(y), path)
            continue
        if isinstance(x, _State):
            # An object's state: the attributes both have (caches filled by one
            # comparison or another, such as a frame's `representation_info`, aside).
            for k in x:
                if k in y:
                    todo.append((x[k], y[k], f"{path}.{k}"))
            continue
        if isinstance(x, Mapping) and not isinstance(x, np.ndarray):
            kx, ky = list(x.keys()), list(y.keys())
            if sorted(map(repr, kx)) != sorted(map(repr, ky)):
                out.append(f"{path}: keys {sorted(map(str, kx))[:8]} != {sorted(map(str, ky))[:8]}")
                continue
            for k in kx:
                todo.append((x[k], y[k], f"{path}/{k}"))
            continue
        if isinstance(x, (list, tuple)):
            if len(x) != len(y):
                out.append(f"{path}: length {len(x)} != {len(y)}")
                continue
            for i, (p, q) in enumerate(zip(x, y)):
                todo.append((p, q, f"{path}/{i}"))
            continue
        if isinstance(x, (set, frozenset)):
            if x != y:
                out.append(f"{path}: {x!r:.60} != {y!r:.60}")
            continue
        if not isinstance(x, np.ndarray):
            try:
                eq = x == y
                if eq is True or isinstance(eq, np.bool_) and bool(eq):
                    continue
            except Exception:  # noqa: BLE001 - no usable ==: the state decides
                pass
        if callable(x) and hasattr(x, "__qualname__") and not hasattr(x, "__dict__"):
            if x is not y:
                out.append(f"{path}: {x!r:.60} is not {y!r:.60}")
            continue
        try:
            rx, ry = x.__reduce_ex__(4), y.__reduce_ex__(4)
        except Exception as e:  # noqa: BLE001 - an object that does not pickle
            out.append(f"{path}: {type(x).__name__} cannot be compared ({e})")
            continue
        if isinstance(rx, str) or isinstance(ry, str):
            if rx != ry:
                out.append(f"{path}: {rx} != {ry}")
            continue
        rx, ry = list(rx[1:]), list(ry[1:])
        if hasattr(x, "param_names") and len(rx) > 1 and isinstance(rx[1], dict) and isinstance(ry[1], dict):
            # An astropy model: its parameters compared, not the cache `_parameters`
            # (memory numpy leaves uninitialised until the values are asked for).
            rx[1] = {k: v for k, v in rx[1].items() if k != "_parameters"}
            ry[1] = {k: v for k, v in ry[1].items() if k != "_parameters"}
            todo.append((np.asarray(x.parameters), np.asarray(y.parameters), f"{path}.parameters"))
        # Iterators of list and dict items (positions 3 and 4) as lists.
        for r in (rx, ry):
            for i in (2, 3):
                if i < len(r) and r[i] is not None and not isinstance(r[i], (list, dict, tuple)):
                    r[i] = list(r[i])
        for r in (rx, ry):
            if len(r) > 1 and type(r[1]) is dict:
                r[1] = _State(r[1])
        todo.append((rx, ry, f"{path}<{type(x).__name__}>"))
    return out


def copy_differences(path: Path, workdir: str, *, write=None) -> Optional[List[str]]:
    """Why the copy ``rasdf.write(out, rasdf.open(path))`` does not read back in asdf to
    what ``path`` reads to (new warnings included); ``None`` when the reference does not
    read ``path`` itself."""
    import rasdf

    try:
        theirs, told = asdf_read(path)
    except Exception:  # noqa: BLE001 - not a file the reference reads
        return None
    out = os.path.join(workdir, path.stem + "_copy.asdf")
    try:
        with rasdf.open(path) as af:
            (write or rasdf.write)(out, af)
    except Exception as e:  # noqa: BLE001 - a refusal is a difference to report
        return [f"rasdf.write refused: {type(e).__name__}: {e}"]
    try:
        ours, told_copy = asdf_read(out)
    except Exception as e:  # noqa: BLE001
        return [f"asdf cannot read the copy: {type(e).__name__}: {e}"]
    told_copy = [(c, m.replace(out, "<file>")) for c, m in told_copy]
    diffs = []
    theirs.pop("asdf_library", None)
    ours.pop("asdf_library", None)
    h1, h2 = theirs.pop("history", None), ours.pop("history", None)
    entries = lambda h: h.get("entries", []) if isinstance(h, Mapping) else (h or [])  # noqa: E731
    diffs += [f"history{d}" for d in object_differences(entries(h1), entries(h2))]
    diffs += object_differences(theirs, ours)
    new = sorted(set(told_copy) - set(told))
    diffs += [f"new warning {c}: {m[:200]}" for c, m in new]
    return diffs


def raw_tree_differences(path: Path) -> Optional[List[str]]:
    """Where ``rasdf.open(path).tree`` differs from asdf's raw tree (``None``: the
    reference does not read the file). Arrays are compared by tag only (their values
    are test_reference_trees.py's)."""
    import asdf
    import rasdf

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with asdf.open(path, _force_raw_types=True, lazy_load=True) as af:
                theirs = af.tree
                with rasdf.open(path) as ours_file:
                    return raw_differences(ours_file.tree, theirs)
    except (rasdf.AsdfError, OSError) as e:
        return [f"rasdf: {e}"]
    except Exception:  # noqa: BLE001 - not a file the reference reads
        return None


def raw_differences(ours: Any, theirs: Any, limit: int = 5) -> List[str]:
    import rasdf

    out: List[str] = []
    seen = set()
    todo = [(ours, theirs, "")]
    while todo and len(out) < limit:
        x, y, path = todo.pop()
        ty = getattr(y, "_tag", None)
        if isinstance(x, rasdf.NDArray):
            if ty != x.tag:
                out.append(f"{path}: array tag {x.tag} != {ty}")
            continue
        # rasdf's own forms: core/complex a complex, core/integer an int, no tree {}.
        if isinstance(x, complex) and str(ty).startswith("tag:stsci.edu:asdf/core/complex-"):
            text = str(y).strip()
            text = text[:-1] + "j" if text[-1:] in ("i", "I") else text
            try:
                z = complex(text)
            except ValueError:
                z = None
            if z is None or repr(x) != repr(z):
                out.append(f"{path}: {x!r} != {y!r}")
            continue
        if type(x) is int and str(ty).startswith("tag:stsci.edu:asdf/core/integer-"):
            # (Its words may be in a block: the value written beside them is compared.)
            if "string" in y and str(x) != str(y["string"]):
                out.append(f"{path}: {x!r} != {y!r:.60}")
            continue
        if path == "" and x == {} and len(y) == 0:
            continue
        tx = getattr(x, "tag", None) if isinstance(x, (rasdf.TaggedDict, rasdf.TaggedList, rasdf.TaggedString)) else None
        if tx != ty and not (tx is None and ty is None):
            out.append(f"{path}: tag {tx} != {ty}")
            continue
        if isinstance(x, dict) or isinstance(y, Mapping):
            if not (isinstance(x, dict) and isinstance(y, Mapping)):
                out.append(f"{path}: {type(x).__name__} != {type(y).__name__}")
                continue
            if (id(x), id(y)) in seen:
                continue
            seen.add((id(x), id(y)))
            kx, ky = list(x.keys()), list(y.keys())
            if kx != ky:
                only_x = [str(k) for k in kx if k not in y]
                only_y = [str(k) for k in ky if k not in x]
                out.append(f"{path}: keys only in rasdf {only_x}, only in asdf {only_y}" if only_x or only_y
                           else f"{path}: key order {kx} != {ky}")
                continue
            for k in kx:
                todo.append((x[k], y[k], f"{path}/{k}"))
            continue
        if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
            if len(x) != len(y):
                out.append(f"{path}: length {len(x)} != {len(y)}")
                continue
            for i, (p, q) in enumerate(zip(x, y)):
                todo.append((p, q, f"{path}/{i}"))
            continue
        if isinstance(y, float) and isinstance(x, float):
            if not (x == y or math.isnan(x) and math.isnan(y)):
                out.append(f"{path}: {x!r} != {y!r}")
            continue
        try:
            same = x == y
        except Exception:  # noqa: BLE001
            same = False
        if same is not True:
            out.append(f"{path}: {x!r:.60} != {y!r:.60}")
    return out


def asdf_verdict(path: Path) -> Optional[bool]:
    """Whether asdf, validating on read, finds the file valid (``None``: it does not read
    it for another reason)."""
    import asdf
    from asdf.config import config_context

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with config_context() as cfg:
                cfg.validate_on_read = True
                with asdf.open(path, lazy_load=True):
                    return True
    except asdf.exceptions.ValidationError:
        return False
    except Exception:  # noqa: BLE001
        return None


def rasdf_verdict(path: Path) -> bool:
    import rasdf

    try:
        rasdf.validate(path)
        return True
    except rasdf.AsdfError:
        return False


def main(args: List[str]) -> int:
    verbose = "-v" in args
    files = [Path(a) for a in args if a != "-v"] or real_files()
    copies = trees = verdicts = read = 0
    with tempfile.TemporaryDirectory() as work:
        for f in files:
            name = f.relative_to(TESTDATA) if f.is_relative_to(TESTDATA) else f
            c = copy_differences(f, work)
            if c is None:
                if verbose:
                    print(f"{name}: the reference does not read it")
                continue
            read += 1
            t = raw_tree_differences(f) or []
            ours, theirs = rasdf_verdict(f), asdf_verdict(f)
            copies += not c
            trees += not t
            verdicts += ours == theirs
            if verbose and (c or t or ours != theirs):
                print(f"{name}:")
                for d in c:
                    print(f"  copy: {d}")
                for d in t:
                    print(f"  tree: {d}")
                if ours != theirs:
                    print(f"  validate: rasdf {ours}, asdf {theirs}")
    print(f"{read} files the reference reads: {copies} copies read back the same, {trees} trees equal, "
          f"{verdicts} validate verdicts equal")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
