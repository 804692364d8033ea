"""rasdf.asdf_hook's tree walks: asdf's ``tagged_tree_to_custom_tree`` (eager and through
``lazy_tree``) and ``custom_tree_to_tagged_tree`` walked by rasdf give what asdf's own
walk gives: converters called for the same nodes in the same order, the same objects and
the same sharing (an object met twice is one result), reference cycles through
converters that yield and through plain containers, walks nested in converters (in the
walk and while the context drains its generators), the same warnings and errors, and
the same bytes written. On hand-made cases and seeded random trees; each test also
checks that rasdf's walk ran.
"""

import collections
import inspect
import io
import random

import pytest

from conftest import require

asdf = require("asdf")
import asdf.treeutil  # noqa: E402
import asdf.yamlutil  # noqa: E402
from asdf.extension import Converter, Extension  # noqa: E402
from asdf.tagged import TaggedDict, TaggedList, TaggedString  # noqa: E402

from rasdf import _asdf_walk, asdf_hook  # noqa: E402
from hook_support import both, no_hook_left, outcome  # noqa: E402,F401 - the fixture applies here

HAS_LAZY_TREE = "lazy_tree" in inspect.signature(asdf.open).parameters
TAG = "asdf://rasdf.test/tags/{}-1.0.0"

# -- a test extension: boxes whose converters yield (cycles through them work), do not
# yield, or walk a part of their node again (a walk nested in a walk, on asdf's context)

LOG = []  # the converters' calls, in order
AF = [None]  # the file the nesting converter walks with


class Box:
    def __init__(self, value=None, ref=None):
        self.value, self.ref = value, ref


class YBox(Box):
    pass


class PBox(Box):
    pass


class NBox(Box):
    pass


def describe(node):
    """A short, order-free-of-ids account of a converter's argument."""
    if isinstance(node, dict):
        return sorted(node)
    return type(node).__name__


class YConverter(Converter):
    tags = [TAG.format("ybox")]
    types = [YBox]

    def to_yaml_tree(self, obj, tag, ctx):
        LOG.append(("to", "ybox"))
        node = {}
        yield node
        node["value"] = obj.value
        node["ref"] = obj.ref

    def from_yaml_tree(self, node, tag, ctx):
        LOG.append(("from", "ybox", describe(node)))
        obj = YBox()
        yield obj
        obj.value, obj.ref = node.get("value"), node.get("ref")


class PConverter(Converter):
    tags = [TAG.format("pbox")]
    types = [PBox]

    def to_yaml_tree(self, obj, tag, ctx):
        LOG.append(("to", "pbox"))
        return {"value": obj.value, "ref": obj.ref}

    def from_yaml_tree(self, node, tag, ctx):
        LOG.append(("from", "pbox", describe(node)))
        if node.get("value") == "fail":
            raise ValueError("a box that fails")
        return PBox(node.get("value"), node.get("ref"))


class NConverter(Converter):
    """Walks its node's "value" again with asdf's function (as a converter of a node
    holding tagged data might), once in the walk and once when its generator ends."""

    tags = [TAG.format("nbox")]
    types = [NBox]

    def to_yaml_tree(self, obj, tag, ctx):
        LOG.append(("to", "nbox"))
        return {"value": asdf.yamlutil.custom_tree_to_tagged_tree(obj.value, AF[0])}

    def from_yaml_tree(self, node, tag, ctx):
        LOG.append(("from", "nbox", describe(node)))
        obj = NBox(asdf.yamlutil.tagged_tree_to_custom_tree(node.get("value"), AF[0]))
        yield obj
        obj.ref = asdf.yamlutil.tagged_tree_to_custom_tree(node.get("value"), AF[0])


class WConverter(Converter):
    """Reading, writes its node's "value" again with asdf's function (a walk of the
    other direction nested in a walk, on asdf's context)."""

    tags = [TAG.format("wbox")]
    types = []

    def to_yaml_tree(self, obj, tag, ctx):  # pragma: no cover - no type to write
        raise NotImplementedError

    def from_yaml_tree(self, node, tag, ctx):
        LOG.append(("from", "wbox", describe(node)))
        return Box(asdf.yamlutil.custom_tree_to_tagged_tree([node.get("value"), complex(5, 6)], AF[0]))


class BoxExtension(Extension):
    extension_uri = "asdf://rasdf.test/extensions/boxes-1.0.0"
    converters = [YConverter(), PConverter(), NConverter(), WConverter()]
    tags = [TAG.format(n) for n in ("ybox", "pbox", "nbox", "wbox")]


@pytest.fixture
def boxes():
    with asdf.config_context() as cfg:
        cfg.add_extension(BoxExtension())
        yield cfg


@pytest.fixture
def walks(monkeypatch):
    """How many walks rasdf ran."""
    n = [0]
    real = _asdf_walk._walker_for

    def counted(*a):
        w = real(*a)
        n[0] += w is not None
        return w

    monkeypatch.setattr(_asdf_walk, "_walker_for", counted)
    return n


def shape(x, seen=None):
    """``x`` as nested tuples of types, tags, values and which objects are the same
    object (numbered in the order first met), cycles included."""
    seen = {} if seen is None else seen
    if type(x) in (str, int, float, bool, type(None), bytes):
        return (type(x).__name__, x)
    if id(x) in seen:
        return ("same as", seen[id(x)])
    n = seen[id(x)] = len(seen)
    tag = getattr(x, "_tag", None)
    if isinstance(x, Box):
        return (type(x).__name__, n, shape(x.value, seen), shape(x.ref, seen))
    if isinstance(x, (dict, collections.UserDict)):
        return (type(x).__name__, n, tag, tuple((shape(k, seen), shape(v, seen)) for k, v in x.items()))
    if isinstance(x, (list, tuple, collections.UserList)):
        return (type(x).__name__, n, tag, tuple(shape(v, seen) for v in x))
    if hasattr(x, "dtype") and hasattr(x, "tolist"):
        return (type(x).__name__, n, str(x.dtype), x.tolist())
    return (type(x).__name__, n, tag, repr(x))


def same(f, walks, ran=True):
    """``f()`` with asdf's walk, then with the hook's: the same outcome (its shape, the
    error, the warnings) and the same converter calls."""
    LOG.clear()
    stock = outcome(lambda: shape(f()))
    stock_log = list(LOG)
    LOG.clear()
    before = walks[0]
    with asdf_hook.installed():
        hooked = outcome(lambda: shape(f()))
    assert hooked == stock
    assert LOG == stock_log
    if ran:
        assert walks[0] > before, "rasdf's walk did not run"
    return stock


# -- direct calls of asdf's two functions on hand-made trees


def to_custom(tree, **kw):
    af = AF[0] = asdf.AsdfFile()
    return lambda: asdf.yamlutil.tagged_tree_to_custom_tree(tree, af, **kw)


def to_tagged(tree):
    af = AF[0] = asdf.AsdfFile()
    return lambda: asdf.yamlutil.custom_tree_to_tagged_tree(tree, af)


def box(name, value=None, ref=None):
    return TaggedDict({"value": value, "ref": ref}, TAG.format(name))


def test_plain_containers_are_new_and_leaves_the_same(walks):
    leaf = "a string"
    inner = [1, 2.5, leaf]
    tree = {"a": inner, "b": (inner, None), "c": collections.OrderedDict(x=True)}
    out = asdf.yamlutil.tagged_tree_to_custom_tree(tree, asdf.AsdfFile())
    with asdf_hook.installed():
        hooked = asdf.yamlutil.tagged_tree_to_custom_tree(tree, asdf.AsdfFile())
    assert walks[0] == 1
    for t in (out, hooked):
        assert type(t) is dict and t is not tree and t["a"] is not inner and t["a"][2] is leaf
        assert t["b"][0] is t["a"] and type(t["c"]) is collections.OrderedDict
    assert shape(out) == shape(hooked)


def test_shared_nodes_are_one_result(boxes, walks):
    shared = box("ybox", value=[1, 2])
    plain = {"k": "v"}
    tree = {"x": shared, "y": [shared, plain], "z": plain}
    s = same(to_custom(tree), walks)
    assert s[0][3][1][1][3][0] == ("same as", 1)  # "y"'s first item is the box of "x"


def test_cycles_through_converters_that_yield(boxes, walks):
    a = box("ybox", value="a")
    b = box("ybox", value="b", ref=a)
    a["ref"] = b
    own = box("ybox", value="own")
    own["ref"] = own
    same(to_custom({"a": a, "own": own, "list": [a, b]}), walks)


def test_cycles_through_plain_containers_and_pending_values(boxes, walks):
    d = {"name": "d"}
    d["self"] = d
    lst = ["first"]
    lst.append(lst)
    p = box("pbox", value="p")
    p["ref"] = p  # a converter that does not yield: its box keeps PendingValue
    s = same(to_custom({"d": d, "l": lst, "p": p}), walks)
    assert "PendingValue" in repr(s)


def test_walks_nested_in_converters(boxes, walks):
    inner = box("ybox", value=[1, box("pbox", value="deep")])
    tree = {"n": box("nbox", value=inner), "again": inner}
    same(to_custom(tree), walks)
    # And from inside a yielding converter's end, while the context drains.
    n = box("nbox", value={"x": box("ybox")})
    loop = box("ybox", value=n)
    n["ref"] = loop
    same(to_custom({"loop": loop}), walks)


def test_leaves_seen_before_a_nested_walk_are_its_results(boxes, walks):
    """A leaf the reading walk has passed is, for a writing walk nested in a converter,
    the result the map holds for it: a complex number stays one (asdf's converter of
    complex numbers is not called), as in asdf's walk; a new one is converted."""
    c = 1 + 2j
    text = "a string"
    tree = {"c": c, "s": text, "w": box("wbox", value=[c, text, 3 + 4j])}
    s = same(to_custom(tree), walks)
    r = repr(s)
    assert "'(1+2j)')" in r and "'(3+4j)')" in r and r.count("TaggedString") == 1 and "complex-1" in r


def test_unknown_tags_and_failing_converters_warn_alike(boxes, walks):
    tree = {
        "unknown": TaggedDict({"a": 1}, "asdf://rasdf.test/tags/nobody-1.0.0"),
        "list": TaggedList([1, 2], "asdf://rasdf.test/tags/nobody-1.0.0"),
        "str": TaggedString("text"),
    }
    tree["str"]._tag = "asdf://rasdf.test/tags/nobody-1.0.0"
    s = same(to_custom(tree), walks)
    assert any("not recognized" in w for _, w in s[2])
    fails = {"f": box("pbox", value="fail")}
    if hasattr(boxes, "warn_on_failed_conversion"):
        boxes.warn_on_failed_conversion = True
        s = same(to_custom(fails), walks)
        assert any("failed to convert" in w for _, w in s[2])
        boxes.warn_on_failed_conversion = False
    s = same(to_custom(fails), walks)
    assert s[1] is not None and "a box that fails" in s[1][1]


def test_force_raw_types_and_remove_node(walks):
    tree = {"t": TaggedDict({"a": [1]}, "asdf://rasdf.test/tags/nobody-1.0.0")}
    same(to_custom(tree, force_raw_types=True), walks)


def test_unhandled_cycle_error(boxes, walks):
    # A tuple is walked without looking for pending children: its ancestor in it is
    # asdf's error.
    n = box("ybox")
    n["value"] = (1, n)
    s = same(to_custom({"n": n}), walks)
    assert s[1] is not None and s[1][0] is RuntimeError and "Unhandled cycle" in s[1][1]


def test_too_deep_fails_alike(walks):
    """Deeper than the interpreter's limit lets asdf's recursion go: RecursionError
    (whose text says where Python noticed)."""
    tree = deep = {}
    for _ in range(5000):
        deep["d"] = {}
        deep = deep["d"]
    stock = outcome(to_custom(tree))
    with asdf_hook.installed():
        hooked = outcome(to_custom(tree))
    assert stock[1][0] is hooked[1][0] is RecursionError and walks[0] == 1


def test_custom_to_tagged(boxes, walks):
    a = YBox("a")
    b = YBox("b", a)
    a.ref = b
    p = PBox([1, 2, "three"])
    tree = {"a": a, "b": b, "p": p, "again": p, "plain": [{"x": (1, 2)}], "n": NBox([a, p])}
    same(to_tagged(tree), walks)


class SetConverter(Converter):
    """A converter of a builtin type: sets written as tagged lists."""

    tags = [TAG.format("set")]
    types = [set]

    def to_yaml_tree(self, obj, tag, ctx):
        LOG.append(("to", "set"))
        return sorted(obj)

    def from_yaml_tree(self, node, tag, ctx):
        return set(node)


class SetExtension(Extension):
    extension_uri = "asdf://rasdf.test/extensions/sets-1.0.0"
    converters = [SetConverter()]
    tags = [TAG.format("set")]


def test_builtin_types_with_a_converter_are_converted(walks):
    tree = {"s": {3, 1, 2}, "t": ({4},), "plain": [1, "x"]}
    with asdf.config_context() as cfg:
        cfg.add_extension(SetExtension())
        s = same(to_tagged(tree), walks)
    assert LOG.count(("to", "set")) == 2 and "TaggedList" in repr(s)


def test_other_walks_are_asdfs(walks, monkeypatch):
    """A callback other than asdf's two, or asdf's `walk_and_modify` replaced: asdf's
    own walk (that `walk_and_modify` is called)."""
    tree = {"a": [1, {"b": 2}]}
    with asdf_hook.installed():
        assert asdf.treeutil.walk_and_modify(tree, lambda n: n) == tree
        calls = []
        real = asdf.treeutil.walk_and_modify
        monkeypatch.setattr(asdf.treeutil, "walk_and_modify", lambda *a, **k: calls.append(1) or real(*a, **k))
        asdf.yamlutil.tagged_tree_to_custom_tree(tree, asdf.AsdfFile())
        assert calls
    assert walks[0] == 0


def test_uninstall_gives_back_treeutil():
    with asdf_hook.installed():
        assert asdf.yamlutil.treeutil is _asdf_walk.proxy
    assert asdf.yamlutil.treeutil is asdf.treeutil


# -- seeded random trees, walked directly and through files


def random_tree(rng, depth=0, pool=None, ancestors=None):
    """Plain data, tagged nodes (the three boxes and unknown tags), shared nodes and
    cycles (a node's ancestor as its child)."""
    pool = [] if pool is None else pool
    ancestors = [] if ancestors is None else ancestors
    r = rng.random()
    if pool and r < 0.08:
        return rng.choice(pool)
    if ancestors and r < 0.12:
        return rng.choice(ancestors)
    if depth > 4 or r < 0.4:
        return rng.choice([1, -2, 3.5, True, None, "s", "long text " * 3, b"by", 10**30, 1 + 2j])
    kind = rng.choice(["dict", "list", "tuple", "odict", "ybox", "pbox", "nbox", "unknown", "ulist", "ustr"])
    if kind == "ustr":
        s = TaggedString("tagged text")
        s._tag = "asdf://rasdf.test/tags/nobody-1.0.0"
        return s
    if kind == "tuple":
        node = tuple(random_tree(rng, depth + 1, pool, ancestors) for _ in range(rng.randrange(3)))
        pool.append(node)
        return node
    node = {
        "dict": dict,
        "odict": collections.OrderedDict,
        "list": list,
        "ulist": lambda: TaggedList([], "asdf://rasdf.test/tags/nobody-1.0.0"),
        "unknown": lambda: TaggedDict({}, "asdf://rasdf.test/tags/nobody-1.0.0"),
    }.get(kind, lambda: TaggedDict({}, TAG.format(kind)))()
    ancestors.append(node)
    if kind in ("ybox", "pbox", "nbox"):
        node["value"] = random_tree(rng, depth + 1, pool, ancestors)
        if rng.random() < 0.5:
            node["ref"] = random_tree(rng, depth + 1, pool, ancestors)
    elif isinstance(node, list):
        node.extend(random_tree(rng, depth + 1, pool, ancestors) for _ in range(rng.randrange(4)))
    else:
        for i in range(rng.randrange(4)):
            node[rng.choice(["k", "id", "x", f"k{i}"])] = random_tree(rng, depth + 1, pool, ancestors)
    ancestors.pop()
    pool.append(node)
    return node


@pytest.mark.parametrize("seed", range(60))
def test_random_trees_to_custom(boxes, walks, seed):
    tree = {"root": random_tree(random.Random(seed))}
    same(to_custom(tree), walks)


def to_objects(x, made=None):
    """A tagged random tree as the objects it stands for (boxes for box tags)."""
    made = {} if made is None else made
    if id(x) in made:
        return made[id(x)]
    tag = getattr(x, "_tag", None)
    if isinstance(x, TaggedDict) and tag and "box" in tag:
        cls = {"ybox": YBox, "pbox": PBox, "nbox": NBox}[tag.split("/")[-1].split("-")[0]]
        obj = made[id(x)] = cls()
        obj.value, obj.ref = to_objects(x.get("value"), made), to_objects(x.get("ref"), made)
        return obj
    if isinstance(x, dict) and not isinstance(x, TaggedDict):
        out = made[id(x)] = type(x)()
        for k, v in x.items():
            out[k] = to_objects(v, made)
        return out
    if isinstance(x, list) and not isinstance(x, TaggedList):
        out = made[id(x)] = []
        out.extend(to_objects(v, made) for v in x)
        return out
    if isinstance(x, tuple):
        return tuple(to_objects(v, made) for v in x)
    return x


@pytest.mark.parametrize("seed", range(60))
def test_random_trees_to_tagged(boxes, walks, seed):
    tree = to_objects({"root": random_tree(random.Random(seed))})
    same(to_tagged(tree), walks)


@pytest.mark.parametrize("seed", range(30))
def test_random_trees_written_and_read(boxes, walks, seed, tmp_path):
    """Written by asdf (the same bytes with and without the hook), read eagerly and
    through ``lazy_tree`` (the same objects, warnings and converter calls)."""
    rng = random.Random(seed)
    tree = to_objects({"root": random_tree(rng), "arrays": []})
    np = require("numpy")
    arr = np.arange(6, dtype="<i4")
    tree["arrays"] = [arr, arr[1:], arr]

    def write():
        af = AF[0] = asdf.AsdfFile(tree)
        out = io.BytesIO()
        af.write_to(out)
        return out.getvalue()

    LOG.clear()
    stock = outcome(write)
    with asdf_hook.installed():
        hooked = outcome(write)
    assert hooked == stock
    data = stock[0]
    if data is None:
        return
    path = tmp_path / "t.asdf"
    path.write_bytes(data)

    def read(**kw):
        def f():
            with asdf.open(path, lazy_load=False, memmap=False, **kw) as af:
                AF[0] = af
                t = af.tree
                return {"root": t["root"], "arrays": [t["arrays"][i] for i in range(3)]}

        return f

    s = same(read(), walks)
    if s[1] is None:
        a = s[0][3][1][1]
        assert a[3][2] == ("same as", a[3][0][1])  # the array shared
    if HAS_LAZY_TREE:
        same(read(lazy_tree=True), walks, ran=False)
