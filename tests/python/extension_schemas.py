"""Helpers of the extension-schema cross-test (cli/tests/extension_schemas.rs), run in the
venv with asdf, asdf-astropy, gwcs and roman_datamodels:

    python extension_schemas.py dirs            # JSON list: the resources folders of the
                                                # schema packages installed
    python extension_schemas.py mutate OUT      # writes mutated copies of the astro
                                                # fixtures into OUT; JSON list of
                                                # [name, path, failing tree path or null]
    python extension_schemas.py verdicts FILE...  # JSON {file: [verdict, path, message]}

A verdict is the reference's, as `asdftool validate` gives it (asdf.open with
`validate_on_read`, so the tree as read is validated against the schemas of every tag
the installed extensions define): "valid", "invalid" (with the error's path, relative to
the node the failing schema was applied to, and message) or "error" (the file does not
open, for another reason).
"""

import importlib.resources
import json
import os
import sys
import warnings

# The packages whose `resources` folder holds manifests and schemas.
PACKAGES = [
    "rad",
    "asdf_transform_schemas",
    "asdf_wcs_schemas",
    "asdf_coordinates_schemas",
    "asdf_astropy",
    "asdf_standard",
]

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "testdata", "astro")

# (name, fixture, text, replacement, nth occurrence (1-based), the tree path that fails).
# Files with blocks get replacements of the same length (their blocks stay in place).
MUTATIONS = [
    ("flat_reftype_int", "roman_FlatRefModel", "reftype: FLAT", "reftype: 1234", 1, "/roman/meta/reftype"),
    ("flat_missing_dq", "roman_FlatRefModel", "\n  dq: !core/ndarray", "\n  dx: !core/ndarray", 1, "/roman"),
    ("flat_datatype", "roman_FlatRefModel", "datatype: float32", "datatype: float64", 1, "/roman/data"),
    ("flat_dq_narrower", "roman_FlatRefModel", "datatype: uint32", "datatype: uint16", 1, "/roman/dq"),
    ("flat_ndim", "roman_FlatRefModel", "shape: [8, 8]", "shape: [64]", 1, "/roman/data"),
    ("flat_time_tag_version", "roman_FlatRefModel", "!time/time-1.4.0", "!time/time-2.4.0", 1, "/roman/meta/useafter"),
    ("flat_ndarray_tag_version", "roman_FlatRefModel", "data: !core/ndarray-1.1.0", "data: !core/ndarray-2.1.0", 1,
     "/roman/data"),
    ("flat_pedigree_int", "roman_FlatRefModel", "pedigree: '?'", "pedigree: 7", 1, "/roman/meta/pedigree"),
    ("level2_exposure_enum", "roman_level2", "type: WFI_IMAGE", "type: WFI_IMAGX", 1, None),
    ("level2_frame_tag_version", "roman_level2", "gwcs/frame2d-1.2.0", "gwcs/frame2d-9.2.0", 1, None),
    ("level2_exposure_time_text", "roman_level2", "exposure_time: -999999.0", "exposure_time: soon", 1, None),
    ("level2_exposure_time_int", "roman_level2", "exposure_time: -999999.0", "exposure_time: 5", 1, None),
    ("ramp_datatype", "roman_RampModel", "datatype: uint16", "datatype: int16", 1, None),
    ("catalog_column_datatype", "roman_ImageSourceCatalogModel", "datatype: int32", "datatype: int64", 1, None),
    ("catalog_column_renamed", "roman_ImageSourceCatalogModel", "name: bbox_xmax", "name: bbox_xmaz", 1, None),
    ("catalog_column_tag", "roman_ImageSourceCatalogModel", "!table/column-1.2.0", "!table/column-1.0.0", 2, None),
    ("models_offset_text", "models", "offset: 3.0", "offset: 'x'", 1, "/fixed/offset"),
    ("models_offset_int", "models", "offset: 3.0", "offset: 300", 1, None),
    ("models_mapping_text", "models", "mapping: [0, 1, 0]", "mapping: [0, 1, x]", 1, None),
    ("models_offset_missing", "models", "name: sh\n  offset: 1.0", "name: sh\n  offsex: 1.0", 1, "/named"),
    ("models_shift_tag_version", "models", "!transform/shift-1.4.0", "!transform/shift-1.1.0", 1, None),
    ("models_coefficients_datatype", "models", "datatype: float64", "datatype: float32", 1, None),
    ("gwcs_frame_name_int", "gwcs_imaging", "name: detector", "name: 12345678", 1, None),
    ("gwcs_axes_order_text", "gwcs_imaging", "axes_order: [0, 1]", "axes_order: [0, x]", 1, None),
    ("gwcs_step_tag_version", "gwcs_imaging", "gwcs/step-1.3.0", "gwcs/step-0.3.0", 1, None),
]


def dirs():
    out = []
    for name in PACKAGES:
        try:
            root = importlib.resources.files(name) / "resources"
        except ModuleNotFoundError:
            continue
        if root.is_dir():
            out.append(str(root))
    print(json.dumps(out))


def write_mutations(out_dir):
    """Writes the mutated copies into `out_dir`; returns [name, path, failing path]."""
    os.makedirs(out_dir, exist_ok=True)
    made = []
    for name, fixture, old, new, nth, path in MUTATIONS:
        with open(os.path.join(FIXTURES, fixture + ".asdf"), "rb") as f:
            data = f.read()
        old_b, new_b = old.encode(), new.encode()
        at = -1
        for _ in range(nth):
            at = data.index(old_b, at + 1)
        if b"\xd3BLK" in data and len(old_b) != len(new_b):
            raise SystemExit(f"{name}: a file with blocks needs a replacement of the same length")
        out = os.path.join(out_dir, name + ".asdf")
        with open(out, "wb") as f:
            f.write(data[:at] + new_b + data[at + len(old_b) :])
        made.append([name, out, path])
    return made


def mutate(out_dir):
    print(json.dumps(write_mutations(out_dir)))


def verdict(path):
    import asdf
    from asdf.config import config_context

    try:
        with config_context() as cfg:
            cfg.validate_on_read = True
            with asdf.open(path, lazy_load=True):
                return ["valid", None, None]
    except asdf.exceptions.ValidationError as e:
        return ["invalid", "".join(f"/{p}" for p in e.path), e.message[:300]]
    except Exception as e:  # noqa: BLE001 - any other failure to open
        return ["error", None, f"{type(e).__name__}: {e}"]


def verdicts(paths):
    warnings.simplefilter("ignore")
    print(json.dumps({p: verdict(p) for p in paths}))


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "dirs":
        dirs()
    elif command == "mutate":
        mutate(args[0])
    elif command == "verdicts":
        verdicts(args)
    else:
        raise SystemExit(f"unknown command {command}")
