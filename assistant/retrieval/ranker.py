"""The learned ranker: re-orders the fused prefilter's head with a linear model over features the
text scores alone miss (rank positions on each side, agreement of the two sides, the
bibliographic signals of ``retrieval.bibsignals``).

The model is a plain JSON file (feature names, standardisation, coefficients; no pickle) trained
by ``training.ranker`` with cross-validation grouped by citing paper, shipped in
``assistant/models/ranker/`` with its model card, and loaded by :func:`load_ranker`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from assistant import filewrite
from assistant.errors import AssistantError
from assistant.retrieval.bibsignals import SIGNALS, LibraryStats, signals

#: text-side features, then the bibliographic signals
TEXT_FEATURES = (
    "fused",
    "fused_rank",
    "bm25_z",
    "bm25_rank",
    "bm25_present",
    "dense",
    "dense_z",
    "dense_rank",
    "dense_present",
)
FEATURES = TEXT_FEATURES + SIGNALS
#: fused candidates the ranker re-orders (the head of the prefilter)
DEFAULT_POOL = 200


class RankerFileError(AssistantError, ValueError):
    """A ranker file that cannot be read or does not match this program's features."""


@dataclass
class LearnedRanker:
    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float = 0.0
    pool: int = DEFAULT_POOL
    path: str | None = None

    def score(self, x: np.ndarray) -> np.ndarray:
        """Higher = more likely cited; ``x`` has one row per candidate, columns :attr:`features`."""
        if x.size == 0:
            return np.zeros(0)
        return ((x - self.mean) / self.scale) @ self.coef + self.intercept

    def to_dict(self) -> dict:
        return {
            "kind": "learned-ranker",
            "features": list(self.features),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "coef": self.coef.tolist(),
            "intercept": float(self.intercept),
            "pool": self.pool,
        }

    def save(self, folder: Path, extra: dict | None = None) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "ranker.json"
        filewrite.write_text(path, json.dumps({**self.to_dict(), **(extra or {})}, indent=1) + "\n")
        return path


def load_ranker(location: str | Path) -> LearnedRanker:
    """A ranker from a folder holding ``ranker.json`` (or the file itself)."""
    path = Path(location)
    if path.is_dir():
        path = path / "ranker.json"
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
        features = tuple(meta["features"])
        arrays = [np.asarray(meta[k], dtype=np.float64) for k in ("mean", "scale", "coef")]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RankerFileError(f"{path}: not a readable ranker file ({exc})") from exc
    unknown = [f for f in features if f not in FEATURES]
    if unknown or any(a.shape != (len(features),) for a in arrays):
        raise RankerFileError(f"{path}: features {unknown or features} do not match this program")
    mean, scale, coef = arrays
    scale = np.where(scale > 0, scale, 1.0)
    return LearnedRanker(
        features,
        mean,
        scale,
        coef,
        float(meta.get("intercept", 0.0)),
        int(meta.get("pool", DEFAULT_POOL)),
        str(path),
    )


#: the shipped ranker folder of each quality tier (``service.quality``): its features include
#: the dense scores, so a tier with another encoder has a ranker fitted on that encoder's scores
SHIPPED_RANKERS = {"fast": "ranker", "best": "ranker-best"}


def shipped_ranker_dir(tier: str = "fast") -> Path | None:
    """The shipped ranker folder of ``tier`` when it exists and is enabled by default (a tier
    without its own falls back to the fast tier's)."""
    from assistant.config import SHIPPED_MODELS_DIR

    for name in dict.fromkeys((SHIPPED_RANKERS.get(tier, "ranker"), "ranker")):
        path = SHIPPED_MODELS_DIR / name / "ranker.json"
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        return path.parent if meta.get("enabled_by_default", True) else None
    return None


def resolve_ranker(setting: str | None, tier: str = "fast") -> str | None:
    """``"auto"`` = the shipped ranker of the quality ``tier`` (if any), ``None``/``"off"``/
    ``"none"`` = no ranker, anything else = that folder or file."""
    if setting is None or setting.strip().lower() in ("", "off", "none"):
        return None
    if setting == "auto":
        found = shipped_ranker_dir(tier)
        return str(found) if found else None
    return setting


def _z(values: dict[int, float]) -> tuple[float, float]:
    if not values:
        return 0.0, 1.0
    arr = np.fromiter(values.values(), dtype=np.float64)
    return float(arr.mean()), float(arr.std()) or 1.0


def candidate_features(
    fused: list[tuple[int, float]],
    bm25: tuple[np.ndarray, np.ndarray],
    dense: tuple[np.ndarray, np.ndarray],
    papers: dict[int, object],
    stats: LibraryStats,
    authors=(),
    year: int | None = None,
    depth: int = 400,
) -> tuple[list[int], np.ndarray]:
    """Feature rows (columns :data:`FEATURES`) for the fused candidates found in ``papers``."""
    runs = {}
    for name, (ids, scores) in (("bm25", bm25), ("dense", dense)):
        runs[name] = (
            {int(i): float(s) for i, s in zip(ids, scores)},
            {int(i): r for r, i in enumerate(ids, start=1)},
        )
    zs = {name: _z(run[0]) for name, run in runs.items()}
    ids = [pid for pid, _ in fused if pid in papers]
    fused_score = dict(fused)
    fused_rank = {pid: r for r, (pid, _) in enumerate(fused, start=1)}
    missing = math.log1p(depth + 1)
    rows = []
    for pid in ids:
        row = [fused_score[pid], math.log1p(fused_rank[pid])]
        for name in ("bm25", "dense"):
            score_of, rank_of = runs[name]
            mean, std = zs[name]
            present = pid in score_of
            if name == "dense":
                row.append(score_of.get(pid, 0.0))
            row += [
                (score_of[pid] - mean) / std if present else -3.0,
                math.log1p(rank_of[pid]) if present else missing,
                1.0 if present else 0.0,
            ]
        rows.append(row)
    bib = signals([papers[pid] for pid in ids], stats, authors, year)
    x = np.hstack(
        [
            np.asarray(rows, dtype=np.float64).reshape(len(ids), len(TEXT_FEATURES)),
            np.asarray(bib, dtype=np.float64).reshape(len(ids), len(SIGNALS)),
        ]
    )
    return ids, x


def select(x: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """The columns ``names`` of a full :data:`FEATURES` matrix."""
    return x[:, [FEATURES.index(n) for n in names]]
