#!/usr/bin/env bash
# Layering check (docs/architecture.md#folders): every `#include "B/..."` in a source of folder A
# must point down the folder order
#   gnn/core -> util -> {data, gnn, hwmodel} -> tune -> segments -> sampling -> gst -> eval
#   -> report -> trainer -> api -> cli
# (B == A, or B earlier; on the shared level only hwmodel may include data), and each third-party
# API is included only by its one owner file or folder (docs/architecture.md#third-party-libraries).
# tests/<area>/ is checked as the folder it tests (core = gnn/core, hlo = data, mpi = trainer);
# tests/support/ and third-party includes in tests are exempt. Prints file:line and both folders
# for every violation and exits 1; exits 0 when there is none.
# Usage: scripts/check_layers.sh [repo root]   (default: the checkout this script is in)
set -euo pipefail
root=${1:-"$(dirname "$0")/.."}
cd "$root"

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files -co --exclude-standard -- '*.h' '*.hpp' '*.cpp' '*.cc' | grep -v '^build')
else
    files=$(find . -path ./build -prune -o -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' -o -name '*.cc' \) -print |
            sed 's|^\./||')
fi
[ -n "$files" ] || { echo "check_layers: no sources found under $(pwd)" >&2; exit 1; }

# shellcheck disable=SC2086
printf '%s\n' $files | while read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done | xargs awk '
BEGIN {
    order = "gnn/core -> util -> {data, gnn, hwmodel} -> tune -> segments -> sampling -> gst -> eval -> report -> trainer -> api -> cli"
    n = split("gnn/core:0 util:1 data:2 gnn:2 hwmodel:2 tune:3 segments:4 sampling:5 gst:6 eval:7 report:8 trainer:9 api:10 cli:11", kv, " ")
    for (i = 1; i <= n; i++) { split(kv[i], p, ":"); level[p[1]] = p[2] + 0 }
    same_level_ok["hwmodel>data"] = 1
    test_area["core"] = "gnn/core"; test_area["hlo"] = "data"; test_area["mpi"] = "trainer"
    # Third-party headers: pattern -> the owner (a file, or a folder ending in "/").
    nt = 0
    tp[++nt] = "^<mpi\\.h>$";              owner[nt] = "trainer/comm_mpi.cpp"
    tp[++nt] = "^<(hdf5|H5[A-Za-z_]*)\\.h>$"; owner[nt] = "data/h5_internal.h data/h5_file.cpp data/h5_attributes.cpp data/h5_dataset.cpp data/h5_group.cpp"
    tp[++nt] = "^<zip\\.h>$";              owner[nt] = "data/npz.cpp"
    tp[++nt] = "^<zlib\\.h>$";             owner[nt] = "data/npz.cpp"
    tp[++nt] = "^<(dnnl[^>]*|oneapi/dnnl/[^>]*)>$"; owner[nt] = "gnn/ops/dnnl_matmul.cpp"
    tp[++nt] = "^<xxhash\\.h>$";           owner[nt] = "gnn/core/hash.cpp"
    tp[++nt] = "^<omp\\.h>$";              owner[nt] = "gnn/core/parallel.cpp"
    tp[++nt] = "^<metis\\.h>$";            owner[nt] = "segments/partitioner_metis.cpp"
    tp[++nt] = "^<toml\\+\\+/";            owner[nt] = "trainer/config.cpp trainer/config_toml.h trainer/config_toml.cpp"
    tp[++nt] = "^<cxxopts\\.hpp>$";        owner[nt] = "cli/"
    tp[++nt] = "^<nlohmann/";              owner[nt] = "util/"
    tp[++nt] = "^<google/protobuf/";       owner[nt] = "data/hlo/"
    tp[++nt] = "^\"tuning_min\\.pb\\.h\"$"; owner[nt] = "data/hlo/proto_reader.cpp data/hlo/proto_convert.h data/hlo/proto_convert.cpp"
    tp[++nt] = "^<doctest/";               owner[nt] = "tests/"
    bad = 0
}
function folder_of(path,    c) {
    if (path ~ /^gnn\/core\//) return "gnn/core"
    split(path, c, "/")
    return c[1]
}
function owns(own, file,    o, i, m) {
    m = split(own, o, " ")
    for (i = 1; i <= m; i++) {
        if (o[i] ~ /\/$/ ? index(file, o[i]) == 1 : file == o[i]) return 1
    }
    return 0
}
function report(msg) { print FILENAME ":" FNR ": " msg; bad = 1 }
FNR == 1 {
    file = FILENAME; sub(/^\.\//, "", file)
    is_test = file ~ /^tests\//
    exempt = 0
    if (is_test) {
        split(file, c, "/")
        area = c[2]
        if (area == "support" || c[3] == "") { exempt = 1; src = "" }
        else { src = (area in test_area) ? test_area[area] : area; who = "tests/" area " (checked as " src ")" }
        if (!exempt && !(src in level)) report("tests/" area "/ has no folder to be checked against (add it to test_area in scripts/check_layers.sh)")
    } else {
        src = folder_of(file)
        who = "folder " src
    }
}
/^[ \t]*#[ \t]*include[ \t]*[<"]/ {
    line = $0
    sub(/^[ \t]*#[ \t]*include[ \t]*/, "", line)
    if (line ~ /^</) { inc = substr(line, 1, index(line, ">")) } else { inc = substr(line, 1, index(substr(line, 2), "\"") + 1) }
    for (i = 1; i <= nt; i++) {
        if (inc ~ tp[i]) {
            if (!owns(owner[i], file) && !(is_test && owner[i] != "tests/")) report(inc " is confined to " owner[i])
            next
        }
    }
    if (inc !~ /^"/ || exempt) next
    path = substr(inc, 2, length(inc) - 2)
    if (path !~ /\//) { if (src in level) report(inc ": includes are rooted at the repository root (\"folder/file.h\")"); next }
    if (path ~ /^segrank\//) {
        # include/segrank/: the installed public headers of the api folder
        dst = "api"
    } else if (path ~ /^tests\//) {
        if (!is_test) { report(who " includes " inc " (tests/ is for tests only)"); next }
        split(path, c, "/")
        if (c[2] == "support") next
        dst = (c[2] in test_area) ? test_area[c[2]] : c[2]
    } else {
        dst = folder_of(path)
    }
    if (!(src in level)) next   # a top-level file outside the library folders (none today)
    if (!(dst in level)) { report(who " includes " inc ": \"" dst "\" is not a library folder"); next }
    if (dst == src || level[dst] < level[src] || ((src ">" dst) in same_level_ok)) next
    if (level[dst] == level[src])
        report(who " includes " inc " of folder " dst ": same level, where only hwmodel may include data (" order ")")
    else
        report(who " includes " inc " of folder " dst ", which comes after it (" order ")")
}
END { exit bad }
' && status=0 || status=$?
if [ "$status" -ne 0 ]; then
    echo "check_layers: FAILED: includes must point down the folder order (docs/architecture.md#folders)" >&2
    exit 1
fi
echo "check_layers: ok ($(printf '%s\n' $files | wc -l) files)"
