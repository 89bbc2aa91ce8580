"""The decoding contract under every reasoner: turns (torch-free) and what a decoder is.

* :mod:`agents.decoding.turns` -- one conversation per copy: turn building, stop rules, caps, records;
* :mod:`agents.decoding.decoder` -- the decoder protocol (and the lockstep loop token decoders share).

Each backend implements the decoder in its own folder: :mod:`agents.hf.decoder` (torch, with a KV cache, and the
scorer learners train), :mod:`agents.llamacpp.decoder` (llama.cpp) and :mod:`agents.served.decoder` (an
OpenAI-compatible server); :class:`agents.reasoner.Reasoner` composes turns, a decoder and a scorer. Nothing here
imports torch or llama.cpp.
"""
