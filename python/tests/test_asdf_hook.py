"""rasdf.asdf_hook: `asdf.open` with rasdf building its tree gives what it gives without.

Run under every asdf the hook claims (scripts/test.sh runs this file in a venv of each):
the raw tagged tree (`_force_raw_types=True`) is the same objects, the converted tree
writes back the same bytes, and errors and warnings are the same, on every file of the
repository's test data, on seeded random YAML, and on hand-made edge cases.
"""

import inspect
import io
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, TESTDATA, asdf_files, require

asdf = require("asdf")
import asdf.yamlutil  # noqa: E402

import make_random_yaml  # noqa: E402 - tests/python, on the path from conftest
from rasdf import asdf_hook  # noqa: E402
from hook_support import both, no_hook_left, outcome  # noqa: E402,F401 - the fixture applies here
from tree_compare import differences  # noqa: E402

FILES = asdf_files("reference_files", "pyasdf", "yaml", "strings", "scalars", "oldasdf", "astro", "bad") + [
    TESTDATA / "example.asdf"
]
HAS_LAZY_TREE = "lazy_tree" in inspect.signature(asdf.open).parameters
HEAD = b"#ASDF 1.0.0\n#ASDF_STANDARD 1.5.0\n"


def assert_same(stock, hooked, compare=differences):
    (a, ea, wa), (b, eb, wb) = stock, hooked
    assert ea == eb, f"errors differ: {ea} / {eb}"
    assert wa == wb, f"warnings differ: {wa} / {wb}"
    if ea is None:
        d = compare(a, b)
        assert not d, d


def raw_tree(path, **kw):
    def f():
        with asdf.open(path, _force_raw_types=True, lazy_load=False, **kw) as af:
            return af.tree

    return f


def written(path, **kw):
    """The converted tree as asdf writes it back (a generic comparison of converted
    objects of any type: astropy's, gwcs's, Roman's ...)."""

    def f():
        with asdf.open(path, lazy_load=False, memmap=False, **kw) as af:
            out = io.BytesIO()
            af.write_to(out)
            return out.getvalue()

    return f


def readback(data):
    """What asdf (hook off) reads of a written file: the raw tagged tree, and every
    block's codec and bytes."""
    import numpy as np

    assert not asdf_hook.is_installed()
    with asdf.open(io.BytesIO(data), lazy_load=False, memmap=False, _force_raw_types=True) as af:
        blocks = [(bytes(b.header["compression"]), np.asarray(b.data).tobytes()) for b in af._blocks.blocks]
        return {"tree": af.tree, "blocks": blocks}


def same_bytes(a, b):
    """The same written file, or (the hook compresses blocks with rasdf's encoders,
    whose bytes differ from asdf's for zlib and lz4) one that asdf reads back to the same
    tagged tree, block codecs and block data."""
    if a == b:
        return []
    return differences(outcome(lambda: readback(a)), outcome(lambda: readback(b)))


# -- switching it on and off


def test_install_uninstall_and_context_manager():
    stock = asdf.yamlutil.load_tree
    asdf_hook.install()
    asdf_hook.install()  # twice is once
    assert asdf.yamlutil.load_tree is asdf_hook.load_tree and asdf_hook.is_installed()
    asdf_hook.uninstall()
    assert asdf.yamlutil.load_tree is stock and not asdf_hook.is_installed()
    asdf_hook.uninstall()  # nothing to do
    assert asdf.yamlutil.load_tree is stock
    with asdf_hook.installed():
        assert asdf_hook.is_installed()
        with asdf_hook.installed():  # nested: the outer one keeps it
            pass
        assert asdf_hook.is_installed()
    assert asdf.yamlutil.load_tree is stock
    asdf_hook.install()
    with asdf_hook.installed():  # installed before: it stays after
        pass
    assert asdf_hook.is_installed()


def test_the_hook_is_what_reads_the_tree(tmp_path, monkeypatch):
    """Installed, asdf.open's tree comes from rasdf (not asdf's loader), and asdf's own
    loader is no longer called for a file rasdf reads."""
    calls, stock_calls = [], []
    real, stock = asdf_hook._rasdf.load_yaml, asdf.yamlutil.load_tree
    monkeypatch.setattr(asdf_hook._rasdf, "load_yaml", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(asdf.yamlutil, "load_tree", lambda s: stock_calls.append(1) or stock(s))
    with asdf_hook.installed():
        with asdf.open(TESTDATA / "example.asdf") as af:
            assert af.tree["history"] is not None
    assert calls and not stock_calls
    with asdf.open(TESTDATA / "example.asdf") as af:
        pass
    assert stock_calls


def test_python_m_runs_a_program_with_the_hook(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys, asdf, rasdf.asdf_hook
            assert rasdf.asdf_hook.is_installed()
            with asdf.open({str(TESTDATA / "example.asdf")!r}) as af:
                print(sorted(af.tree)[0], sys.argv[1:])
            """
        )
    )
    run = subprocess.run(
        [sys.executable, "-m", "rasdf.asdf_hook", str(script), "x", "y"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,  # not python/, whose rasdf/ is the package's source without its module
    )
    assert run.returncode == 0, run.stderr
    assert "['x', 'y']" in run.stdout
    (tmp_path / "progmod.py").write_text(script.read_text())
    as_module = subprocess.run(
        [sys.executable, "-m", "rasdf.asdf_hook", "-m", "progmod", "z"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        cwd=tmp_path,
    )
    assert as_module.returncode == 0, as_module.stderr
    assert "['z']" in as_module.stdout
    usage = subprocess.run(
        [sys.executable, "-m", "rasdf.asdf_hook"], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert usage.returncode == 2 and "usage" in usage.stderr


# -- the same trees


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(TESTDATA)))
def test_same_raw_tree(path):
    assert_same(*both(raw_tree(path)))
    if HAS_LAZY_TREE:
        assert_same(*both(raw_tree(path, lazy_tree=True)))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(TESTDATA)))
def test_same_converted_tree(path):
    assert_same(*both(written(path)), compare=same_bytes)
    if HAS_LAZY_TREE:
        assert_same(*both(written(path, lazy_tree=True)), compare=same_bytes)


def load_both(text):
    """asdf's loader and the hook's on the YAML `text`."""
    stock = outcome(lambda: asdf.yamlutil.load_tree(io.BytesIO(text)))
    hooked = outcome(lambda: asdf_hook.load_tree(io.BytesIO(text)))
    return stock, hooked


@pytest.mark.parametrize("seed", [11, 12, 13, 14])
def test_same_tree_of_random_yaml(tmp_path, seed):
    """Seeded random documents of PyYAML's scalar forms and random structures (tags,
    anchors, merges, !!omap, !!pairs, !!set, odd keys), many of them refused."""
    make_random_yaml.main(str(tmp_path), seed, 60)
    files = sorted(tmp_path.glob("*.asdf"))
    assert len(files) == 60
    for f in files:
        data = f.read_bytes()
        text = data[data.index(b"%YAML") :]
        stock, hooked = load_both(text)
        assert_same(stock, hooked)


EDGE_CASES = {
    "two documents": b"%YAML 1.1\n--- {a: 1}\n--- {b: 2}\n...\n",
    "empty document": b"%YAML 1.1\n---\n...\n",
    "null document": b"%YAML 1.1\n--- ~\n...\n",
    "no document": b"%YAML 1.1\n...\n",
    "scalar root": b"%YAML 1.1\n--- 12\n...\n",
    "yaml 1.2": b"%YAML 1.2\n--- {a: 1}\n...\n",
    "yaml 2.0": b"%YAML 2.0\n--- {a: 1}\n...\n",
    "unhashable key": b"%YAML 1.1\n--- {? [1, 2] : x}\n...\n",
    "tagged key": b"%YAML 1.1\n--- {!foo k: 1, !!str 2: 3}\n...\n",
    "mapping key": b"%YAML 1.1\n--- {? {a: 1} : x}\n...\n",
    "control character": b"%YAML 1.1\n--- {a: \"x\x01y\", b: 1}\n...\n",
    "raw control character": b"%YAML 1.1\n--- {a: x\x01y}\n...\n",
    "nul": b"%YAML 1.1\n--- {a: x\x00y}\n...\n",
    "bad utf-8": b"%YAML 1.1\n--- {a: \xff\xfe}\n...\n",
    "non-ascii": "%YAML 1.1\n--- {\u00e9t\u00e9: \u2603, k: \"\\u00e9\\U0001F600\"}\n...\n".encode(),
    "big ints": b"%YAML 1.1\n--- [123456789012345678901234567890, -0x1_0000_0000_0000_0000, 0b1, 017, 1:30:00]\n...\n",
    "python tag": b"%YAML 1.1\n--- {a: !!python/tuple [1, 2], b: !!python/none ''}\n...\n",
    "unknown yaml tag": b"%YAML 1.1\n--- {a: !!foo bar, b: !!foo [1], c: !!foo {x: 1}}\n...\n",
    "verbatim tag": b"%YAML 1.1\n--- {a: !<tag:example.org,2024:x> 1}\n...\n",
    "bad int": b"%YAML 1.1\n--- {a: !!int 1.5}\n...\n",
    "bad float": b"%YAML 1.1\n--- {a: !!float abc}\n...\n",
    "bad bool": b"%YAML 1.1\n--- {a: !!bool 1}\n...\n",
    "null with text": b"%YAML 1.1\n--- {a: !!null abc}\n...\n",
    "bad timestamp": b"%YAML 1.1\n--- {a: !!timestamp 2001-13-45}\n...\n",
    "bad binary": b"%YAML 1.1\n--- {a: !!binary '@@@'}\n...\n",
    "binary": b"%YAML 1.1\n--- {a: !!binary aGVsbG8=, b: !!binary |\n    aGVs\n    bG8=\n}\n...\n",
    "set from a list": b"%YAML 1.1\n--- {a: !!set [1]}\n...\n",
    "omap from a mapping": b"%YAML 1.1\n--- {a: !!omap {x: 1}}\n...\n",
    "omap": b"%YAML 1.1\n--- {a: !!omap [x: 1, y: 2, x: 3]}\n...\n",
    "pairs": b"%YAML 1.1\n--- {a: !!pairs [x: 1, y: 2, x: 3], b: !!pairs []}\n...\n",
    "set": b"%YAML 1.1\n--- {a: !!set {x, 1, ~}}\n...\n",
    "map from a list": b"%YAML 1.1\n--- {a: !!map [1]}\n...\n",
    "seq from a mapping": b"%YAML 1.1\n--- {a: !!seq {x: 1}}\n...\n",
    "str from a list": b"%YAML 1.1\n--- {a: !!str [1]}\n...\n",
    "merges": b"%YAML 1.1\n--- {b: &b {x: 1, y: 2}, c: {<<: [*b, {z: 3}], x: 9}, d: <<, e: =}\n...\n",
    "bad merge": b"%YAML 1.1\n--- {c: {<<: 1}}\n...\n",
    "aliases": b"%YAML 1.1\n--- {a: &a [1, {b: &b !t {c: 1}}], x: *a, y: *b, z: *a}\n...\n",
    "recursive": b"%YAML 1.1\n--- &r {self: *r, l: &l [*l, *r]}\n...\n",
    "recursive tagged": b"%YAML 1.1\n--- &r !t {self: *r, l: &l !u [*l, *r]}\n...\n",
    "undefined alias": b"%YAML 1.1\n--- {a: *nope}\n...\n",
    "duplicate anchor": b"%YAML 1.1\n--- {a: &x 1, b: &x 2}\n...\n",
    "duplicate keys": b"%YAML 1.1\n--- {a: 1, b: 2, a: 3}\n...\n",
    "tagged scalars": b"%YAML 1.1\n--- [!t 12, !t , !t null, !t 'q', ! 12, ! x, !!str 12, !core/complex-1.0.0 1+2j]\n...\n",
    "timestamps": (
        b"%YAML 1.1\n--- [2001-12-14, 2001-12-14t21:59:43.10-05:00, 2001-12-14 21:59:43.10 -5,"
        b" 2002-12-14T21:59:43Z, 2001-12-14 21:59:43.1234567, !!timestamp 2001-12-14]\n...\n"
    ),
    "floats": b"%YAML 1.1\n--- [1.5, -0.0, .inf, -.Inf, .NaN, 1e5, 1.0e+5, 190:20:30.15, 1_2.3_4, 0.1]\n...\n",
    "crlf": b"%YAML 1.1\r\n--- {a: 1,\r\n b: [x, y]}\r\n...\r\n",
    "tabs": b"%YAML 1.1\n--- {a:\t1}\n...\n",
    "block scalars": b"%YAML 1.1\n---\na: |\n  x\n  ...\n  y\nb: >-\n  p\n  q\n...\n",
    "deep": b"%YAML 1.1\n--- " + b"[" * 2000 + b"]" * 2000 + b"\n...\n",
    "bad syntax": b"%YAML 1.1\n--- {a: [1, 2}\n...\n",
    "bad indentation": b"%YAML 1.1\n---\na:\n  b: 1\n c: 2\n...\n",
    "tag directive": b"%YAML 1.1\n%TAG !e! tag:example.com,2000:\n--- {a: !e!x 1, b: !e!y [1]}\n...\n",
    "undefined handle": b"%YAML 1.1\n--- {a: !e!x 1}\n...\n",
}


@pytest.mark.parametrize("name", list(EDGE_CASES))
def test_same_tree_or_error_on_edge_cases(name):
    stock, hooked = load_both(EDGE_CASES[name])
    assert_same(stock, hooked)


@pytest.mark.parametrize("name", list(EDGE_CASES))
def test_same_on_edge_cases_through_asdf_open(name):
    data = HEAD + EDGE_CASES[name]
    assert_same(*both(lambda: asdf.open(io.BytesIO(data), _force_raw_types=True).tree))


def test_tagged_objects_are_asdfs_own():
    from asdf.tagged import TaggedDict, TaggedList, TaggedString

    tree = asdf_hook.load_tree(io.BytesIO(EDGE_CASES["recursive tagged"]))
    assert type(tree) is TaggedDict and tree._tag == "!t"
    assert tree["self"] is tree and type(tree["l"]) is TaggedList and tree["l"][0] is tree["l"]
    scalars = asdf_hook.load_tree(io.BytesIO(EDGE_CASES["tagged scalars"]))
    assert type(scalars[0]) is TaggedString and scalars[0] == asdf.tagged.tag_object(scalars[0]._tag, "12")


def astro_packages():
    """roman_datamodels, under the venv with the astronomy packages (scripts/test.sh sets
    RASDF_HOOK_ASTRO there, and a missing one fails); elsewhere the test says why it skips."""
    if os.environ.get("RASDF_HOOK_ASTRO"):
        import roman_datamodels

        return roman_datamodels
    pytest.skip("roman_datamodels is tested under the astro venv (RASDF_HOOK_ASTRO=1), not this one")


@pytest.mark.parametrize("path", [p for p in asdf_files("astro") if p.name.startswith("roman_")], ids=lambda p: p.name)
def test_same_roman_datamodel(path):
    """roman_datamodels.open (asdf.open with lazy_tree=True, then Roman's own classes):
    the same model, written back byte for byte."""
    rdm = astro_packages()

    def f():
        with rdm.open(path) as model:
            out = io.BytesIO()
            model._asdf.write_to(out)
            return type(model).__name__, out.getvalue()

    assert_same(*both(f), compare=lambda a, b: [f"{a[0]} / {b[0]}"] if a[0] != b[0] else same_bytes(a[1], b[1]))


# -- the reader: where the YAML ends, and what asdf reads after it


def file_with_blocks(marker_end=b"\n", crlf=False):
    import numpy as np

    out = io.BytesIO()
    asdf.AsdfFile({"a": np.arange(10), "b": np.ones(3)}).write_to(out)
    data = out.getvalue()
    if crlf:
        head, rest = data.split(b"\n...\n", 1)
        data = head.replace(b"\n", b"\r\n") + b"\r\n...\r\n" + rest
    return data


@pytest.mark.parametrize("crlf", [False, True])
@pytest.mark.parametrize("source", ["path", "bytesio", "stream"])
def test_blocks_read_after_the_hooked_tree(tmp_path, crlf, source):
    data = file_with_blocks(crlf=crlf)
    path = tmp_path / "f.asdf"
    path.write_bytes(data)

    class Stream(io.RawIOBase):  # not seekable: asdf's InputStream
        def __init__(self):
            self.b = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, buf):
            n = self.b.readinto(buf)
            return n

    def f():
        src = {"path": str(path), "bytesio": io.BytesIO(data), "stream": Stream()}[source]
        with asdf.open(src, lazy_load=False, memmap=False) as af:
            return [af.tree["a"].tolist(), af.tree["b"].tolist()]

    stock, hooked = both(f)
    assert_same(stock, hooked)
    if source != "stream":  # (asdf 6 refuses a stream it cannot seek in: the same error)
        assert hooked[1] is None, hooked[1]
        assert hooked[0] == [list(range(10)), [1.0, 1.0, 1.0]]


@pytest.mark.parametrize(
    "yaml_end",
    [b"\n...\n", b"\n...\r\n", b"\n...", b"\n... \n", b"\n...x\n...\n", b"\n\n", b""],
    ids=["lf", "crlf", "at end", "space after", "text after", "no marker", "nothing"],
)
def test_end_marker_as_asdf_finds_it(yaml_end):
    body = b"%YAML 1.1\n--- {a: 1, b: [1, 2]}" + yaml_end
    data = HEAD + body
    assert_same(*both(lambda: asdf.open(io.BytesIO(data), _force_raw_types=True).tree))


def read_through_asdf_reader(load, data):
    """`load` on asdf's own reader over `data` (a file whose YAML starts it), as asdf.open
    makes it: the outcome, and where the file is left (where asdf reads blocks from)."""
    from asdf import constants, generic_io

    def f():
        gf = generic_io.get_file(io.BytesIO(data), mode="r")
        token = gf.read(4)
        reader = gf.reader_until(
            constants.YAML_END_MARKER_REGEX, 7, "End of YAML marker", include=True, initial_content=token
        )
        tree = load(reader)
        return tree, gf.tell(), reader.read(100)

    return outcome(f)


def edge_texts():
    """YAML texts whose end marker falls at and around the edges of the pieces libyaml
    reads (16 384 bytes, less a UTF-8 character cut at the previous edge), with cut
    characters of every width, decoy markers and CRLF markers."""
    for piece in (1, 2, 4):
        for fill in (b"x", "\u00e9".encode(), "\u2603".encode(), "\U0001f600".encode()):
            for marker in (b"\n...\n", b"\r\n...\r\n", b"\n...x\n...\n", b"\n...\r\n"):
                for delta in range(-9, 4):
                    head = b"%YAML 1.1\n--- {k: '"
                    tail = b"'}" + marker + b"\xd3BLK"
                    room = 16384 * piece + 7 - len(head) - len(b"'}\n...") + delta
                    body = fill * (room // len(fill)) + b"y" * (room % len(fill))
                    yield head + body + tail


def test_end_of_yaml_found_where_asdf_finds_it():
    import asdf.yamlutil

    stock = asdf.yamlutil.load_tree
    count = 0
    for text in edge_texts():
        a = read_through_asdf_reader(stock, text)
        b = read_through_asdf_reader(asdf_hook.load_tree, text)
        assert_same(a, b)
        count += 1
    assert count == 3 * 4 * 4 * 13


# -- the block index


def test_block_index_read_by_the_hook_and_asdf_alike(tmp_path, monkeypatch):
    import asdf._block.io as bio

    data = file_with_blocks()
    assert b"#ASDF BLOCK INDEX" in data
    stock_index = bio.read_block_index
    i = data.index(b"#ASDF BLOCK INDEX")
    bad_indexes = {
        "good": data,
        "unsorted": data[:i] + b"#ASDF BLOCK INDEX\n%YAML 1.1\n--- [9999, 1]\n...\n",
        "strings": data[:i] + b"#ASDF BLOCK INDEX\n%YAML 1.1\n--- ['1', '2']\n...\n",
        "bools": data[:i] + b"#ASDF BLOCK INDEX\n%YAML 1.1\n--- [true, 2]\n...\n",
        "mapping": data[:i] + b"#ASDF BLOCK INDEX\n%YAML 1.1\n--- {a: 1}\n...\n",
        "garbage": data[:i] + b"#ASDF BLOCK INDEX\n%YAML 1.1\n--- [1, 2\n",
        "tagged": data[:i] + b"#ASDF BLOCK INDEX\n%YAML 1.1\n--- !foo [1, 2]\n...\n",
        "big": data[:i] + b"#ASDF BLOCK INDEX\n%YAML 1.1\n--- [1, 123456789012345678901234567890]\n...\n",
    }
    for name, d in bad_indexes.items():
        with asdf.generic_io.get_file(io.BytesIO(d)) as fd:
            at = bio.find_block_index(fd)

        def direct(d=d, at=at):
            with asdf.generic_io.get_file(io.BytesIO(d)) as fd:
                index = bio.read_block_index(fd, at)
                return index, fd.tell()

        stock = outcome(direct)
        with asdf_hook.installed():
            assert bio.read_block_index is asdf_hook.read_block_index
            hooked = outcome(direct)
        assert_same(stock, hooked)
        assert bio.read_block_index is stock_index
        assert_same(*both(lambda d=d: [v.tolist() for v in asdf.open(io.BytesIO(d), lazy_load=False).tree.values() if hasattr(v, "tolist")]))


def test_the_extensions_chosen_for_a_version_are_asdfs_choice():
    """The hook keeps asdf's selection of installed extensions for a file's ASDF Standard
    (made twice an open): the same extensions, in the same order, for every version,
    also after the configuration changes."""
    from asdf.versioning import supported_versions

    stock = asdf.AsdfFile._process_plugin_extensions

    def chosen(version, hooked):
        af = asdf.AsdfFile(version=str(version))
        if hooked:
            with asdf_hook.installed():
                assert asdf.AsdfFile._process_plugin_extensions is asdf_hook.process_plugin_extensions
                return [af._process_plugin_extensions() for _ in range(2)]
        return [stock(af)] * 2

    def same(a, b):
        return len(a) == len(b) and all(x is y for x, y in zip(a, b))

    for version in supported_versions:
        want = chosen(version, False)
        got = chosen(version, True)
        assert all(same(want[0], g) for g in got), version
        assert got[0] is not got[1]  # a list of its own each time, as asdf's
    from asdf.extension import Extension

    class Only150(Extension):
        extension_uri = "asdf://rasdf.test/extensions/only-1.5-1.0.0"
        asdf_standard_requirement = "==1.5.0"

    with asdf.config_context() as config:
        config.add_extension(Only150())
        for version in supported_versions:
            want, got = chosen(version, False), chosen(version, True)
            assert same(want[0], got[0]), version
            uris = [e.extension_uri for e in got[0]]
            assert ("asdf://rasdf.test/extensions/only-1.5-1.0.0" in uris) == (str(version) == "1.5.0")
    # Out of the context, the new extension is gone again.
    assert all(e.extension_uri != "asdf://rasdf.test/extensions/only-1.5-1.0.0" for e in chosen("1.5.0", True)[0])
