"""The llama.cpp backend: a GGUF model decoding many sequences at once, its LoRA adapters and its server.

Importing this package imports no ``llama_cpp``.
"""
