#!/usr/bin/env bash
# Cross `cargo check`s of the library, the Python package and the command line for
# Windows (x86_64-pc-windows-gnu) and macOS (x86_64-apple-darwin): CI builds and tests
# Linux only, so this is what keeps the other platforms compiling (see docs/testing.md).
#
# Needs the targets' standard libraries (`rustup target add ...`), and C compilers for
# the crates that build C (zstd-sys, libdeflate-sys, ring, libmimalloc-sys): MinGW-w64
# (`x86_64-w64-mingw32-gcc`, Debian's gcc-mingw-w64) for Windows, zig for macOS (on PATH,
# or `pip install ziglang` into .venv-zig, which this script makes when it is missing and
# PyPI answers). A platform whose tools are missing is skipped with a loud message, not
# failed: `--require` makes a skip an error.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
require=0
[ "${1:-}" = "--require" ] && require=1

skipped=()
failed=()
skip() {
    echo "!! SKIPPED $1: $2" >&2
    skipped+=("$1 ($2)")
}

installed="$(rustup target list --installed 2>/dev/null || true)"

# What each platform checks: the library with every feature (its tests, examples and
# benchmarks too) and with none, the Python package (the library with `remote` and
# `extra-codecs`), and the command line's library and binaries (its tests are Unix's:
# signals, FIFOs, resource limits, strace).
check_target() {
    local target="$1"
    local runs=(
        "-p rasdf --all-features --all-targets"
        "-p rasdf --no-default-features"
        "-p rasdf-python"
        "-p rasdf-cli"
    )
    for args in "${runs[@]}"; do
        echo "== cargo check --target $target $args"
        # shellcheck disable=SC2086
        if ! cargo check --quiet --target "$target" $args; then
            failed+=("$target: $args")
        fi
    done
}

# Windows, with MinGW-w64 for the C parts.
if ! grep -qx x86_64-pc-windows-gnu <<<"$installed"; then
    skip windows "the target x86_64-pc-windows-gnu is not installed (rustup target add x86_64-pc-windows-gnu)"
elif ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
    skip windows "no x86_64-w64-mingw32-gcc (apt-get install gcc-mingw-w64-x86-64)"
else
    check_target x86_64-pc-windows-gnu
fi

# macOS, with zig as the C compiler (scripts/cross/zig-cc-macos).
if ! grep -qx x86_64-apple-darwin <<<"$installed"; then
    skip macos "the target x86_64-apple-darwin is not installed (rustup target add x86_64-apple-darwin)"
else
    if ! command -v zig >/dev/null && ! "$root/.venv-zig/bin/python" -m ziglang version >/dev/null 2>&1; then
        echo "== making .venv-zig with zig (pip install ziglang), the C compiler for macOS"
        (python3 -m venv "$root/.venv-zig" \
            && "$root/.venv-zig/bin/pip" install --quiet --disable-pip-version-check ziglang) >/dev/null 2>&1 || true
    fi
    if command -v zig >/dev/null || "$root/.venv-zig/bin/python" -m ziglang version >/dev/null 2>&1; then
        export CC_x86_64_apple_darwin="$root/scripts/cross/zig-cc-macos"
        export AR_x86_64_apple_darwin="$root/scripts/cross/zig-ar"
        check_target x86_64-apple-darwin
    else
        skip macos "no zig (put it on PATH, or let pip install ziglang into .venv-zig)"
    fi
fi

echo "== platforms: ${#failed[@]} failed, ${#skipped[@]} skipped"
for f in "${failed[@]}"; do echo "!! FAILED $f" >&2; done
for s in "${skipped[@]}"; do echo "!! skipped $s" >&2; done
if [ "${#failed[@]}" -gt 0 ]; then
    exit 1
fi
if [ "$require" = 1 ] && [ "${#skipped[@]}" -gt 0 ]; then
    exit 1
fi
exit 0
