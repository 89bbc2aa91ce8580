"""studies/decode_threads.py: settings checked, one tiny cell runs in its own process."""

import pytest


def test_decode_threads_benchmark_smoke_on_tiny_model(tmp_path):
    """studies/decode_threads.py: each (policy, threads) cell in its own process, one row per batch size."""
    import json

    from studies.decode_threads import Config, main

    with pytest.raises(ValueError, match="policies"):
        Config(policies=("busy",))
    out = tmp_path / "dt.json"
    main(Config(model="tiny", batches=(2, 3), threads=(1,), policies=("passive",), rounds=1, tokens_per_round=2,
                out=str(out)))
    cell = json.loads(out.read_text())["cells"]["passive,1"]
    assert cell["env"] == {"OMP_WAIT_POLICY": "PASSIVE"} and cell["torch_threads"] == 1
    assert all(cell[b]["cached_tok_s"] > 0 and cell[b]["cached_vs_generate"] > 0 for b in ("2", "3"))
