"""The torch backend: a Hugging Face causal LM that decodes with a KV cache and scores for learners.

Loading (hub ids, local paths, the embedded default, tiny test models), the batched KV cache, shared-prompt
scoring, LoRA adapters and the sampling convention. Importing this package imports no torch.
"""
