#!/usr/bin/env bash
# The fast tier, for the inner loop: cargo fmt --check, clippy with warnings as errors,
# the Rust tests (cargo-nextest when installed) with the cross-tests against .venv, and
# the Python package's tests in .venv alone. What it leaves to scripts/test.sh (the whole
# run, as CI): doc tests, cargo doc, the wheel's tag check and fresh-venv smoke test,
# .venv-astro and the older asdf venvs (their tests skip here).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venvs.sh

main_venv
if ! command -v strace >/dev/null; then
    echo "warning: strace is missing: the crash tests skip (apt-get install strace)" >&2
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "== Rust tests"
if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --workspace --all-targets --cargo-quiet --status-level fail --final-status-level fail
else
    cargo test --workspace --all-targets --quiet
fi

echo "== the Python package: the portable wheel of scripts/test.sh (one build serves both), installed in .venv, then its tests"
build_wheel --release --zig --compatibility manylinux2014
install_wheel "$venv"
# pytest by its script, not `python -m`, so that the current folder (which holds the
# Rust crate's folder `rasdf/`) is not on the import path.
(cd python && "$venv/bin/pytest" -q -p no:cacheprovider tests)
