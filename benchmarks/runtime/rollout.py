"""Multi-turn reasoner rollout speed: cached turns vs re-encoding vs one raw ``generate``.

Three ways to produce the same number of new tokens for a batch of conversations:

* **(a) cached** — :class:`agents.reasoner.Reasoner`: one KV cache across all turns, each turn
  feeds only the new injection (+ delimiter) tokens, our own batched decode loop;
* **(b) naive** — every turn re-renders the conversation text, re-tokenises it and calls
  ``model.generate`` on the whole thing (what a straightforward implementation does);
* **(c) generate** — a single ``model.generate`` writing all ``rounds * tokens_per_round`` tokens
  at the same batch size (an upper bound: no turns, no injections).

To keep it fair every turn writes exactly ``tokens_per_round`` tokens in (a) and (b) (delimiter
stop off, ``min_new_tokens`` = ``max_new_tokens``), all greedy, fp32, same batch. Also runs (d), a
full EnvGroup rollout (``batch // 4`` problems x G=4 copies) with an LLM planner and the reasoner
on the same model (greedy reasoner, stop at delimiter), twice: with prefix sharing (each distinct
prompt and planner header is prefilled once and its KV copied to the G copies) and without; they
must write the same tokens. ``prefix_sharing_speedup`` is the second's time over the first's.

(e) repeats (a) with frozen-model variants that read fewer bytes per token: the weights cast to
bf16, and dynamic int8 quantisation of the linear layers (``torch.ao``); each reports tokens/s,
raw ``generate`` on the same copy (so the gain of the weights is not credited to our loop), its
tolerance — on (a)'s own fp32 sequences, the share of generated positions where the variant's
argmax is fp32's token (teacher-forced; fp32's own batched-vs-full-forward agreement is given as
the floor) — and the share of its greedy tokens before its first split from fp32.

(f) repeats (a) on the llama.cpp engine (:mod:`agents.llamacpp.reasoner`, same threads) for each GGUF of ``--engine``
(by default the shipped Q4_1 file, which ``llamacpp:default`` decodes, then its Q8_0 copy, ``llamacpp:q8_0``),
each in ``f_engines``;
the first also gives ``engine_tok_s``, ``engine_vs_generate`` (÷ (c)'s fp32 ``generate``, same batch) and
``engine_lp_mismatch`` (mean |Δ log p| per generated token vs torch fp32 scoring the engine's tokens).

    python -m benchmarks.runtime.rollout --out results/rollout.json [--model default]
"""

from __future__ import annotations

import json
import resource
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil
import torch

from agents.hf.loading import load_causal_lm, tiny_model
from rsim_env.strategies import STRATEGIES, TERMINATION
from agents.planners.llm import Planner, PlannerConfig
from agents.reasoner import Reasoner, ReasonerConfig
from algos.rollout import rollout
from rsim_env import Problem
from rsim_env.group import EnvGroup
from rsim_env.render import STEP_DELIMITER, injection, reasoner_chat

QUESTIONS = [
    "What is 17 * 23?",
    "A shop sells pencils at 3 for $1. How much do 27 pencils cost?",
    "Solve for x: 3x + 7 = 25.",
    "What is the sum of the first 20 positive integers?",
    "A rectangle has perimeter 30 and width 5. What is its area?",
    "If a train travels 180 km in 2.5 hours, what is its average speed in km/h?",
    "What is 15% of 240?",
    "How many minutes are there in 3.75 hours?",
]
ANSWERS = ["391", "9", "6", "210", "50", "72", "36", "225"]


@dataclass(frozen=True)
class BenchConfig:
    """Benchmark settings."""

    model: str = "default"
    """Model spec for both agents (see agents.hf.loading)."""
    batch: int = 8
    """Conversations decoded together."""
    rounds: int = 6
    """Turns per conversation."""
    tokens_per_round: int = 48
    """New tokens written per turn (forced, so all variants write the same number)."""
    out: str | None = None
    """JSON result path (None: do not write)."""
    skip_rollout: bool = False
    """Skip (d), the full planner + reasoner EnvGroup rollout."""
    threads: int = 0
    """torch intra-op threads, also the engine's; 0: as ``rsim`` chooses (algos.threads.resolve_threads:
    ``OMP_NUM_THREADS`` if set, else the physical cores other jobs leave idle by the 1-minute load). On this 2-core
    machine, alone, two threads decoded batch 8 1.6-1.7x faster than one under libgomp's own spin (a bare
    ``python``'s), but no faster under ``OMP_WAIT_POLICY=PASSIVE``, and slower than one next to another busy job
    (``python -m studies.decode_threads``, docs/lean.md "Threads for decoding"): so two alone, one beside a job."""
    variants: tuple[str, ...] = ("bf16", "int8")
    """(e) frozen-model variants of (a) to measure: "bf16", "int8", "compile" (torch.compile, slow to build);
    on the command line a comma list, "" = none."""
    engine: str = "default,q8_0"
    """(f) GGUF files the llama.cpp engine decodes, a comma list, the first giving ``engine_vs_generate``: paths or
    "default" (what ``llamacpp:default`` decodes: the embedded file as shipped), "q4_1" (the same), "q8_0" (its Q8_0
    copy, ``llamacpp:q8_0``, :func:`agents.embedded.embedded_engine_gguf_path`) -- these three only with model "default" -- each optionally
    with Engine options, e.g. "q8_0#threads=2&unified=1"; "" = skip; needs ``rsim[llamacpp]``."""

    def __post_init__(self):
        for name in ("batch", "rounds", "tokens_per_round"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")


class PeakRSS:
    """Samples this process's RSS every 10 ms in a thread; ``peak_mib`` after the block."""

    def __enter__(self):
        self.proc, self.peak, self.running = psutil.Process(), 0, True
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()
        return self

    def _loop(self):
        while self.running:
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(0.01)

    def __exit__(self, *exc):
        self.running = False
        self.thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)
        self.peak_mib = self.peak / 2**20


def plans(cfg: BenchConfig) -> list[list[int]]:
    """Per copy: a cycle through the non-terminating strategies, then termination at the last round."""
    others = [s.index for s in STRATEGIES if s.index != TERMINATION]
    return [[others[(c + t) % len(others)] if t < cfg.rounds - 1 else TERMINATION for t in range(cfg.rounds)]
            for c in range(cfg.batch)]


class InjectionReads:
    """Context: time the forwards that read later rounds' injections (multi-token feeds into a non-empty
    cache) -- the work (a) does that (c) never does (it reads no injections)."""

    def __enter__(self):
        from agents.hf.kv import KVBatch

        self.cls, self.orig, self.seconds, self.tokens = KVBatch, KVBatch.feed, 0.0, 0
        timer = self

        def feed(kv, new_tokens):
            if not (kv.columns and max(len(t) for t in new_tokens) > 1):
                return timer.orig(kv, new_tokens)
            t0 = time.perf_counter()
            out = timer.orig(kv, new_tokens)
            timer.seconds += time.perf_counter() - t0
            timer.tokens += sum(len(t) for t in new_tokens)
            return out

        KVBatch.feed = feed
        return self

    def __exit__(self, *exc):
        self.cls.feed = self.orig


def run_cached(model, tok, cfg: BenchConfig, keep: list | None = None) -> int:
    reasoner = Reasoner(model, tok, ReasonerConfig(max_step_tokens=cfg.tokens_per_round, greedy=True,
                                                   stop_at_delimiter=False, cache_capacity=1024))
    reasoner.reset(cfg.batch)
    strat = plans(cfg)
    for t in range(cfg.rounds):
        obs = [{"question": QUESTIONS[c % len(QUESTIONS)], "round": t, "strategy": strat[c][t],
                "injected": injection(t, strat[c][t]), "prompt": ""} for c in range(cfg.batch)]
        reasoner.act(list(range(cfg.batch)), obs)
    if keep is not None:
        keep.extend(reasoner.records())
    return sum(sum(r.gen_mask) for r in reasoner.records())


VARIANTS = {"bf16": "bfloat16", "int8": "int8", "compile": "compile"}
"""(e)'s variant names and the ``model.frozen`` choice each one measures."""


def frozen_variant(model, name: str):
    """A frozen copy of ``model`` for sampling only, built as ``model.frozen`` builds it (agents.registry.freeze)."""
    import copy

    from agents.registry import freeze

    if name not in VARIANTS:
        raise ValueError(f"unknown variant {name!r}: use one of {sorted(VARIANTS)}")
    return freeze(copy.deepcopy(model).eval(), VARIANTS[name])


def same_token_share(a: list, b: list) -> float:
    """Share of generated positions where two greedy runs wrote the same token (up to the first split, then 0)."""
    same = total = 0
    for ra, rb in zip(a, b):
        ga = [t for t, m in zip(ra.input_ids, ra.gen_mask) if m]
        gb = [t for t, m in zip(rb.input_ids, rb.gen_mask) if m]
        total += len(ga)
        for x, y in zip(ga, gb):
            if x != y:
                break
            same += 1
    return same / max(1, total)


def run_naive(model, tok, cfg: BenchConfig) -> int:
    tok.padding_side = "left"
    strat = plans(cfg)
    steps: list[list[str]] = [[] for _ in range(cfg.batch)]
    generated = 0
    for t in range(cfg.rounds):
        texts = []
        for c in range(cfg.batch):
            chat = reasoner_chat(QUESTIONS[c % len(QUESTIONS)], steps[c], strat[c][:t], strat[c][t])
            texts.append(tok.apply_chat_template(chat, continue_final_message=True, tokenize=False))
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        out = model.generate(**enc, max_new_tokens=cfg.tokens_per_round, min_new_tokens=cfg.tokens_per_round,
                             do_sample=False, pad_token_id=tok.pad_token_id)
        new = out[:, enc["input_ids"].shape[1]:]
        generated += new.numel()
        for c in range(cfg.batch):
            steps[c].append(tok.decode(new[c], skip_special_tokens=True).replace(STEP_DELIMITER, "\n").strip())
    return generated


def run_generate(model, tok, cfg: BenchConfig) -> int:
    tok.padding_side = "left"
    strat = plans(cfg)
    texts = [tok.apply_chat_template(reasoner_chat(QUESTIONS[c % len(QUESTIONS)], [], [], strat[c][0]),
                                     continue_final_message=True, tokenize=False) for c in range(cfg.batch)]
    enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    n = cfg.rounds * cfg.tokens_per_round
    out = model.generate(**enc, max_new_tokens=n, min_new_tokens=n, do_sample=False, pad_token_id=tok.pad_token_id)
    return out[:, enc["input_ids"].shape[1]:].numel()


def run_full_rollout(cfg: BenchConfig, model, tok, backbone, share: bool) -> dict:
    torch.manual_seed(0)  # the same fresh head in both runs
    planner = Planner(backbone, tok, PlannerConfig(seed=0, share_prefill=share))
    reasoner = Reasoner(model, tok, ReasonerConfig(max_step_tokens=cfg.tokens_per_round, greedy=True,
                                                   share_prefill=share))
    problems = [Problem(id=str(i), question=q, answer=a) for i, (q, a) in enumerate(zip(QUESTIONS, ANSWERS))]
    groups = max(1, cfg.batch // 4)
    copies = [EnvGroup([problems[i]], cfg.batch // groups, max_steps=cfg.rounds) for i in range(groups)]
    out = rollout(copies, reasoner, planner, seed=0)
    tokens = sum(sum(tr["reasoner"].gen_mask) for tr in out.trajectories)
    return {"tokens": tokens, "rounds": out.stats["rounds"], "planner_s": out.stats["seconds"]["planner"],
            "reasoner_s": out.stats["seconds"]["reasoner"], "groups": groups, "group_size": cfg.batch // groups,
            "_ids": [tr["reasoner"].input_ids for tr in out.trajectories]}


def timed(fn) -> tuple[dict, float, float]:
    with PeakRSS() as mem:
        t0 = time.perf_counter()
        out = fn()
        seconds = time.perf_counter() - t0
    return out, seconds, mem.peak_mib


def run_rollouts(cfg: BenchConfig, model, tok, results: dict) -> None:
    """(d) the full G-copy rollout with and without prefix sharing (same tokens required)."""
    backbone = model.get_decoder()  # the planner reads the same weights (as with LoRA on one base)
    ids = {}
    for share, key in ((True, "d_rollout_shared_prefill"), (False, "d_rollout_separate_prefill")):
        full, seconds, peak = timed(lambda share=share: run_full_rollout(cfg, model, tok, backbone, share))
        ids[share] = full.pop("_ids")
        results[key] = {**full, "seconds": seconds, "tokens_per_s": full["tokens"] / seconds, "peak_rss_mib": peak}
        print(f"[bench] {key}: {full['tokens']} tokens in {seconds:.1f} s", flush=True)
    results["prefix_sharing_same_tokens"] = ids[True] == ids[False]
    results["prefix_sharing_speedup"] = (results["d_rollout_separate_prefill"]["seconds"]
                                         / results["d_rollout_shared_prefill"]["seconds"])


def argmax_agreement(variant, records: list) -> float:
    """Teacher-forced tolerance: on the fp32 run's own sequences, the share of generated positions
    where ``variant``'s argmax (special tokens suppressed, as in decoding) is the fp32 greedy token."""
    from agents.hf.sampling import right_pad

    first = records[0]
    ids, mask = right_pad([r.input_ids for r in records], first.pad_id)
    gen = right_pad([r.gen_mask for r in records], 0)[0].bool()
    gen[:, 0] = False
    with torch.inference_mode():
        logits = variant(input_ids=ids, attention_mask=mask).logits.float()
    logits[..., list(first.suppressed_ids)] = float("-inf")
    pred = logits[:, :-1].argmax(-1)
    hit = (pred == ids[:, 1:]) & gen[:, 1:]
    return float(hit.sum() / gen[:, 1:].sum())


def run_variants(cfg: BenchConfig, model, tok, results: dict, reference: list) -> None:
    """(e) (a) on frozen bf16 / int8 / compiled copies; tolerance = teacher-forced argmax agreement with fp32."""
    results["e_variants"] = {"fp32_self_agreement": argmax_agreement(model, reference)}
    for name in cfg.variants:
        variant = frozen_variant(model, name)
        t0 = time.perf_counter()
        try:
            run_cached(variant, tok, BenchConfig(**{**asdict(cfg), "rounds": 1}))  # warm-up (compile builds here)
        except Exception as e:  # torch.compile needs a working C++ toolchain; report why it did not run
            results["e_variants"][name] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
            print(f"[bench] e_{name}: failed: {results['e_variants'][name]['error']}", flush=True)
            continue
        warmup_s = time.perf_counter() - t0
        kept: list = []
        _, seconds, peak = timed(lambda v=variant, k=kept: run_cached(v, tok, cfg, keep=k))
        tokens = sum(sum(r.gen_mask) for r in kept)
        results["e_variants"][name] = {
            "seconds": seconds, "tokens": tokens, "tokens_per_s": tokens / seconds, "peak_rss_mib": peak,
            "speed_vs_fp32": (tokens / seconds) / results["a_cached"]["tokens_per_s"],
            "argmax_agreement": argmax_agreement(variant, reference),
            "same_greedy_prefix": same_token_share(kept, reference), "warmup_s": warmup_s}
        if name in ("bf16", "int8"):  # raw generate on the same copy: is the gain ours, or only the weights'?
            gen_tokens, gen_s, _ = timed(lambda v=variant: run_generate(v, tok, cfg))
            results["e_variants"][name]["generate_tokens_per_s"] = gen_tokens / gen_s
            results["e_variants"][name]["ratio_vs_generate_same_weights"] = (tokens / seconds) / (gen_tokens / gen_s)
        print(f"[bench] e_{name}: {tokens} tokens in {seconds:.1f} s", flush=True)
        del variant


ENGINE_NAMES = ("default", "q4_1", "q8_0")
"""(f)'s names for GGUF files: what ``llamacpp:default`` decodes, the embedded file as shipped (Q4_1), its Q8_0 copy."""


def engine_gguf(name: str) -> str:
    """The GGUF file (f) decodes for one ``--engine`` item (a name of :data:`ENGINE_NAMES` or a path)."""
    from agents.llamacpp.reasoner import parse_spec

    if name == "q4_1":
        from agents.embedded import embedded_gguf_path

        return str(embedded_gguf_path())
    if name == "q8_0":
        from agents.embedded import embedded_engine_gguf_path

        return str(embedded_engine_gguf_path())
    return parse_spec(name)[0]


def run_engine(cfg: BenchConfig, model, tok, results: dict, reference: list) -> None:
    """(f) (a)'s workload on the llama.cpp engine for each GGUF of ``cfg.engine`` (the first gives the headline
    keys): tokens/s, ÷ (c) raw fp32 ``generate`` on the same batch, the mean |Δ log p| per generated token
    between the engine's log-probs and torch fp32 scoring its tokens, and the share of its greedy tokens that
    are torch fp32's argmax (teacher-forced on the engine's own sequences)."""
    items = [e for e in cfg.engine.split(",") if e]
    if not items or (cfg.model != "default" and any(e.partition("#")[0] in ENGINE_NAMES for e in items)):
        return
    try:
        from agents.llamacpp.reasoner import LlamaCppReasoner
        from agents.llamacpp.engine import Engine, import_llama_cpp

        import_llama_cpp()
    except ImportError as e:
        results["f_engine"] = {"error": str(e)}
        print(f"[bench] f_engine: not run: {e}", flush=True)
        return
    results["f_engines"], seen = {}, set()
    for item in items:
        name, _, opts = item.partition("#")
        path = engine_gguf(name)
        options = {k: int(v) for k, _, v in (o.partition("=") for o in opts.split("&") if o)}
        if (path, tuple(sorted(options.items()))) in seen:  # "default" is also "q4_1" (or "q8_0")
            continue
        seen.add((path, tuple(sorted(options.items()))))
        engine = Engine(path, n_ctx=1024, **{"threads": torch.get_num_threads(), **options})
        rc = ReasonerConfig(max_step_tokens=cfg.tokens_per_round, greedy=True, stop_at_delimiter=False)
        row = engine_row(cfg, model, LlamaCppReasoner(engine, tok, rc), reference, results["c_generate"])
        results["f_engines"][item] = row | {"gguf": path, "threads": engine.threads, "unified": engine.unified}
        engine.close()
        print(f"[bench] f_engine {item}: {row['tokens']} tokens in {row['seconds']:.1f} s", flush=True)
    head = results["f_engines"][items[0]]
    results["f_engine"] = head
    results["engine_tok_s"], results["engine_vs_generate"] = head["tokens_per_s"], head["vs_generate"]
    results["engine_lp_mismatch"] = head["lp_mismatch"]


def engine_row(cfg: BenchConfig, model, reasoner, reference: list, generate: dict) -> dict:
    """One engine's (f) figures: (a)'s rounds after a one-round warm-up, then torch fp32 rescoring its tokens."""
    from agents.hf.sampling import generated_logprobs

    def play(rounds: int) -> list:
        strat = plans(cfg)
        reasoner.reset(cfg.batch)
        for t in range(rounds):
            obs = [{"question": QUESTIONS[c % len(QUESTIONS)], "round": t, "strategy": strat[c][t],
                    "injected": injection(t, strat[c][t]), "prompt": ""} for c in range(cfg.batch)]
            reasoner.act(list(range(cfg.batch)), obs)
        return reasoner.records()

    play(1)  # warm-up
    records, seconds, peak = timed(lambda: play(cfg.rounds))
    tokens = sum(sum(r.gen_mask) for r in records)
    lp, mask, _ = generated_logprobs(model, [r.input_ids for r in records], [r.gen_mask for r in records], 1.0,
                                     records[0].suppressed_ids, records[0].pad_id)
    engine_lp = torch.zeros_like(lp)
    for i, r in enumerate(records):
        engine_lp[i, :len(r.logprobs)] = torch.tensor(r.logprobs)
    return {"seconds": seconds, "tokens": tokens, "tokens_per_s": tokens / seconds, "peak_rss_mib": peak,
            "vs_generate": tokens / seconds / generate["tokens_per_s"],
            "lp_mismatch": float(((lp - engine_lp).abs() * mask).sum() / mask.sum()),
            "fp32_argmax_agreement": argmax_agreement(model, records),
            "same_greedy_prefix_as_fp32": same_token_share(records, reference)}


def main(cfg: BenchConfig) -> dict:
    from algos.threads import use_threads

    use_threads(cfg.threads)
    model, tok = tiny_model("causal") if cfg.model == "tiny" else load_causal_lm(cfg.model)  # tiny: smoke tests
    model.eval()
    results: dict = {"config": asdict(cfg), "torch_threads": torch.get_num_threads()}
    with torch.inference_mode():
        model.generate(**tok(["warm up"], return_tensors="pt"), max_new_tokens=2, do_sample=False,
                       pad_token_id=tok.pad_token_id)
        reference: list = []  # (a)'s fp32 greedy records: the reference of (e)
        runs = [("a_cached", lambda *a: run_cached(*a, keep=reference)), ("b_naive", run_naive),
                ("c_generate", run_generate)]
        for name, fn in runs:
            with PeakRSS() as mem, InjectionReads() as reads:
                t0 = time.perf_counter()
                tokens = fn(model, tok, cfg)
                seconds = time.perf_counter() - t0
            results[name] = {"seconds": seconds, "tokens": tokens, "tokens_per_s": tokens / seconds,
                             "peak_rss_mib": mem.peak_mib}
            if name == "a_cached":
                results[name] |= {"injection_read_s": reads.seconds, "injection_tokens": reads.tokens}
            print(f"[bench] {name}: {tokens} tokens in {seconds:.1f} s", flush=True)
        if not cfg.skip_rollout:
            run_rollouts(cfg, model, tok, results)
        run_variants(cfg, model, tok, results, reference)
        run_engine(cfg, model, tok, results, reference)
    a, b, c = results["a_cached"], results["b_naive"], results["c_generate"]
    if not (a["tokens"] == b["tokens"] == c["tokens"]):
        raise RuntimeError(f"token counts differ (a={a['tokens']}, b={b['tokens']}, c={c['tokens']}); not comparable")
    results["speedup_vs_naive"] = b["seconds"] / a["seconds"]
    results["ratio_vs_generate"] = a["tokens_per_s"] / c["tokens_per_s"]
    # (c) reads no injections: (a)'s decoding alone, without the forwards that read them
    results["ratio_vs_generate_decode_only"] = a["tokens"] / (a["seconds"] - a["injection_read_s"]) / c["tokens_per_s"]
    results["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print_table(results)
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(results, indent=2))
    return results


def print_table(r: dict) -> None:
    cfg = r["config"]
    print(f"\nreasoner rollout, model={cfg['model']}, batch={cfg['batch']}, rounds={cfg['rounds']}, "
          f"{cfg['tokens_per_round']} tokens/round, torch threads={r['torch_threads']}")
    print(f"{'variant':34s} {'seconds':>8s} {'tokens':>7s} {'tok/s':>7s} {'peak RSS MiB':>13s}")
    names = {"a_cached": "(a) cached multi-turn (ours)", "b_naive": "(b) naive re-encode + generate",
             "c_generate": "(c) one raw generate", "d_rollout_planner_reasoner": "(d) EnvGroup rollout, planner+reasoner"}
    for key, label in names.items():
        if key in r:
            v = r[key]
            print(f"{label:34s} {v['seconds']:8.1f} {v['tokens']:7d} {v['tokens_per_s']:7.1f} {v['peak_rss_mib']:13.0f}")
    for key, label in (("d_rollout_shared_prefill", "(d) G-copy rollout, shared prefill"),
                       ("d_rollout_separate_prefill", "(d) G-copy rollout, separate prefill")):
        if key in r:
            v = r[key]
            print(f"{label:34s} {v['seconds']:8.1f} {v['tokens']:7d} {v['tokens_per_s']:7.1f} {v['peak_rss_mib']:13.0f}")
    for name, v in r.get("e_variants", {}).items():
        if not isinstance(v, dict):
            continue
        if "error" in v:
            print(f"{'(e) (a) with ' + name:34s} did not run: {v['error']}")
            continue
        print(f"{'(e) (a) with ' + name:34s} {v['seconds']:8.1f} {v['tokens']:7d} {v['tokens_per_s']:7.1f} "
              f"{v['peak_rss_mib']:13.0f}  x{v['speed_vs_fp32']:.2f} vs fp32, argmax = fp32 token on "
              f"{100 * v['argmax_agreement']:.1f}% of positions (fp32 itself: "
              f"{100 * r['e_variants']['fp32_self_agreement']:.1f}%), same greedy prefix {100 * v['same_greedy_prefix']:.0f}%")
        if "generate_tokens_per_s" in v:
            print(f"{'(e) (c) with ' + name:34s} {'':8s} {'':7s} {v['generate_tokens_per_s']:7.1f}  "
                  f"(a)/(c) on the same {name} weights: {v['ratio_vs_generate_same_weights']:.2f}")
    f = r.get("f_engine", {})
    if "error" in f:
        print(f"{'(f) (a) on llama.cpp':34s} did not run: {f['error']}")
    for name, v in r.get("f_engines", {}).items():
        name = name if len(name) <= 13 else "…" + name[-12:]
        print(f"{'(f) (a) on llama.cpp ' + name:34s} {v['seconds']:8.1f} {v['tokens']:7d} {v['tokens_per_s']:7.1f} "
              f"{v['peak_rss_mib']:13.0f}  / (c): {v['vs_generate']:.2f} (target >= 2.0); mean |d log p| vs torch "
              f"fp32 {v['lp_mismatch']:.4f}; fp32 argmax on {100 * v['fp32_argmax_agreement']:.1f}% of its tokens; "
              f"same greedy prefix as fp32 {100 * v['same_greedy_prefix_as_fp32']:.0f}%")
    print(f"speedup a vs b (b_time / a_time): {r['speedup_vs_naive']:.2f}x   (target >= 2)")
    print(f"tokens/s a / c: {r['ratio_vs_generate']:.2f}   (target >= 1.0, goal 1.5)")
    a = r["a_cached"]
    print(f"  (a) spent {a['injection_read_s']:.1f} s reading {a['injection_tokens']} injection tokens that (c) never reads; "
          f"without them a / c = {r['ratio_vs_generate_decode_only']:.2f}")
    if "prefix_sharing_speedup" in r:
        print(f"prefix sharing speedup (d separate / d shared): {r['prefix_sharing_speedup']:.2f}x, "
              f"same tokens: {r['prefix_sharing_same_tokens']}")
    print(f"process peak RSS: {r['peak_rss_mib']:.0f} MiB   (target < 4096)")


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, BenchConfig, "python -m benchmarks.runtime.rollout", __doc__)
