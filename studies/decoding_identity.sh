#!/usr/bin/env bash
# Greedy episodes of every reasoner route, written by one code tree, for the before/after check of the decoding
# layer (studies/decoding_identity.py compares two such folders). Routes: the torch reasoner (default), the
# llama.cpp engine (llamacpp:default), replay over the torch reasoner (replay:default, a fresh store: every step is
# decoded through it; then a second pass that reads every step back), llama.cpp's own OpenAI-compatible server on
# the embedded GGUF (text prompts) and the project's torch server (python -m agents.served.server, token-id prompts).
# Each: 40 held-out problems under three planner modes (none = one whole answer, fixed:3,8 = the default protocol,
# random = every strategy's lead-in and turn glue), greedy, 3 rounds of at most 32 tokens. ONLY=name,name runs a
# subset of the routes.
#
#   TREE=/path/to/checkout OUT=docs/decoding_results/after bash studies/decoding_identity.sh
#
# TREE is the code tree that decodes (default: this checkout); the venv's packages are used either way.
set -euo pipefail
TREE=${TREE:-$PWD}
OUT=$(realpath -m "${OUT:?set OUT to the folder the episodes go to}")
PORT=${PORT:-8131}
export PYTHONPATH="$TREE" OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
cd "$TREE"
ARGS=(--data curriculum:heldout --set data.seed=1000 --limit 40 --batch 16
      --set env.max_steps=3 --set reasoner.max_step_tokens=32 --max-answer-tokens 96 --no-plots --no-progress --no-resume)
mkdir -p "$OUT"
MODES=none,fixed:3,8,random
run() { local name=$1; shift; echo "== $name"; python -m algos.cli eval "$@" --modes "$MODES" "${ARGS[@]}" --out "$OUT/$name" >"$OUT/$name.log" 2>&1 \
        || { tail -20 "$OUT/$name.log"; exit 1; }; }
want() { [[ -z "${ONLY:-}" || ",$ONLY," == *",$1,"* ]]; }

want default && run default --reasoner default
want llamacpp && run llamacpp --reasoner llamacpp:default
if want replay; then
  STORE=$(mktemp -d); export RSIM_REPLAY_DIR=$STORE
  run replay --reasoner replay:default
  run replay_readback --reasoner replay:default
  rm -rf "$STORE"; unset RSIM_REPLAY_DIR
fi
if want served_llamacpp; then
  python -m agents.llamacpp.server --port "$PORT" --n-threads 1 --log-path "$OUT/llama_server.log" &
  SERVER=$!
  trap 'kill $SERVER 2>/dev/null || true' EXIT
  for _ in $(seq 120); do curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && break; sleep 1; done
  # not the random plans: one of their prompts is counted 157 tokens by llama.cpp's tokenizer and 158 by the HF one,
  # which the text route refuses (TokenizerMismatch) -- see docs/decoding.md
  MODES=none,fixed:3,8 run served_llamacpp --reasoner "openai:default@http://127.0.0.1:$PORT/v1"
  kill $SERVER; wait $SERVER 2>/dev/null || true
fi
if want served_torch; then
  python -m agents.served.server --model default --port "$PORT" >"$OUT/agents_serve.log" 2>&1 &
  SERVER=$!
  trap 'kill $SERVER 2>/dev/null || true' EXIT
  for _ in $(seq 120); do curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && break; sleep 1; done
  run served_torch --reasoner "openai:default@http://127.0.0.1:$PORT/v1#token_ids=1"
  kill $SERVER; wait $SERVER 2>/dev/null || true
fi
echo "done: $OUT"
