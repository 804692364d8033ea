# Sourced (not run) by scripts/test.sh and scripts/test-fast.sh, from the repository's
# root: the tests' Python venvs with pinned versions, each made on first use, and the
# Python package's wheel.

hook_asdf_versions="4.0.0 4.5.0 5.4.0"

# ensure_venv DIR REQUIREMENTS IMPORTS WHAT: makes DIR from REQUIREMENTS unless its Python
# already imports IMPORTS (Python code).
ensure_venv() {
    local dir=$1 requirements=$2 imports=$3 what=$4
    if ! "$dir/bin/python" -c "$imports" 2>/dev/null; then
        echo "== making $dir ($what)"
        python3 -m venv "$dir"
        "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    fi
}

# .venv (or $RASDF_VENV): the pinned reference library for the cross-tests and the
# Python package's tests, with maturin and ziglang to build the wheel. Sets $venv.
main_venv() {
    venv="${RASDF_VENV:-$PWD/.venv}"
    ensure_venv "$venv" tests/python/requirements.txt \
        "import asdf, numpy, lz4, gsd, blosc2, pytest, maturin, ziglang, dask, distributed, asdf_compression, blosc, zstandard, mypy, aiohttp, requests" \
        "the pinned reference library"
    export RASDF_PYTHON="$venv/bin/python"
}

# .venv-astro (or $RASDF_VENV_ASTRO): astropy, gwcs and roman_datamodels, to validate what
# rasdf writes against those packages' schemas, and stdatamodels, to read ASDF-in-FITS
# files. Sets $astro.
astro_venv() {
    astro="${RASDF_VENV_ASTRO:-$PWD/.venv-astro}"
    ensure_venv "$astro" tests/python/requirements-astro.txt \
        "import asdf_astropy, gwcs, roman_datamodels, stdatamodels, pytest" \
        "astropy, gwcs, roman_datamodels and stdatamodels, pinned"
    export RASDF_PYTHON_ASTRO="$astro/bin/python"
}

# .venv-asdf-V for each V of $hook_asdf_versions: the asdf.open hook is tested under every
# asdf it claims.
hook_venvs() {
    local v
    for v in $hook_asdf_versions; do
        ensure_venv "$PWD/.venv-asdf-$v" "tests/python/requirements-asdf-$v.txt" \
            "import asdf, pytest; assert asdf.__version__ == '$v'" "asdf $v, pinned"
    done
}

# build_wheel [MATURIN BUILD OPTION]...: the Python package's wheel alone in
# target/wheels/python, built with $venv's maturin (and ziglang, for --zig). Sets $wheel.
build_wheel() {
    rm -rf target/wheels/python
    (cd python && PATH="$venv/bin:$PATH" "$venv/bin/maturin" build --quiet --out ../target/wheels/python "$@")
    local built=(target/wheels/python/rasdf-*.whl)
    if [ "${#built[@]}" -ne 1 ] || [ ! -f "${built[0]}" ]; then
        echo "error: expected one wheel in target/wheels/python, found: ${built[*]}" >&2
        return 1
    fi
    wheel="$PWD/${built[0]}"
}

# install_wheel VENV...: $wheel in each VENV, in place of what was there.
install_wheel() {
    local v
    for v in "$@"; do
        "$v/bin/pip" install --quiet --disable-pip-version-check --no-deps --force-reinstall "$wheel"
    done
}
