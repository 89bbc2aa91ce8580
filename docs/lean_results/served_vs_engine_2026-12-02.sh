#!/usr/bin/env bash
# The same 200 held-out problems under the plan fixed:3,8 (default protocol chat+lead, greedy), decoded two ways:
# through llama.cpp's OpenAI-compatible server (python -m llama_cpp.server, via agents.llamacpp.server) and by the
# in-process engine (llamacpp:default), both on the embedded SmolLM2-135M Q4_1 GGUF, one thread each; then paired.
# Run from the repository root with the venv active: bash docs/lean_results/served_vs_engine_2026-12-02.sh
# (about 20 min on 2 cores). The second served arm of docs/serving.md (llama_cpp.server's default repeat penalty)
# is the same served run with `--repeat-window 64` added to the agents.llamacpp.server line.
set -euo pipefail
export OMP_NUM_THREADS=1
PORT=${PORT:-8123}
RUNS=${RUNS:-runs/served_vs_engine}
ARGS=(--data curriculum:heldout --set data.seed=1000 --limit 200 --batch 16 --modes fixed:3,8 --set env.max_steps=2
      --set reasoner.max_step_tokens=48 --max-answer-tokens 144 --no-plots --no-progress)

python -m agents.llamacpp.server --port "$PORT" --n-threads 1 --log-path "$RUNS/llama_server.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 120); do curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && break; sleep 1; done
rsim eval --reasoner "openai:default@http://127.0.0.1:$PORT/v1" "${ARGS[@]}" --out "$RUNS/served"
kill $SERVER; wait $SERVER || true
rsim eval --reasoner llamacpp:default "${ARGS[@]}" --out "$RUNS/engine"
python -m benchmarks.plans.paired_eval --a "$RUNS/engine/results.json" --b "$RUNS/served/results.json" \
    --a-name engine --b-name server --out docs/lean_results/served_vs_engine_2026-12-02.json
