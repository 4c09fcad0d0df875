#!/bin/bash
# Both built-in models, the same prompts, the same machine, one run (issue 46): sweep and drift of
# builtin:glm4moe and builtin:qwen35 one after the other, then drift with MTP and its baseline both at
# -t 2 (the pinned llama-server under --serve: the baseline runs the command without its speculative
# options). Every command's raw output, its time and the load average before it go to OUT (default
# bench/results/built-in-models.txt).
#
#     bash bench/compare_built_in_models.sh [OUT]
set -u
out=${1:-bench/results/built-in-models.txt}
server=$(python -c "from mtpinspect.runtime.find import find_server; print(find_server(build=False).path)")
work=$(mktemp -d)
run() {
    echo "\$ $*"
    echo "# $(date -u +%H:%M:%S) UTC, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    local began=$SECONDS
    "$@" 2>&1
    echo "# exit $?, $((SECONDS - began)) s"
    echo
}
{
echo "# $(uname -m), $(nproc) cores, llama-server $server, $(date -u +%F)"
for model in glm4moe qwen35; do
    run mtpinspect sweep builtin:$model --n-max 1,2,3 --repeat 1 --n-predict 64 --format md --no-plot \
        --out "$work/sweep-$model" -- -t 2
done
for model in glm4moe qwen35; do
    run mtpinspect drift builtin:$model --n-predict 300 --n-max 2 --format md --out "$work/drift-$model"
done
for model in glm4moe qwen35; do
    OMP_WAIT_POLICY=passive run mtpinspect drift builtin:$model --engine llama.cpp --n-predict 300 --n-max 2 --threads 0 --format md \
        --out "$work/drift-t2-$model" \
        --serve "$server -m {model} --port {port} -c 8192 -t 2 --spec-type draft-mtp --spec-draft-n-max {n}"
done
} > "$out"
echo "$out (work files in $work)"
