"""`rasdf.validate(path, schemas=...)`: the standard's schemas and extensions' (from
folders, or from the installed asdf's configuration), with the verdicts of the reference
library. Under the venv with roman_datamodels, gwcs and asdf-astropy
(`RASDF_VALIDATE_ASTRO=1` in scripts/test.sh) the astro fixtures and mutated copies of them
are judged as asdf judges them with those packages installed."""

import os
import warnings

import pytest
from conftest import TESTDATA, require

import rasdf

MANIFEST = """%YAML 1.1
---
id: asdf://example.org/things/manifests/things-1.0.0
extension_uri: asdf://example.org/things/extensions/things-1.0.0
asdf_standard_requirement:
  gte: 1.1.0
tags:
- tag_uri: asdf://example.org/things/tags/thing-1.0.0
  schema_uri: asdf://example.org/things/schemas/thing-1.0.0
...
"""

SCHEMA = """%YAML 1.1
---
$schema: http://stsci.edu/schemas/yaml-schema/draft-01
id: asdf://example.org/things/schemas/thing-1.0.0
type: object
properties:
  size:
    $ref: common-1.0.0#/definitions/size
  image:
    tag: tag:stsci.edu:asdf/core/ndarray-1.*
    datatype: float32
    exact_datatype: true
    ndim: 2
required: [size]
...
"""

COMMON = """%YAML 1.1
---
id: asdf://example.org/things/schemas/common-1.0.0
definitions:
  size:
    type: integer
    minimum: 0
...
"""


def thing_file(path, size="3", datatype="float32", shape="[1, 1]"):
    path.write_text(
        "#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n"
        f"thing: !<asdf://example.org/things/tags/thing-1.0.0>\n  size: {size}\n"
        f"  image: !core/ndarray-1.1.0 {{data: [[1.5]], datatype: {datatype}, shape: {shape}}}\n...\n"
    )
    return path


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "resources"
    (d / "manifests").mkdir(parents=True)
    (d / "schemas").mkdir()
    (d / "manifests" / "things-1.0.0.yaml").write_text(MANIFEST)
    (d / "schemas" / "thing-1.0.0.yaml").write_text(SCHEMA)
    (d / "schemas" / "common-1.0.0.yaml").write_text(COMMON)
    return d


def test_valid_file_returns_none():
    assert rasdf.validate(TESTDATA / "example.asdf") is None
    assert rasdf.validate(TESTDATA / "example.asdf", schemas=False) is None


def test_schemas_from_a_folder(folder, tmp_path):
    good = thing_file(tmp_path / "good.asdf")
    assert rasdf.validate(good, schemas=folder) is None
    assert rasdf.validate(good, schemas=[str(folder)]) is None
    # Without the folder the thing's tag has no schema: not checked.
    bad = thing_file(tmp_path / "bad.asdf", size="-1")
    rasdf.validate(bad, schemas=False)
    with pytest.raises(rasdf.AsdfError, match="minimum") as e:
        rasdf.validate(bad, schemas=folder)
    assert e.value.path == "/thing/size"
    with rasdf.open(bad) as af:
        af.validate(schemas=False)
        with pytest.raises(rasdf.AsdfError, match="minimum"):
            af.validate(schemas=folder)
    for kwargs, words in [
        ({"size": "x"}, "not of type"),
        ({"datatype": "float64"}, "Expected datatype"),
        ({"shape": "[1]"}, "Wrong number of dimensions"),
    ]:
        with pytest.raises(rasdf.AsdfError, match=words):
            rasdf.validate(thing_file(tmp_path / "x.asdf", **kwargs), schemas=folder)


def test_a_broken_schema_folder_names_the_file(folder, tmp_path):
    good = thing_file(tmp_path / "good.asdf")
    # A schema is parsed when first needed: one that does not parse fails the files
    # whose tags need it, naming its file.
    (folder / "schemas" / "thing-1.0.0.yaml").write_text(SCHEMA.replace("type: object", "type: [object"))
    with pytest.raises(rasdf.AsdfError, match="thing-1.0.0.yaml"):
        rasdf.validate(good, schemas=folder)
    assert rasdf.validate(TESTDATA / "example.asdf", schemas=folder) is None
    # A manifest is read at once.
    (folder / "manifests" / "broken.yaml").write_text("id: m\nextension_uri: x\ntags: [\n")
    with pytest.raises(rasdf.AsdfError, match="broken.yaml"):
        rasdf.validate(good, schemas=folder)
    with pytest.raises(FileNotFoundError):
        rasdf.validate(good, schemas=tmp_path / "nowhere")


def test_verdicts_are_asdfs_with_what_it_has_installed(tmp_path):
    asdf = require("asdf")
    from asdf.config import config_context

    files = [TESTDATA / "example.asdf", TESTDATA / "astro" / "tables.asdf"]
    bad = tmp_path / "bad_software.asdf"
    bad.write_text(
        "#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n"
        "a: !core/software-1.0.0 {name: 5, version: x}\n...\n"
    )
    files.append(bad)
    if _astro():
        files.extend(_mutated(tmp_path))
        files.extend(sorted((TESTDATA / "astro").glob("roman_*.asdf")))
        files.extend(sorted((TESTDATA / "astro").glob("gwcs_*.asdf")))
    invalid = 0
    for path in files:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with config_context() as cfg:
                    cfg.validate_on_read = True
                    with asdf.open(path, lazy_load=True):
                        theirs = True
        except asdf.exceptions.ValidationError:
            theirs = False
        try:
            rasdf.validate(path)
            ours = True
        except rasdf.AsdfError:
            ours = False
        # The open file's own validate(), and open(validate=True): the same verdict.
        with rasdf.open(path) as af:
            try:
                af.validate()
                own = True
            except rasdf.AsdfError:
                own = False
        try:
            rasdf.open(path, validate=True).close()
            on_open = True
        except rasdf.AsdfError:
            on_open = False
        invalid += not theirs
        assert ours == theirs == own == on_open, path
    assert invalid >= (10 if _astro() else 1)


def _astro():
    return bool(os.environ.get("RASDF_VALIDATE_ASTRO"))


def _mutated(tmp_path):
    require("roman_datamodels")
    import extension_schemas

    return [path for _, path, _ in extension_schemas.write_mutations(str(tmp_path / "mutated"))]


def _within_30s(call):
    """``call()`` on a thread of its own, given up on after 30 s (a FIFO waited on fails
    the test instead of hanging it): its result, or the exception it raised."""
    import threading

    result = {}

    def run():
        try:
            result["value"] = call()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            result["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), "still running after 30 s"
    if "error" in result:
        raise result["error"]
    return result.get("value")


def test_a_schema_folder_is_read_only_as_far_as_its_own_regular_files(folder, tmp_path):
    good = thing_file(tmp_path / "good.asdf")
    # A FIFO named as a schema: refused at once, naming it.
    fifo = folder / "schemas" / "x.yaml"
    os.mkfifo(fifo)
    with pytest.raises(rasdf.AsdfError, match="x.yaml.*not a regular file but a FIFO"):
        _within_30s(lambda: rasdf.validate(good, schemas=folder))
    fifo.unlink()
    # Links out of the folder: to /dev/zero, to a file beside it, to /.
    outside = tmp_path / "outside.yaml"
    outside.write_text(COMMON)
    for name, target in [("zero.yaml", "/dev/zero"), ("out.yaml", outside), ("all", "/")]:
        link = folder / "schemas" / name
        link.symlink_to(target)
        with pytest.raises(rasdf.AsdfError, match=f"{name}.*outside the folder"):
            _within_30s(lambda: rasdf.validate(good, schemas=folder))
        link.unlink()
    # Too large a document (sparse: nothing written).
    big = folder / "schemas" / "big.yaml"
    with open(big, "wb") as f:
        f.truncate((16 << 20) + 1)
    with pytest.raises(rasdf.AsdfError, match="big.yaml.*16 MiB"):
        rasdf.validate(good, schemas=folder)
    big.unlink()
    # A link inside the folder is followed.
    (folder / "schemas" / "again.yaml").symlink_to(folder / "schemas" / "common-1.0.0.yaml")
    assert rasdf.validate(good, schemas=folder) is None


def test_a_pattern_that_cannot_be_searched_is_no_pass(folder, tmp_path):
    # Look-ahead: Python's re compiles it, rasdf cannot search it as Python does.
    schema = SCHEMA.replace("required: [size]", "required: [size]\npatternProperties:\n  '^s(?=i)': {type: integer}")
    (folder / "schemas" / "thing-1.0.0.yaml").write_text(schema)
    with pytest.raises(rasdf.AsdfError, match=r"cannot check: the pattern '\^s\(\?=i\)'") as e:
        rasdf.validate(thing_file(tmp_path / "x.asdf"), schemas=folder)
    assert "cannot be made" in str(e.value)
    assert "thing-1.0.0" in str(e.value)
    with rasdf.open(tmp_path / "x.asdf") as af, pytest.raises(rasdf.AsdfError, match="cannot check"):
        af.validate(schemas=folder)
