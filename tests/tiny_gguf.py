"""A second, tiny model as a GGUF file llama.cpp can serve: another model than the embedded SmolLM2, for tests.

Llama architecture with random weights (2 layers, width 32) and the ``tiny`` test tokenizer's byte-level
vocabulary (:func:`agents.hf.loading.tiny_tokenizer`: 256 byte tokens + 3 specials, plus one merge) and chat template.
Its token counts differ from SmolLM2's on any real prompt, which is what a client that renders the chat template
with SmolLM2's tokenizer must notice. Written in about a second, a few hundred KB; nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_tiny_gguf(path: str | Path, seed: int = 0, width: int = 32, layers: int = 2) -> Path:
    """Write the model to ``path`` and return it."""
    import gguf

    from agents.hf.loading import tiny_tokenizer

    tok = tiny_tokenizer()
    vocab = sorted(tok.get_vocab().items(), key=lambda kv: kv[1])
    assert [i for _, i in vocab] == list(range(len(vocab))), "the tiny vocabulary's ids are not dense"
    vocab.append(("Ġt", len(vocab)))  # llama.cpp refuses a BPE vocabulary without merges: one merge, " t"
    specials = set(tok.all_special_ids)
    n_vocab, heads, kv_heads, ff = len(vocab), 4, 2, 2 * width
    head_dim = width // heads
    rng = np.random.default_rng(seed)

    def rand(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    path = Path(path)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("rsim-tiny-test-model")
    w.add_context_length(2048); w.add_embedding_length(width); w.add_block_count(layers)
    w.add_feed_forward_length(ff); w.add_head_count(heads); w.add_head_count_kv(kv_heads)
    w.add_layer_norm_rms_eps(1e-5); w.add_rope_dimension_count(head_dim); w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2"); w.add_tokenizer_pre("default")
    w.add_token_list([t for t, _ in vocab])
    w.add_token_types([gguf.TokenType.CONTROL if i in specials else gguf.TokenType.NORMAL for _, i in vocab])
    w.add_token_merges(["Ġ t"])
    w.add_bos_token_id(tok.bos_token_id); w.add_eos_token_id(tok.eos_token_id); w.add_add_bos_token(False)
    w.add_chat_template(tok.chat_template)
    w.add_tensor("token_embd.weight", rand(n_vocab, width))
    w.add_tensor("output_norm.weight", np.ones(width, np.float32))
    for b in range(layers):
        p = f"blk.{b}."
        w.add_tensor(p + "attn_norm.weight", np.ones(width, np.float32))
        w.add_tensor(p + "attn_q.weight", rand(width, width))
        w.add_tensor(p + "attn_k.weight", rand(kv_heads * head_dim, width))
        w.add_tensor(p + "attn_v.weight", rand(kv_heads * head_dim, width))
        w.add_tensor(p + "attn_output.weight", rand(width, width))
        w.add_tensor(p + "ffn_norm.weight", np.ones(width, np.float32))
        w.add_tensor(p + "ffn_gate.weight", rand(ff, width))
        w.add_tensor(p + "ffn_up.weight", rand(ff, width))
        w.add_tensor(p + "ffn_down.weight", rand(width, ff))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    return path
