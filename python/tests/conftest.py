"""Shared helpers of the Python package's tests: the repository's test data, and the
reference library's reading of it (tests/python/dump_tree.py, the same dumper the Rust
cross-tests use)."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTDATA = ROOT / "testdata"
sys.path.insert(0, str(ROOT / "tests" / "python"))


def asdf_files(*folders):
    out = []
    for folder in folders:
        out.extend(sorted((TESTDATA / folder).rglob("*.asdf")))
    return out


@pytest.fixture
def example():
    return TESTDATA / "example.asdf"


def require(module):
    """Imports `module`; under CI (`CI` or `RASDF_REQUIRE_PYTHON` set) a missing one
    fails the test instead of skipping it."""
    try:
        return __import__(module)
    except ImportError:
        if os.environ.get("CI") or os.environ.get("RASDF_REQUIRE_PYTHON"):
            raise
        pytest.skip(f"{module} is not installed")
