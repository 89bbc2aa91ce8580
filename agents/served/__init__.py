"""Served models: a reasoner on any OpenAI-compatible server, its decoders, LoRA sync, and a tiny local server.
"""
