"""Fault injection on the served LoRA sync (agents.served.lora): a sync interrupted at each admin call.

Invariant after every interruption: the requests name an adapter the server holds (the previous or the
new one, never a dropped one), and the next sync recovers: only its adapter stays loaded, the stale
ones are unloaded and the dirs saved for them are deleted.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

from agents.served.reasoner import APIError, OpenAIConfig, OpenAIReasoner
from tests.test_vllm_lora import BASE, FakeVLLM

LOAD, UNLOAD = "/v1/load_lora_adapter", "/v1/unload_lora_adapter"


class FlakyVLLM(FakeVLLM):
    """A :class:`FakeVLLM` whose next call to a route in ``fail`` goes wrong one of these ways:

    ``"500"`` / ``"400"`` answer that status without acting; ``"dropped"`` closes the connection without
    acting; ``"lost"`` acts, then closes the connection before answering (the client cannot know it acted).
    """

    def __init__(self) -> None:
        super().__init__()
        self.fail: dict[str, str] = {}
        self.httpd.handle_error = lambda request, address: None  # the dropped connections are on purpose

    def answer(self, path: str, body: dict) -> tuple[int, object]:
        mode = self.fail.pop(path, None)
        if mode in ("500", "400"):
            return int(mode), {"object": "error", "message": "injected failure", "code": int(mode)}
        if mode == "dropped":
            raise ConnectionAbortedError("injected: connection dropped before acting")
        status, reply = super().answer(path, body)
        if mode == "lost":
            raise ConnectionAbortedError("injected: connection dropped after acting")
        return status, reply


class FakeSlot:
    """An :class:`agents.hf.lora.AdapterSlot` stand-in: ``base.peft.save_pretrained`` writes a PEFT dir."""

    name = "default"

    def __init__(self) -> None:
        self.base = SimpleNamespace(peft=SimpleNamespace(save_pretrained=self._save))

    @staticmethod
    def _save(target: str, selected_adapters: list[str]) -> None:
        Path(target).mkdir(parents=True, exist_ok=True)
        (Path(target) / "adapter_config.json").write_text(json.dumps({"r": 4, "lora_alpha": 8, "peft_type": "LORA"}))


@pytest.fixture
def server():
    s = FlakyVLLM()
    yield s
    s.close()


def _reasoner(server: FlakyVLLM, tmp_path: Path) -> OpenAIReasoner:
    return OpenAIReasoner(OpenAIConfig(base_url=server.url, model=BASE, endpoint="chat", max_retries=0,
                                       adapter_dir=str(tmp_path / "saved")))


def _ask_served(r: OpenAIReasoner, server: FlakyVLLM) -> None:
    """A request goes through and names the adapter the reasoner believes is served (the fake 404s a dropped one)."""
    r.complete([{"role": "user", "content": "What is 2 + 2?"}])
    assert server.log[-1][0] == "/v1/chat/completions" and server.log[-1][1]["model"] == r.served_model
    assert r.served_model == BASE or r.served_model in server.loaded


def _saved_dirs(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "saved").iterdir())


# route, failure, whether the sync raises, which adapters the server holds afterwards ("old", "new")
INTERRUPTIONS = {
    "load-answers-500": (LOAD, "500", True, {"old"}),
    "load-refused-400": (LOAD, "400", True, {"old"}),
    "load-connection-dropped": (LOAD, "dropped", True, {"old"}),
    "load-done-answer-lost": (LOAD, "lost", True, {"old", "new"}),
    "unload-answers-500": (UNLOAD, "500", False, {"old", "new"}),
    "unload-connection-dropped": (UNLOAD, "dropped", False, {"old", "new"}),
    "unload-done-answer-lost": (UNLOAD, "lost", False, {"new"}),
}


@pytest.mark.parametrize("case", list(INTERRUPTIONS), ids=list(INTERRUPTIONS))
def test_interrupted_sync_keeps_a_served_adapter_and_the_next_sync_recovers(server, tmp_path, case):
    route, mode, raises, held = INTERRUPTIONS[case]
    r, slot = _reasoner(server, tmp_path), FakeSlot()
    old = r.sync_adapter(slot)
    new = f"{r.adapters.tag}-step-1"
    server.fail[route] = mode
    if raises:
        with pytest.raises(APIError):
            r.sync_adapter(slot)
        assert r.served_model == old and r.adapters.syncs == 1  # requests stay on the previous adapter
    else:
        with pytest.warns(UserWarning, match=f"1 old adapter.*may still be loaded.*requests use {new}") as caught:
            assert r.sync_adapter(slot) == new
        assert len(caught) == 1 and r.served_model == new
    assert set(server.loaded) == {{"old": old, "new": new}[h] for h in held}
    _ask_served(r, server)
    assert (tmp_path / "saved" / r.served_model / "adapter_config.json").is_file()  # the server may read it again

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the recovery is silent
        last = r.sync_adapter(slot)
    assert last == f"{r.adapters.tag}-step-2" and list(server.loaded) == [last]
    assert r.adapters.stale == [] and _saved_dirs(tmp_path) == [last]
    _ask_served(r, server)


def test_stale_adapter_unload_failing_again_is_kept_until_it_succeeds(server, tmp_path):
    r, slot = _reasoner(server, tmp_path), FakeSlot()
    first = r.sync_adapter(slot)
    for step in (1, 2):  # the old adapters' unloads keep failing: they pile up as stale, requests move on
        server.fail[UNLOAD] = "dropped"
        with pytest.warns(UserWarning, match="may still be loaded"):
            r.sync_adapter(slot)
        assert r.served_model == f"{r.adapters.tag}-step-{step}"
        _ask_served(r, server)
    assert first in server.loaded and [n for n, _ in r.adapters.stale][0] == first
    last = r.sync_adapter(slot)
    assert list(server.loaded) == [last] and _saved_dirs(tmp_path) == [last]


def test_a_refused_unload_keeps_serving_the_adapter_and_a_retry_unloads(server, tmp_path):
    r, slot = _reasoner(server, tmp_path), FakeSlot()
    name = r.sync_adapter(slot)
    server.fail[UNLOAD] = "500"
    with pytest.raises(APIError):
        r.unload_adapter()
    assert r.served_model == name and name in server.loaded
    _ask_served(r, server)
    r.unload_adapter()
    assert r.served_model == BASE and server.loaded == {} and _saved_dirs(tmp_path) == []
    _ask_served(r, server)


def test_a_name_is_never_reused_after_a_failed_load(server, tmp_path):
    """A load whose answer was lost leaves its name on the server: reusing it would fail every later sync."""
    r, slot = _reasoner(server, tmp_path), FakeSlot()
    server.fail[LOAD] = "lost"
    with pytest.raises(APIError):
        r.sync_adapter(slot)
    assert r.served_model == BASE and list(server.loaded) == [f"{r.adapters.tag}-step-0"]
    name = r.sync_adapter(slot)
    assert name.endswith("-step-1") and list(server.loaded) == [name] and r.adapters.syncs == 1
