#!/usr/bin/env bash
# The whole test suite. On a fresh machine it first makes the Python venv (.venv) with the
# pinned reference library (tests/python/requirements.txt) for the cross-tests.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${RASDF_VENV:-$PWD/.venv}"
if ! "$venv/bin/python" -c "import asdf, numpy, lz4, gsd, blosc2, pytest, maturin" 2>/dev/null; then
    echo "== making $venv with the pinned reference library"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/python/requirements.txt
fi
export RASDF_PYTHON="$venv/bin/python"
# A second venv with astropy, gwcs and roman_datamodels, to validate what rasdf writes
# against those packages' schemas.
astro="${RASDF_VENV_ASTRO:-$PWD/.venv-astro}"
if ! "$astro/bin/python" -c "import asdf_astropy, gwcs, roman_datamodels" 2>/dev/null; then
    echo "== making $astro with astropy, gwcs and roman_datamodels (pinned)"
    python3 -m venv "$astro"
    "$astro/bin/pip" install --quiet --disable-pip-version-check -r tests/python/requirements-astro.txt
fi
export RASDF_PYTHON_ASTRO="$astro/bin/python"
# Cross-tests fail instead of skipping when the venv is missing.
export RASDF_REQUIRE_PYTHON=1

# strace: the crash tests kill writers at chosen system calls with its fault injection.
if ! command -v strace >/dev/null; then
    echo "== installing strace"
    (apt-get update -qq && apt-get install -y -qq strace) >/dev/null
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "== cargo test"
cargo test --workspace --all-targets --quiet
cargo test --workspace --doc --quiet
echo "== cargo doc (broken links and other rustdoc warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

echo "== the Python package: pip install ./python (release build), then its tests"
PATH="$venv/bin:$PATH" "$venv/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation ./python
# pytest by its script, not `python -m`, so that the current folder (which holds the
# Rust crate's folder `rasdf/`) is not on the import path.
(cd python && "$venv/bin/pytest" -q -p no:cacheprovider tests)
