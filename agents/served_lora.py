"""LoRA adapters synced to a served reasoner each step, through vLLM's runtime LoRA API.

A vLLM server started as ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve BASE --enable-lora
--max-lora-rank R`` serves any number of adapters on one base, each under a name passed as the
request's ``model``. It adds and drops them at run time:

* ``POST /v1/load_lora_adapter`` ``{"lora_name": NAME, "lora_path": DIR}`` (a PEFT adapter dir the
  server can read; answers plain text; a name already loaded is refused with 400);
* ``POST /v1/unload_lora_adapter`` ``{"lora_name": NAME}``.

:class:`ServedAdapters` (the ``adapters`` of :class:`agents.openai_reasoner.OpenAIReasoner`) saves
the trained adapter as a PEFT dir under a step-specific name, loads it, then unloads the previous one
(so no request names an adapter the server dropped, and the server never serves a mix of steps
under one name) and deletes that one's saved dir. The reasoner then sends the new name as
``model``. HTTP (retries, errors) is the reasoner's own.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

__all__ = ["ServedAdapters"]


class ServedAdapters:
    """The LoRA adapter a served reasoner's requests name (see module docstring).

    Args:
        client: The :class:`agents.openai_reasoner.OpenAIReasoner` (its ``cfg.base_url``,
            ``cfg.adapter_dir`` and ``request``).
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        self.name: str | None = None
        """The served adapter's name (None: the base model)."""
        self.syncs = 0
        self.tag = f"rsim-{uuid.uuid4().hex[:8]}"  # adapter names unique on a shared server
        self._saved: Path | None = None  # the served adapter's dir when it was saved here

    def sync(self, adapter: Any) -> str:
        """Load ``adapter`` under a new name, unload the previous one; return the new name.

        Args:
            adapter: A PEFT adapter dir (``adapter_config.json`` + weights) the server can read, or an
                :class:`agents.lora.AdapterSlot`, saved under ``OpenAIConfig.adapter_dir`` (default: the
                temp dir, for a server on this machine).

        Raises:
            ValueError / TypeError: not an adapter dir or slot.
            agents.openai_reasoner.APIError: the server refused (a 404 says how to enable runtime LoRA).
        """
        path, saved = self._path(adapter)  # saved: the dir written here (None: the caller's dir)
        name = f"{self.tag}-step-{self.syncs}"
        try:
            self._admin("load_lora_adapter", {"lora_name": name, "lora_path": str(path)})
        except Exception:
            if saved is not None:
                shutil.rmtree(saved, ignore_errors=True)
            raise
        self._drop()
        self.name, self._saved = name, saved
        self.syncs += 1
        return name

    def unload(self) -> None:
        """Unload the served adapter (requests name the base model again)."""
        self._drop()
        self.name, self._saved = None, None

    def _drop(self) -> None:
        if self.name is not None:
            self._admin("unload_lora_adapter", {"lora_name": self.name})
        if self._saved is not None:
            shutil.rmtree(self._saved, ignore_errors=True)

    def _path(self, adapter: Any) -> tuple[Path, Path | None]:
        """``(PEFT adapter dir, the dir saved here or None)``."""
        if isinstance(adapter, (str, Path)):
            path = Path(adapter).expanduser().resolve()
            if not (path / "adapter_config.json").is_file():
                raise ValueError(f"{str(path)!r} is not a PEFT adapter dir (no adapter_config.json); save one with "
                                 "peft's save_pretrained or pass the agent's adapter slot (agent.lora).")
            return path, None
        if getattr(getattr(adapter, "base", None), "peft", None) is None:
            raise TypeError(f"sync_adapter takes a PEFT adapter dir or an agents.lora.AdapterSlot, got {type(adapter).__name__}.")
        cfg = self.client.cfg
        root = Path(cfg.adapter_dir).expanduser() if cfg.adapter_dir else Path(tempfile.gettempdir()) / "rsim-lora"
        target = root / f"{self.tag}-step-{self.syncs}"
        adapter.base.peft.save_pretrained(str(target), selected_adapters=[adapter.name])
        inner = target / adapter.name  # peft saves an adapter not named "default" in a subfolder
        return (inner if (inner / "adapter_config.json").is_file() else target).resolve(), target.resolve()

    def _admin(self, route: str, body: dict[str, Any]) -> str:
        from .completions import APIError

        url = f"{self.client.cfg.base_url.rstrip('/')}/{route}"
        try:
            return self.client.request(body, url, raw=True)
        except APIError as e:
            code = getattr(e.__cause__, "code", None)
            if code in (404, 405):
                raise APIError(f"{url} answered HTTP {code}: the server has no runtime LoRA API; start it as "
                               "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve BASE --enable-lora --max-lora-rank R "
                               f"({e})") from e
            raise
