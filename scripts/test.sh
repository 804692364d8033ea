#!/usr/bin/env bash
# The whole test suite. On a fresh machine it first makes the Python venv (.venv) with the
# pinned reference library (tests/python/requirements.txt) for the cross-tests.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${RASDF_VENV:-$PWD/.venv}"
if ! "$venv/bin/python" -c "import asdf, numpy, lz4, gsd, blosc2, pytest, maturin, dask, distributed, asdf_compression, blosc, zstandard, mypy, syrupy, aiohttp, requests" 2>/dev/null; then
    echo "== making $venv with the pinned reference library"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/python/requirements.txt
fi
export RASDF_PYTHON="$venv/bin/python"
# A second venv with astropy, gwcs and roman_datamodels, to validate what rasdf writes
# against those packages' schemas, and stdatamodels, to read ASDF-in-FITS files.
astro="${RASDF_VENV_ASTRO:-$PWD/.venv-astro}"
if ! "$astro/bin/python" -c "import asdf_astropy, gwcs, roman_datamodels, stdatamodels, pytest" 2>/dev/null; then
    echo "== making $astro with astropy, gwcs, roman_datamodels and stdatamodels (pinned)"
    python3 -m venv "$astro"
    "$astro/bin/pip" install --quiet --disable-pip-version-check -r tests/python/requirements-astro.txt
fi
export RASDF_PYTHON_ASTRO="$astro/bin/python"
# The asdf.open hook is tested under every asdf it claims: a small venv for each older one.
hook_asdf_versions="4.0.0 4.5.0 5.4.0"
for v in $hook_asdf_versions; do
    if ! "$PWD/.venv-asdf-$v/bin/python" -c "import asdf, pytest; assert asdf.__version__ == '$v'" 2>/dev/null; then
        echo "== making .venv-asdf-$v (asdf $v, pinned)"
        python3 -m venv "$PWD/.venv-asdf-$v"
        "$PWD/.venv-asdf-$v/bin/pip" install --quiet --disable-pip-version-check -r "tests/python/requirements-asdf-$v.txt"
    fi
done
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

echo "== the Python package: its wheel (release build), installed in each venv, then its tests"
rm -rf target/wheels/python
(cd python && PATH="$venv/bin:$PATH" "$venv/bin/maturin" build --quiet --release --out ../target/wheels/python)
for v in "$venv" "$astro" $(for x in $hook_asdf_versions; do echo "$PWD/.venv-asdf-$x"; done); do
    "$v/bin/pip" install --quiet --disable-pip-version-check --no-deps --force-reinstall target/wheels/python/rasdf-*.whl
done
# pytest by its script, not `python -m`, so that the current folder (which holds the
# Rust crate's folder `rasdf/`) is not on the import path.
(cd python && "$venv/bin/pytest" -q -p no:cacheprovider tests)
echo "== ASDF-in-FITS files read by rasdf.open against stdatamodels"
(cd python && RASDF_FITS_REFERENCE=1 "$astro/bin/pytest" -q -p no:cacheprovider tests/test_fits.py)
echo "== rasdf.validate with the extensions asdf has installed (astropy, gwcs, Roman)"
(cd python && RASDF_VALIDATE_ASTRO=1 "$astro/bin/pytest" -q -p no:cacheprovider tests/test_validate.py)
echo "== copies and trees of real files, and writes of astropy, gwcs and Roman objects, judged by asdf with those extensions"
(cd python && RASDF_COPIES_ASTRO=1 RASDF_WRITE_ASTRO=1 "$astro/bin/pytest" -q -p no:cacheprovider tests/test_copies.py tests/test_astro_writes.py)
echo "== the asdf hook under asdf with astropy, gwcs and Roman, and under asdf $hook_asdf_versions"
hook_tests="tests/test_asdf_hook.py tests/test_asdf_hook_blocks.py tests/test_asdf_hook_yaml.py"
(cd python && RASDF_HOOK_ASTRO=1 "$astro/bin/pytest" -q -p no:cacheprovider $hook_tests)
root="$PWD"
for v in $hook_asdf_versions; do
    (cd python && "$root/.venv-asdf-$v/bin/pytest" -q -p no:cacheprovider $hook_tests)
done
echo "== asdf's own test suite, the hook installed for the whole run"
# From a folder of its own: `python -m` puts the current folder on the import path, and
# python/ holds the package's source without its compiled module.
suite="$(mktemp -d)"
(cd "$suite" && "$venv/bin/python" -m rasdf.asdf_hook -m pytest --pyargs asdf -q -p no:cacheprovider)
rm -rf "$suite"
