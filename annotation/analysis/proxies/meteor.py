"""METEOR between captions: an exact, fast re-implementation of NLTK's ``single_meteor_score``.

Definition (Lavie & Agarwal 2007 as implemented by NLTK, caption_i = reference r, caption_j =
hypothesis h, both lower-cased token lists):

1. Align words in three stages, each on the words the previous stages left unmatched:
   exact word, Porter stem (NLTK ``PorterStemmer()``), WordNet synonym (a reference item matches a
   hypothesis item if it is the item itself or a lemma name, without '_', of any synset of
   ``wordnet.synsets(hypothesis item)``). Within a stage hypothesis positions are visited from
   last to first and each takes the last still-free reference position that matches.
   In NLTK 3.10 the synonym stage receives the *stems* of the leftover words (the stem stage
   returns its stemmed lists), so the items compared there are stems: 'paste' (stem 'past') no
   longer matches 'spread'. NLTK 3.5 compared the words themselves.
2. m = number of matches, P = m / |h|, R = m / |r|, F = P R / (alpha P + (1 - alpha) R) with
   alpha = 0.9; chunks = number of runs of matches adjacent in both sentences (matches sorted by
   hypothesis position); penalty = gamma (chunks / m)^beta with gamma = 0.5, beta = 3;
   score = (1 - penalty) F, and 0 when m = 0 or a sentence is empty.

Modes:
* ``modern`` reproduces NLTK 3.10 ``single_meteor_score(r_tokens, h_tokens, wordnet=reader)``.
* ``paper`` reproduces NLTK 3.5 ``single_meteor_score(r_string, h_string)``: strings are split on
  whitespace after lower-casing, and the stem stage did not remove the words it matched (its
  filter compared an index with the transposed pairs and never removed anything), so the synonym
  stage can match the same words again. Stem matches are then double-counted and scores can
  exceed 1: ('cut board' vs 'cutting board') = 23/18 = 1.2778 in 3.5, 0.9375 in 3.10;
  ('cut' vs 'cutting') = 1.0 in 3.5, 0.5 in 3.10. NLTK 3.5's morphy (used by ``synsets``) also
  re-applied suffix rules repeatedly; see :func:`wordnet.morphy_forms`.

Speed: per caption we cache its tokens, positions per word and per stem, and per distinct word its
stem and synonym set; per pair only the matching runs (~10-25 µs per pair in CPython instead of
~430 µs through NLTK).
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from .text import modern_tokens, paper_meteor_tokens
from .wordnet import Mode, synsets_for

Progress = Callable[[int, int], None]
_first = itemgetter(0)


@dataclass(frozen=True)
class Prepared:
    """Per-caption METEOR data computed once."""

    toks: tuple[str, ...]
    word_pos: dict[str, tuple[int, ...]]  # word -> ascending positions
    stems: tuple[str, ...]
    stem_pos: dict[str, tuple[int, ...]]  # stem -> ascending positions
    syn_keys: tuple[str, ...]  # what the synonym stage compares: modern the stems, paper the words
    syns: tuple[frozenset[str], ...]  # per position: synonyms of syn_keys[i], itself included
    all_syns: frozenset[str]  # union of syns (quick test whether the synonym stage can match)


class MeteorScorer:
    """Scores caption pairs with METEOR; ``score(reference, hypothesis)``. See module docstring."""

    def __init__(
        self,
        reader,
        mode: Mode = "modern",
        *,
        alpha: float = 0.9,
        beta: float = 3.0,
        gamma: float = 0.5,
    ) -> None:
        from nltk.stem.porter import PorterStemmer

        if mode not in ("paper", "modern"):
            raise ValueError(f"unknown mode {mode!r}")
        self.reader = reader
        self.mode = mode
        self.alpha, self.beta, self.gamma = alpha, beta, gamma
        self._stemmer = PorterStemmer()  # NLTK_EXTENSIONS mode, NLTK's METEOR default
        self._stem: dict[str, str] = {}
        self._syn: dict[str, frozenset[str]] = {}
        self._prepared: dict[str, Prepared] = {}

    # -- per word / per caption caches -------------------------------------------------------
    def tokens(self, caption: str) -> list[str]:
        """Tokens METEOR sees: paper ``lower().split()``, modern :func:`text.modern_tokens`."""
        return paper_meteor_tokens(caption) if self.mode == "paper" else modern_tokens(caption)

    def stem(self, word: str) -> str:
        s = self._stem.get(word)
        if s is None:
            s = self._stem[word] = self._stemmer.stem(word)
        return s

    def synonyms(self, word: str) -> frozenset[str]:
        """The word and the '_'-free lemma names of all its WordNet synsets (any part of speech)."""
        s = self._syn.get(word)
        if s is None:
            names = {
                lemma.name()
                for ss in synsets_for(self.reader, word, self.mode)
                for lemma in ss.lemmas()
                if lemma.name().find("_") < 0
            }
            names.add(word)
            s = self._syn[word] = frozenset(names)
        return s

    def prepare_tokens(self, toks: Sequence[str]) -> Prepared:
        toks = tuple(t.lower() for t in toks)  # NLTK's preprocess=str.lower
        word_pos: dict[str, list[int]] = {}
        stem_pos: dict[str, list[int]] = {}
        stems = tuple(self.stem(t) for t in toks)
        for i, (t, s) in enumerate(zip(toks, stems)):
            word_pos.setdefault(t, []).append(i)
            stem_pos.setdefault(s, []).append(i)
        # NLTK 3.10's stem stage hands the synonym stage its *stemmed* leftovers, so synonyms are
        # looked up for, and compared with, stems ('paste' -> 'past'); NLTK 3.5 used the words.
        syn_keys = stems if self.mode == "modern" else toks
        syns = tuple(self.synonyms(t) for t in syn_keys)
        return Prepared(
            toks=toks,
            word_pos={k: tuple(v) for k, v in word_pos.items()},
            stems=stems,
            stem_pos={k: tuple(v) for k, v in stem_pos.items()},
            syn_keys=syn_keys,
            syns=syns,
            all_syns=frozenset().union(*syns) if syns else frozenset(),
        )

    def prepare(self, caption: str) -> Prepared:
        """Cached :class:`Prepared` for a caption string."""
        p = self._prepared.get(caption)
        if p is None:
            p = self._prepared[caption] = self.prepare_tokens(self.tokens(caption))
        return p

    # -- scoring -----------------------------------------------------------------------------
    def align(self, ref: Prepared, hyp: Prepared) -> list[tuple[int, int]]:
        """(hypothesis position, reference position) matches sorted by hypothesis position."""
        matches: list[tuple[int, int]] = []
        mh: set[int] = set()  # matched hypothesis positions
        mr: set[int] = set()  # matched reference positions
        # Stage 1, exact: for a shared word the last k hypothesis occurrences pair with the last
        # k reference occurrences, last with last (NLTK visits hypothesis positions backwards and
        # each takes the last free reference position).
        for w in hyp.word_pos.keys() & ref.word_pos.keys():
            for i, j in zip(reversed(hyp.word_pos[w]), reversed(ref.word_pos[w])):
                matches.append((i, j))
                mh.add(i)
                mr.add(j)
        # Stage 2, stems, on the positions still free; same pairing rule per stem.
        sh: set[int] = set()
        sr: set[int] = set()
        for s in hyp.stem_pos.keys() & ref.stem_pos.keys():
            hp = [i for i in hyp.stem_pos[s] if i not in mh]
            if not hp:
                continue
            rp = [j for j in ref.stem_pos[s] if j not in mr]
            for i, j in zip(reversed(hp), reversed(rp)):
                matches.append((i, j))
                sh.add(i)
                sr.add(j)
        if self.mode == "modern":
            mh |= sh
            mr |= sr
        # paper (NLTK 3.5): stem-matched words stay available to the synonym stage.
        # Stage 3, WordNet synonyms, greedy from the last free hypothesis position.
        free_r = [j for j in range(len(ref.toks)) if j not in mr]
        if free_r and not hyp.all_syns.isdisjoint([ref.syn_keys[j] for j in free_r]):
            rtoks = ref.syn_keys
            for i in range(len(hyp.toks) - 1, -1, -1):
                if i in mh:
                    continue
                syn = hyp.syns[i]
                for k in range(len(free_r) - 1, -1, -1):
                    if rtoks[free_r[k]] in syn:
                        matches.append((i, free_r.pop(k)))
                        break
                if not free_r:
                    break
        # Stable sort: for equal hypothesis positions (paper mode only) stage order is kept.
        matches.sort(key=_first)
        return matches

    def score_prepared(self, ref: Prepared, hyp: Prepared) -> float:
        n_h, n_r = len(hyp.toks), len(ref.toks)
        if n_h == 0 or n_r == 0:
            return 0.0
        matches = self.align(ref, hyp)
        m = len(matches)
        if m == 0:
            return 0.0
        chunks = 1
        for k in range(m - 1):
            a, b = matches[k], matches[k + 1]
            if not (b[0] == a[0] + 1 and b[1] == a[1] + 1):
                chunks += 1
        # Same operations in the same order as NLTK, so results are bit-identical.
        alpha = self.alpha
        precision = float(m) / n_h
        recall = float(m) / n_r
        fmean = (precision * recall) / (alpha * precision + (1 - alpha) * recall)
        frag_frac = float(chunks) / m
        penalty = self.gamma * frag_frac**self.beta
        return (1 - penalty) * fmean

    def score(self, reference: str, hypothesis: str) -> float:
        """METEOR(reference caption, hypothesis caption) from strings."""
        return self.score_prepared(self.prepare(reference), self.prepare(hypothesis))

    def score_tokens(self, reference: Sequence[str], hypothesis: Sequence[str]) -> float:
        """METEOR from token lists (as NLTK 3.10 takes them)."""
        return self.score_prepared(self.prepare_tokens(reference), self.prepare_tokens(hypothesis))

    def matrix(
        self,
        references: Sequence[Sequence[str]],
        hypotheses: Sequence[str],
        *,
        progress: Progress | None = None,
        workers: int = 1,
    ) -> np.ndarray:
        """M[i, j] = max over reference captions r of row i of METEOR(r, hypotheses[j]), float32.

        A row with several reference captions takes the best one, as NLTK's ``meteor_score``
        does with several references. ``workers`` > 1 splits rows over forked processes.
        """
        refs = [[self.prepare(r) for r in row] for row in references]
        hyps = [self.prepare(h) for h in hypotheses]
        n, m = len(refs), len(hyps)
        out = np.zeros((n, m), dtype=np.float32)
        workers = max(1, min(workers, os.cpu_count() or 1, n))
        if workers == 1 or "fork" not in mp.get_all_start_methods():
            for i, row in enumerate(refs):
                out[i] = _row(self, row, hyps)
                if progress is not None:
                    progress(i + 1, n)
            return out
        global _FORK_STATE
        _FORK_STATE = (self, refs, hyps)
        try:
            ctx = mp.get_context("fork")  # children inherit the caches; nothing is pickled
            with ctx.Pool(workers) as pool:
                done = 0
                for i, values in pool.imap(_row_by_index, range(n), chunksize=8):
                    out[i] = values
                    done += 1
                    if progress is not None:
                        progress(done, n)
        finally:
            _FORK_STATE = None
        return out


def _row(scorer: MeteorScorer, row: list[Prepared], hyps: list[Prepared]) -> np.ndarray:
    values = np.zeros(len(hyps), dtype=np.float64)
    score = scorer.score_prepared
    for r in row:
        values = np.maximum(values, np.fromiter((score(r, h) for h in hyps), np.float64, len(hyps)))
    return values


_FORK_STATE: tuple[MeteorScorer, list[list[Prepared]], list[Prepared]] | None = None


def _row_by_index(i: int) -> tuple[int, np.ndarray]:
    scorer, refs, hyps = _FORK_STATE  # type: ignore[misc]
    return i, _row(scorer, refs[i], hyps)
