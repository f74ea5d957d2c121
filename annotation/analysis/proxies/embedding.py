"""Optional sentence-embedding proxy (only when ``sentence_transformers`` is importable).

S'(clip i, caption j) = max(0, cos(e_i, e_j)) where e_j is the L2-normalised embedding of caption
j and e_i the normalised mean of the normalised embeddings of clip i's captions. Models are
loaded from local files only (``HF_HUB_OFFLINE=1``); nothing is downloaded at run time.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Sequence

import numpy as np

DEFAULT_MODEL = "all-MiniLM-L6-v2"


def embedding_available() -> bool:
    """True when ``sentence_transformers`` can be imported (it is an optional extra)."""
    return importlib.util.find_spec("sentence_transformers") is not None


def _normalise(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def embedding_matrix(
    clip_captions: Sequence[Sequence[str]],
    captions: Sequence[str],
    *,
    model: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    batch_size: int = 64,
) -> np.ndarray:
    """Clipped cosine similarity (clips x captions, float32); own captions are not special here."""
    if not embedding_available():
        raise ImportError("the embedding proxy needs the optional package sentence-transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach a model hub
    from sentence_transformers import SentenceTransformer

    name = model or os.environ.get("REJUDGE_EMBEDDING_MODEL", DEFAULT_MODEL)
    st = SentenceTransformer(name, local_files_only=True)
    flat = [c for row in clip_captions for c in row]
    distinct = list(dict.fromkeys(list(flat) + list(captions)))
    vecs = _normalise(np.asarray(st.encode(distinct, batch_size=batch_size), dtype=np.float32))
    index = {c: k for k, c in enumerate(distinct)}
    clip_vecs = np.stack(
        [vecs[[index[c] for c in row]].mean(axis=0) if row else np.zeros(vecs.shape[1], np.float32)
         for row in clip_captions]
    ) if clip_captions else np.zeros((0, vecs.shape[1]), np.float32)
    clip_vecs = _normalise(clip_vecs)
    cap_vecs = vecs[[index[c] for c in captions]]
    out = np.clip(clip_vecs @ cap_vecs.T, 0.0, 1.0).astype(np.float32)
    if progress is not None:
        progress(len(clip_captions), len(clip_captions))
    return out
