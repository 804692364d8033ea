#!/usr/bin/env bash
# The whole test suite. On a fresh machine it first makes the Python venvs with pinned
# versions (scripts/venvs.sh): .venv with the reference library for the cross-tests,
# .venv-astro and one .venv-asdf-* for each older asdf the hook claims.
# System tools come from .ci/run (strace); this script only checks they are there.
# The inner loop's fast tier is scripts/test-fast.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venvs.sh
# A whole run builds once: no incremental caches, and line tables only for debug info
# (backtraces keep their lines): the target folder is a third the size, which matters
# on a CI machine's small disk.
export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only
root="$PWD"

# strace: the crash tests kill writers at chosen system calls with its fault injection.
if ! command -v strace >/dev/null; then
    echo "error: strace is missing, and the crash tests need it: apt-get install strace (.ci/run installs it)" >&2
    exit 1
fi

main_venv
astro_venv
hook_venvs
# Cross-tests fail instead of skipping when the venv is missing.
export RASDF_REQUIRE_PYTHON=1

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "== cargo test"
cargo test --workspace --all-targets --quiet
cargo test --workspace --doc --quiet
echo "== the library without its default features (plain code: the same results)"
cargo clippy -p rasdf --no-default-features --all-targets --quiet -- -D warnings
cargo test -p rasdf --no-default-features --lib --test reference_files --test api --quiet
echo "== other platforms: cargo check for Windows and macOS (a platform without its tools is skipped, loudly)"
bash scripts/check-platforms.sh
echo "== cargo doc (broken links and other rustdoc warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

echo "== the Python package: a portable wheel (manylinux2014, abi3; release build, zig as linker)"
build_wheel --release --zig --compatibility manylinux2014
arch=$(uname -m)
case "$(basename "$wheel")" in
    rasdf-*-cp39-abi3-manylinux2014_"$arch".manylinux_2_17_"$arch".whl | \
        rasdf-*-cp39-abi3-manylinux_2_17_"$arch".manylinux2014_"$arch".whl) echo "$(basename "$wheel")" ;;
    *)
        echo "error: $(basename "$wheel") is not a cp39-abi3-manylinux2014 wheel for $arch" >&2
        exit 1
        ;;
esac
echo "== the wheel alone in a fresh venv (numpy only): import, read, write, read back"
wheel_venv="$root/target/wheel-venv"
rm -rf "$wheel_venv"
python3 -m venv "$wheel_venv"
"$wheel_venv/bin/pip" install --quiet --disable-pip-version-check --only-binary :all: \
    -r tests/python/requirements-wheel.txt "$wheel"
# From a folder outside the repository, so that only the installed package can be imported.
(cd "$wheel_venv" && "$wheel_venv/bin/python" "$root/tests/python/wheel_smoke.py" "$root/testdata/example.asdf")
rm -rf "$wheel_venv"

echo "== the same wheel installed in each venv, then the Python package's tests"
install_wheel "$venv" "$astro" $(for x in $hook_asdf_versions; do echo "$root/.venv-asdf-$x"; done)
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
hook_tests="tests/test_asdf_hook.py tests/test_asdf_hook_blocks.py tests/test_asdf_hook_yaml.py tests/test_asdf_hook_writes.py tests/test_asdf_hook_walk.py tests/test_asdf_hook_valid.py"
(cd python && RASDF_HOOK_ASTRO=1 "$astro/bin/pytest" -q -p no:cacheprovider $hook_tests)
for v in $hook_asdf_versions; do
    (cd python && "$root/.venv-asdf-$v/bin/pytest" -q -p no:cacheprovider $hook_tests)
done
echo "== asdf's own test suite, the hook installed for the whole run"
# From a folder of its own: `python -m` puts the current folder on the import path, and
# python/ holds the package's source without its compiled module.
suite="$(mktemp -d)"
(cd "$suite" && "$venv/bin/python" -m rasdf.asdf_hook -m pytest --pyargs asdf -q -p no:cacheprovider)
rm -rf "$suite"
