#!/usr/bin/env bash
# Builds the libFuzzer targets under Fuzz/ and runs each for a bounded time (Fuzz/README.md).
#   scripts/fuzz.sh [SECONDS] [TARGET...]   SECONDS per target (default 30); all targets by default
# Builds in .build-fuzz (NETRES_FUZZER_LIBRARY adds the targets and instruments this package), so
# the ordinary .build is untouched; FUZZ_BUILD_PATH=.build builds in the ordinary one instead, reusing
# its compiled dependencies (NIO, BoringSSL, Yams: minutes of a fresh build) at the price of this
# package's own modules being compiled again by the next ordinary build (`make test` does this last). New inputs go to .build-fuzz/corpus/TARGET, never into the
# committed seeds; a crash, timeout or leak stops the run with a non-zero status and leaves the
# input in .build-fuzz/artifacts/TARGET/. Runs one target at a time (the machine is shared).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-30}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(FuzzSIPParser FuzzSIPFramer FuzzDigestChallenge FuzzSDP FuzzPolicyFile FuzzDaemonConfig)
[[ "$seconds" =~ ^[0-9]+$ ]] && [ "$seconds" -ge 1 ] && [ "$seconds" -le 86400 ] || {
    echo "fuzz: SECONDS must be a whole number from 1 to 86400, got '$seconds'" >&2
    exit 2
}
SWIFT="${SWIFT:-swift}"
scratch=.build-fuzz
build_path="${FUZZ_BUILD_PATH:-$scratch}"
# libFuzzer without its main (SwiftPM's executables bring their own), from the Swift toolchain.
toolchain="$(dirname "$(readlink -f "$(command -v "$SWIFT")")")/.."
# (Older compiler-rt layout first, then the per-target one.)
runtime="$(ls "$toolchain"/lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-"$(uname -m)".a \
    "$toolchain"/lib/clang/*/lib/"$(uname -m)"-*-linux-gnu/libclang_rt.fuzzer_no_main.a 2>/dev/null | head -1 || true)"
[ -n "$runtime" ] || { echo "fuzz: no libclang_rt.fuzzer_no_main in $toolchain/lib/clang" >&2; exit 1; }
export NETRES_FUZZER_LIBRARY="$runtime"

dictionary() {
    case "$1" in
        FuzzSIPParser | FuzzSIPFramer) echo Fuzz/Dictionaries/sip.dict ;;
        FuzzDigestChallenge) echo Fuzz/Dictionaries/digest.dict ;;
        FuzzSDP) echo Fuzz/Dictionaries/sdp.dict ;;
        FuzzPolicyFile | FuzzDaemonConfig) echo Fuzz/Dictionaries/yaml.dict ;;
        *) echo "fuzz: unknown target $1" >&2; exit 2 ;;
    esac
}

for target in "${targets[@]}"; do
    dictionary "$target" >/dev/null
    "$SWIFT" build --scratch-path "$build_path" --product "$target"
done
bin="$("$SWIFT" build --scratch-path "$build_path" --show-bin-path)"

for target in "${targets[@]}"; do
    mkdir -p "$scratch/corpus/$target" "$scratch/artifacts/$target" "$scratch/logs"
    log="$scratch/logs/$target.log"
    echo "fuzz: $target for ${seconds}s (log: $log)"
    # -timeout: one input taking 10 s is a hang; -rss_limit_mb: a leak or a runaway allocation.
    # Swift's own crash handler would keep libFuzzer's from saving the input.
    SWIFT_BACKTRACE=enable=no "$bin/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
        -dict="$(dictionary "$target")" -artifact_prefix="$scratch/artifacts/$target/" -print_final_stats=1 \
        "$scratch/corpus/$target" "Fuzz/Corpus/$target" >"$log" 2>&1 || {
        tail -n 40 "$log" >&2
        echo "fuzz: $target failed; the input is in $scratch/artifacts/$target/ (Fuzz/README.md: make it a regression test)" >&2
        exit 1
    }
    # A target that never hands its inputs to libFuzzer exits 0 having tested nothing.
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
    [ "${runs:-0}" -gt 0 ] || { echo "fuzz: $target ran no inputs (see $log)" >&2; exit 1; }
    echo "fuzz: $target: $runs inputs, $(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")/s, no failure"
done
