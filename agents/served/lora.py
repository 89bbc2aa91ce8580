"""LoRA adapters synced to a served reasoner each step, through vLLM's runtime LoRA API.

A vLLM server started as ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve BASE --enable-lora
--max-lora-rank R`` serves any number of adapters on one base, each under a name passed as the
request's ``model``. It adds and drops them at run time:

* ``POST /v1/load_lora_adapter`` ``{"lora_name": NAME, "lora_path": DIR}`` (a PEFT adapter dir the
  server can read; answers plain text; a name already loaded is refused with 400);
* ``POST /v1/unload_lora_adapter`` ``{"lora_name": NAME}``.

:class:`ServedAdapters` (the ``adapters`` of :class:`agents.served.reasoner.OpenAIReasoner`) saves
the trained adapter as a PEFT dir under a new name, loads it, switches the requests to that name,
then unloads the previous one and deletes its saved dir; the reasoner sends the current name as
``model``. HTTP (retries, errors) is the reasoner's own.

Interrupted syncs (documented contract): requests always name an adapter the server loaded (the
previous or the new one, never one it dropped), and never a mix of steps under one name.

* Names are never reused (``TAG-step-N``, N counts every attempt), so a load the server did although
  its answer was lost cannot block a later sync with "already loaded".
* The load fails (refused, connection lost): requests keep the previous adapter and the error
  propagates. Unless the server refused it (HTTP 4xx), the attempted name is remembered as *stale*:
  the server may have loaded it before its answer was lost.
* The unload of the previous adapter fails: the new adapter is already in use, so the sync succeeds
  with one warning, and the previous adapter is remembered as stale.
* Every sync, once its own load succeeded, and :meth:`ServedAdapters.unload` unload the stale
  names; a name the server answers it does not hold (HTTP 4xx) is forgotten, any other failure keeps
  it for the next sync. A saved dir is deleted only once its name is off the server (vLLM may read an
  adapter's files again after evicting it from its CPU cache).
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
import warnings
from pathlib import Path
from typing import Any

__all__ = ["ServedAdapters"]


class ServedAdapters:
    """The LoRA adapter a served reasoner's requests name (see module docstring).

    Args:
        client: The :class:`agents.served.reasoner.OpenAIReasoner` (its ``cfg.base_url``,
            ``cfg.adapter_dir`` and ``request``).
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        self.name: str | None = None
        """The served adapter's name (None: the base model)."""
        self.syncs = 0
        """Syncs that succeeded."""
        self.attempts = 0
        """Syncs started; numbers the names, so a name is never reused."""
        self.tag = f"rsim-{uuid.uuid4().hex[:8]}"  # adapter names unique on a shared server
        self.stale: list[tuple[str, Path | None]] = []
        """``(name, dir saved here or None)`` of adapters that may still be on the server."""
        self._saved: Path | None = None  # the served adapter's dir when it was saved here

    def sync(self, adapter: Any) -> str:
        """Load ``adapter`` under a new name, serve it, then unload the previous one; return the new name.

        Args:
            adapter: A PEFT adapter dir (``adapter_config.json`` + weights) the server can read, or an
                :class:`agents.hf.lora.AdapterSlot`, saved under ``OpenAIConfig.adapter_dir`` (default: the
                temp dir, for a server on this machine).

        Raises:
            ValueError / TypeError: not an adapter dir or slot.
            agents.served.reasoner.APIError: the load failed (a 404 says how to enable runtime LoRA); requests
                still name the previous adapter and the next sync cleans up.
        """
        name = f"{self.tag}-step-{self.attempts}"
        path, saved = self._path(adapter, name)  # saved: the dir written here (None: the caller's dir)
        self.attempts += 1
        try:
            self._admin("load_lora_adapter", {"lora_name": name, "lora_path": str(path)})
        except Exception as e:
            if _refused(e):  # a 4xx answer: the server did not load it
                if saved is not None:
                    shutil.rmtree(saved, ignore_errors=True)
            else:  # no answer, or a 5xx: it may have loaded it before the answer was lost
                self.stale.append((name, saved))
            raise
        if self.name is not None:
            self.stale.append((self.name, self._saved))
        self.name, self._saved = name, saved
        self.syncs += 1
        self._unload_stale()
        return name

    def unload(self) -> None:
        """Unload the served adapter and any stale one (requests name the base model again).

        Raises:
            agents.served.reasoner.APIError: the server did not unload the served adapter; requests still name it.
        """
        if self.name is not None:
            self._admin("unload_lora_adapter", {"lora_name": self.name})
            if self._saved is not None:
                shutil.rmtree(self._saved, ignore_errors=True)
        self.name, self._saved = None, None
        self._unload_stale()

    def _unload_stale(self) -> None:
        """Unload the stale adapters; keep (and warn once about) those the server may still hold."""
        left, why = [], []
        for name, saved in self.stale:
            try:
                self._admin("unload_lora_adapter", {"lora_name": name})
            except Exception as e:  # noqa: BLE001 -- requests use another adapter; this one is retried next sync
                if not _refused(e):
                    left.append((name, saved))
                    why.append(f"{name}: {e}")
                    continue
            if saved is not None:  # off the server: its files are no longer read
                shutil.rmtree(saved, ignore_errors=True)
        self.stale = left
        if why:
            warnings.warn(f"served LoRA: {len(why)} old adapter(s) may still be loaded on {self.client.cfg.base_url} "
                          f"(requests use {self.name or 'the base model'}; the next sync unloads them again): "
                          + " | ".join(why), stacklevel=3)

    def _path(self, adapter: Any, name: str) -> tuple[Path, Path | None]:
        """``(PEFT adapter dir, the dir saved here or None)``; a slot is saved under ``name``."""
        if isinstance(adapter, (str, Path)):
            path = Path(adapter).expanduser().resolve()
            if not (path / "adapter_config.json").is_file():
                raise ValueError(f"{str(path)!r} is not a PEFT adapter dir (no adapter_config.json); save one with "
                                 "peft's save_pretrained or pass the agent's adapter slot (agent.lora).")
            return path, None
        if getattr(getattr(adapter, "base", None), "peft", None) is None:
            raise TypeError(f"sync_adapter takes a PEFT adapter dir or an agents.hf.lora.AdapterSlot, got {type(adapter).__name__}.")
        cfg = self.client.cfg
        root = Path(cfg.adapter_dir).expanduser() if cfg.adapter_dir else Path(tempfile.gettempdir()) / "rsim-lora"
        target = root / name
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


def _refused(error: BaseException) -> bool:
    """True when the server answered HTTP 4xx (not 408/429): it did not do the request (a load: the name is
    not loaded; an unload: it does not hold the name)."""
    seen = error.__cause__
    while seen is not None:
        code = getattr(seen, "code", None)
        if isinstance(code, int):
            return 400 <= code < 500 and code not in (408, 429)
        seen = seen.__cause__
    return False
