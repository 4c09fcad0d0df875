#!/usr/bin/env bash
# Reproduce for llama.cpp maintainers: llama-server (commit 0c1e570, as vendored in llama-cpp-python
# 0.3.36) crashes with SIGSEGV while it sets up --spec-type draft-mtp when the MTP head is Q8_0 or Q4_0,
# on some AVX-512 CPUs; --no-repack (no CPU extra buffer types) avoids it, and F32/TQ1_0 heads never crash.
# Seen on a 2-core x86_64 machine with avx512f/bw/dq/vl/ifma/vbmi; not on an AMD EPYC with AVX512_VNNI and
# AVX512_BF16 but no AMX. The ggml "system_info" line printed below says which CPU features the build uses
# (printed at -lv 4; AMX_INT8 = 1 means ggml's AMX buffer type takes Q4_0/Q8_0 weights; REPACK = 1 the generic repack).
#
# Needs: pip install mtpinspect (writes the 0.5 MB test GGUF with gguf-py), and a llama-server:
#   LLAMA_SERVER=/path/to/llama-server bash docs/repro-mtp-quantized-head-crash.sh [runs]
set -u
server=${LLAMA_SERVER:-$(mtpinspect runtime --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["path"])')}
runs=${1:-5}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
echo "flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx512|amx)' | tr '\n' ' ')"
"$server" --version 2>&1 | head -1

for head in q8_0 q4_0 f32; do
  mtpinspect tiny-model --head-type "$head" "$dir/$head.gguf" > /dev/null
  for extra in "" "--no-repack"; do
    crashed=0 failed=0
    for i in $(seq "$runs"); do
      log="$dir/$head-$i.log"
      # --port 0 is not accepted; a port per run avoids clashes between runs.
      timeout 60 "$server" -m "$dir/$head.gguf" --spec-type draft-mtp --spec-draft-n-max 3 -t 1 -np 1 -lv 4 \
        --host 127.0.0.1 --port $((20000 + RANDOM % 20000)) $extra > "$log" 2>&1 &
      pid=$!
      for _ in $(seq 50); do grep -q "listening on\|model loaded" "$log" && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
      if kill -0 $pid 2>/dev/null; then kill $pid; wait $pid 2>/dev/null; continue; fi
      wait $pid; code=$?
      # 128 + N: killed by signal N (139 SIGSEGV, 134 SIGABRT); anything else is a failed start, not a crash.
      if [ $code -gt 128 ]; then crashed=$((crashed + 1)); last=$log; lastcode=$code
      else failed=$((failed + 1)); echo "  failed start (exit $code): $(grep -E ' E |error' "$log" | tail -1)"; fi
    done
    echo "head $head ${extra:-(default)}: crashed $crashed of $runs starts, $failed failed without a crash"
    if [ "$crashed" -gt 0 ]; then
      grep -m1 "system_info" "$last"
      grep -E "model buffer size|initializing|GGML_ASSERT|Segmentation" "$last" | tail -4
      echo "  exit status of the last crash: $lastcode (128 + signal number)"
    fi
  done
done
