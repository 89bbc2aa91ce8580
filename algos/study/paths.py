"""Where a study keeps its files: every path of the study folder, built in one place from a :class:`StudyConfig`.

``<out>/`` holds ``trees/`` (unless :attr:`StudyConfig.tree_dir` puts them elsewhere), ``heads/`` (unless
:attr:`StudyConfig.heads_dir`), ``features/`` (unless :attr:`StudyConfig.features_dir`), ``scores/``, ``report/`` and
``episodes/``. A split's tree is ``<trees>/<name>_<split>.tree.json.gz``, with its info JSON and its ledger beside it;
a seed's head is ``<heads>/<head_name with the seed>``. Every stage asks :class:`StudyPaths` rather than joining
paths itself, so a reader finds the layout here.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

from .config import REPLICATION_SEED, StudyConfig

__all__ = ["StudyPaths", "file_sha256"]


def file_sha256(spec: str, split: str) -> str:
    """SHA-256 of the bytes of the file ``spec`` (a data spec: a path, with ``?column=...`` options) that replaces
    ``split``; read once per file content (cached by path, size and modification time).

    Raises:
        ValueError: no such file.
    """
    file = Path(spec.partition("?")[0])
    if not file.is_file():
        raise ValueError(f"--{split}-data {spec!r}: no such file; give a JSONL / parquet file of problems.")
    st = file.stat()
    return _digest(str(file.resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@dataclass(frozen=True)
class StudyPaths:
    """The files of one study (module docstring); :meth:`of` builds it from a config."""

    out: Path
    """The study folder (:attr:`StudyConfig.out`)."""
    trees: Path
    """Where the trees are: :attr:`StudyConfig.tree_dir`, or ``<out>/trees``."""
    heads: Path
    """Where the study's heads are: :attr:`StudyConfig.heads_dir`, or ``<out>/heads``."""
    features: Path
    """Where the planner backbones' features are kept: :attr:`StudyConfig.features_dir`, or ``<out>/features``."""
    name: str
    """The trees' file-name stem (:attr:`StudyConfig.name`)."""
    head_name: str
    """A seed's head dir under :attr:`heads` (``{seed}`` is replaced by the seed)."""
    heads_from: str
    """Another study's folder whose heads are scored ("" = this study's)."""
    files: tuple[tuple[str, str], ...] = ()
    """``(split, file)`` for each split read from your own file (:attr:`StudyConfig.test_data`, ``replication_data``)."""
    replication_seed: int | None = None
    """The replication draw's generator seed when it is not the default one (its tree is then its own)."""
    given_episodes: tuple[tuple[str, str], ...] = ()
    """``(kind, file)``: the ``none`` / ``sc`` episodes given for the study's own test split."""

    @classmethod
    def of(cls, cfg: StudyConfig) -> "StudyPaths":
        """The paths of ``cfg``'s study."""
        out = Path(cfg.out)
        return cls(out=out, trees=Path(cfg.tree_dir) if cfg.tree_dir else out / "trees",
                   heads=Path(cfg.heads_dir) if cfg.heads_dir else out / "heads",
                   features=Path(cfg.features_dir) if cfg.features_dir else out / "features",
                   name=cfg.name, head_name=cfg.head_name, heads_from=cfg.heads_from,
                   files=tuple((k, v) for k, v in (("test", cfg.test_data), ("replication", cfg.replication_data)) if v),
                   replication_seed=None if cfg.replication_seed == REPLICATION_SEED else cfg.replication_seed,
                   given_episodes=(("none", cfg.none_episodes), ("sc", cfg.sc_episodes)))

    @property
    def scores(self) -> Path:
        """``<out>/scores``: each held-out split's scoring, and the read-back tables (``tables/``)."""
        return self.out / "scores"

    @property
    def report(self) -> Path:
        """``<out>/report``: report.md, report.json and the plots."""
        return self.out / "report"

    @property
    def train_summary(self) -> Path:
        """``<heads>/train.json``: every seed's run and training curve."""
        return self.heads / "train.json"

    def tree(self, split: str) -> Path:
        """``split``'s plan tree: ``<trees>/<name>_<split>.tree.json.gz``; another replication draw than the default
        seed's has its own (``<name>_replication_s<seed>``: problem ids do not name the seed), and a split read from
        your own file has its own under ``<out>/trees`` (``<name>_<split>_<file's sha256[:12]>``), so the study's
        committed trees are never written by it."""
        if self.label(split) != split:
            return self.out / "trees" / f"{self.name}_{self.label(split)}.tree.json.gz"
        if split == "replication" and self.replication_seed is not None:
            return self.trees / f"{self.name}_{split}_s{self.replication_seed}.tree.json.gz"
        return self.trees / f"{self.name}_{split}.tree.json.gz"

    def label(self, split: str) -> str:
        """``split``, or ``<split>_<sha256[:12]>`` of the file ``split`` is read from (its tree and scores apart)."""
        own = dict(self.files).get(split)
        return f"{split}_{file_sha256(own, split)[:12]}" if own else split

    def info(self, split: str) -> Path:
        """The info JSON beside ``split``'s tree."""
        tree = self.tree(split)
        return tree.with_name(tree.name.removesuffix(".gz"))

    def head(self, seed: int) -> Path:
        """Seed ``seed``'s head (a run dir ``rsim eval --planner`` reads)."""
        return self.heads / self.head_name.format(seed=seed)

    def scored_heads(self) -> Path:
        """The folder of the heads a scoring plays: ``heads_from``'s ``heads/`` (or ``heads_from`` itself when it has
        none), else :attr:`heads`."""
        if not self.heads_from:
            return self.heads
        src = Path(self.heads_from)
        return src / "heads" if (src / "heads").is_dir() else src

    def features_file(self, spec: str) -> Path:
        """Where the features of planner backbone ``spec`` are kept: ``<features>/<spec, file-safe>.safetensors``."""
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in spec).strip("._") or "planner"
        return self.features / f"{safe}.safetensors"

    def split_scores(self, split: str) -> Path:
        """``<out>/scores/<split>.json.gz``: a held-out split's scoring under its configuration hash."""
        return self.scores / f"{self.label(split)}.json.gz"

    def table_cache(self, split: str) -> Path:
        """``<out>/scores/tables/<split>.json.gz``: ``split``'s read-back table beside its tree's fingerprint."""
        return self.scores / "tables" / f"{self.label(split)}.json.gz"

    def episodes(self, kind: str, split: str) -> tuple[Path, bool]:
        """``(path, given)``: the ``rsim eval`` episodes of mode ``kind`` (``none``, ``sc``) for ``split`` -- the
        file given for the study's own test split (:attr:`StudyConfig.none_episodes`, ``sc_episodes``; ``given``
        True), else ``<out>/episodes/<kind>_<split label>.jsonl.gz`` (a split read from your own file has its own)."""
        given = dict(self.given_episodes).get(kind, "")
        if split == "test" and given and self.label(split) == split:
            return Path(given), True
        return self.out / "episodes" / f"{kind}_{self.label(split)}.jsonl.gz", False
