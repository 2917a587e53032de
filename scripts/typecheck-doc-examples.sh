#!/usr/bin/env bash
# Typechecks every compiled copy of a documentation block (`// doc:begin` … `// doc:end`, see
# Tests/README.md) as code outside this package would see it: against the built modules with
# another package name, so a block that uses a `package` or internal symbol fails here, while the
# test targets (members of this package) would compile it. Each test source's regions are checked
# together with that source's imports and DocumentationTests/DocContext.swift (the stand-ins the
# pages assume). Run after `swift build --build-tests`; takes a few seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
bin=$($SWIFT build --show-bin-path)
modules="$bin/Modules"
[ -d "$modules" ] || { echo "typecheck-doc-examples: no $modules; run swift build --build-tests first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# C modules (ours, NIO's, BoringSSL's) as a client's compiler finds them.
flags=(-typecheck -swift-version 6 -package-name doc_reader_outside -module-name DocReader -I "$modules")
while IFS= read -r map; do flags+=(-Xcc "-fmodule-map-file=$map"); done < <(
    find "$bin" -maxdepth 2 -name module.modulemap; find Sources -name module.modulemap)
while IFS= read -r dir; do flags+=(-Xcc "-I$dir"); done < <(find .build/checkouts Sources -type d -name include)
flags+=(-Xcc -I/usr/include/libnl3)

# One module per test target, as there: its sources' imports, then their regions.
checked=0
for target in $(grep -rl --include='*.swift' '// doc:begin ' Tests | grep -v DocBlocks | cut -d/ -f2 | sort -u); do
    sources=$(grep -rl --include='*.swift' '// doc:begin ' "Tests/$target" | grep -v DocBlocks | sort)
    out="$work/$target.swift"
    {
        grep -hE '^(public |internal |package )?import ' $sources | sort -u
        for source in $sources; do
            awk '/\/\/ doc:begin /{inside=1; next} /\/\/ doc:end/{inside=0} inside' "$source" \
                | grep -vE '^(public |internal |package )?import '
        done
    } > "$out"
    if ! "${SWIFTC:-swiftc}" "${flags[@]}" "$out" Tests/DocumentationTests/DocContext.swift > "$work/log" 2>&1; then
        echo "typecheck-doc-examples: the documentation copies in Tests/$target do not compile outside the package" >&2
        echo "($(echo $sources)):" >&2
        head -n 60 "$work/log" >&2
        exit 1
    fi
    checked=$((checked + $(echo "$sources" | wc -l)))
done
echo "typecheck-doc-examples: the documentation copies of $checked test sources compile as outside code"
