"""The decoding layer under every reasoner: turns (torch-free), decoders, and the torch scorer.

* :mod:`agents.decoding.turns` -- one conversation per copy: turn building, stop rules, caps, records;
* :mod:`agents.decoding.decoder` -- the decoder protocol (and the lockstep loop token decoders share);
* :mod:`agents.decoding.torch_lm` -- the torch KV-cache decoder and the scorer learners train;
* :mod:`agents.decoding.engine` -- llama.cpp;
* :mod:`agents.decoding.served` -- an OpenAI-compatible server (completions and chat endpoints).

:class:`agents.reasoner.Reasoner` composes them. Modules here import torch, llama.cpp or nothing heavy
on their own; importing this package imports none of them.
"""
