#!/usr/bin/env bash
# Fuzz every target for SECONDS each (default 1800), seeded with the repository's
# fixtures. Needs cargo-fuzz; on a stable toolchain RUSTC_BOOTSTRAP=1 enables the
# sanitizer flags. Crashes land in fuzz/artifacts/<target>/: copy each to
# testdata/fuzz/<target>/ so `cargo test` replays it, then fix it.
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-1800}"
targets="${2:-header tree block_header block_walk index open_all roundtrip convert_ra convert_gsd convert_b2nd lz4_encode codecs}"
export RUSTC_BOOTSTRAP=1
for t in $targets; do
    mkdir -p "corpus/$t"
    find ../testdata -name '*.asdf' -size -200k -exec cp {} "corpus/$t/" \;
    [ "$t" = convert_ra ] && find ../testdata/ra -name '*.ra' -exec cp {} "corpus/$t/" \;
    [ "$t" = convert_gsd ] && find ../testdata/gsd -name '*.gsd' -exec cp {} "corpus/$t/" \;
    [ "$t" = convert_b2nd ] && find ../testdata/b2nd -name '*.b2nd' -exec cp {} "corpus/$t/" \;
    cargo fuzz run -O "$t" "corpus/$t" -- -dict=asdf.dict -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 || echo "== $t: crashed, see artifacts/$t"
done
