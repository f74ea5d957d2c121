"""Per-caption features for the BoW, PoS and SYN proxies, computed once per caption and cached.

BoW   set of non-stop words (:func:`text.bow_words`).
PoS   (verbs, nouns): paper = surface forms of spaCy VERB / NOUN tokens (case kept, as published);
      modern = WordNet lemma of the lower-cased surface form (so "chopped" and "chop" agree).
SYN   (verb labels, noun labels): ``synsets="wordnet"`` = Lesk-chosen WordNet synset names
      (:func:`text.wordnet_synset_labels`); ``synsets="epic100"`` (or any class list pair) = the
      class of the word's lemma (:func:`text.class_labels`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from . import text
from .wordnet import Mode, lemmatize, load_wordnet

SynsetSource = Literal["wordnet", "epic100"]

EPIC100_VERB_FILE = "EPIC_100_verb_classes.csv"
EPIC100_NOUN_FILE = "EPIC_100_noun_classes.csv"


def default_epic100_class_lists() -> tuple[Path, Path]:
    """EPIC-KITCHENS-100 class CSVs: ``$REJUDGE_EPIC100_DIR`` or ``<repo>/../shared/datasets/epic100``.

    The files are CC BY-NC 4.0 and are not shipped inside the package; pass ``class_lists``
    explicitly to use other copies.
    """
    env = os.environ.get("REJUDGE_EPIC100_DIR")
    base = Path(env) if env else Path(__file__).resolve().parents[3].parent / "shared/datasets/epic100"
    verb, noun = base / EPIC100_VERB_FILE, base / EPIC100_NOUN_FILE
    if not (verb.is_file() and noun.is_file()):
        raise FileNotFoundError(
            f"EPIC-KITCHENS-100 class lists not found in {base}: set REJUDGE_EPIC100_DIR or pass "
            "class_lists=(verb_csv, noun_csv)"
        )
    return verb, noun


class CaptionAnalyzer:
    """Computes and caches BoW / PoS / SYN features per caption string for one pipeline setting.

    Reuse one analyzer across :func:`proxy_matrix` calls so captions are tagged only once.
    """

    def __init__(
        self,
        mode: Mode = "modern",
        synsets: SynsetSource = "wordnet",
        *,
        ego: bool = False,
        class_lists: tuple[str | Path, str | Path] | None = None,
        wordnet_reader=None,
    ) -> None:
        if mode not in ("paper", "modern"):
            raise ValueError(f"mode must be 'paper' or 'modern', not {mode!r}")
        if synsets not in ("wordnet", "epic100"):
            raise ValueError(f"synsets must be 'wordnet' or 'epic100', not {synsets!r}")
        self.mode: Mode = mode
        self.synsets: SynsetSource = synsets
        self.ego = ego
        self._class_lists_arg = class_lists
        self._reader = wordnet_reader
        self._stops = text.stop_words()
        self._tags: dict[str, tuple[list[str], list[str]]] = {}
        self._bow: dict[str, frozenset[str]] = {}
        self._pos: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        self._syn: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        self._lesk: text.Lesk | None = None
        self._classes: tuple[dict[str, str], dict[str, str]] | None = None
        self._meteor = None

    # -- resources (loaded on first use) -----------------------------------------------------
    @property
    def reader(self):
        if self._reader is None:
            self._reader = load_wordnet()
        return self._reader

    @property
    def class_lists(self) -> tuple[Path, Path] | None:
        if self.synsets != "epic100":
            return None
        if self._class_lists_arg is not None:
            return Path(self._class_lists_arg[0]), Path(self._class_lists_arg[1])
        return default_epic100_class_lists()

    def classes(self) -> tuple[dict[str, str], dict[str, str]]:
        if self._classes is None:
            verb_csv, noun_csv = self.class_lists  # type: ignore[misc]
            self._classes = (text.read_class_list(verb_csv), text.read_class_list(noun_csv))
        return self._classes

    def meteor(self):
        """The :class:`meteor.MeteorScorer` for this mode (shares the WordNet reader)."""
        if self._meteor is None:
            from .meteor import MeteorScorer

            self._meteor = MeteorScorer(self.reader, self.mode)
        return self._meteor

    # -- features ----------------------------------------------------------------------------
    def tag(self, captions: Sequence[str]) -> list[tuple[list[str], list[str]]]:
        """Surface VERB and NOUN tokens per caption (spaCy), tagging each distinct caption once."""
        todo = [c for c in dict.fromkeys(captions) if c not in self._tags]
        if todo:
            for c, vn in zip(todo, text.tag_verbs_nouns(todo, ego=self.ego)):
                self._tags[c] = vn
        return [self._tags[c] for c in captions]

    def bow(self, captions: Sequence[str]) -> list[frozenset[str]]:
        out = []
        for c in captions:
            f = self._bow.get(c)
            if f is None:
                f = self._bow[c] = frozenset(text.bow_words(c, self.mode, self._stops))
            out.append(f)
        return out

    def pos(self, captions: Sequence[str]) -> list[tuple[frozenset[str], frozenset[str]]]:
        todo = [c for c in dict.fromkeys(captions) if c not in self._pos]
        for c, (verbs, nouns) in zip(todo, self.tag(todo)):
            if self.mode == "paper":
                self._pos[c] = (frozenset(verbs), frozenset(nouns))
            else:
                r = self.reader
                self._pos[c] = (
                    frozenset(lemmatize(r, w.lower(), "v", "modern") for w in verbs),
                    frozenset(lemmatize(r, w.lower(), "n", "modern") for w in nouns),
                )
        return [self._pos[c] for c in captions]

    def syn(self, captions: Sequence[str]) -> list[tuple[frozenset[str], frozenset[str]]]:
        todo = [c for c in dict.fromkeys(captions) if c not in self._syn]
        if todo:
            r = self.reader
            if self.synsets == "wordnet":
                if self._lesk is None:
                    self._lesk = text.Lesk(r, self.mode)
                lesk = self._lesk
                for c, (verbs, nouns) in zip(todo, self.tag(todo)):
                    self._syn[c] = (
                        frozenset(text.wordnet_synset_labels(r, lesk, c, verbs, "v", self.mode)),
                        frozenset(text.wordnet_synset_labels(r, lesk, c, nouns, "n", self.mode)),
                    )
            else:
                vcls, ncls = self.classes()
                for c, (verbs, nouns) in zip(todo, self.tag(todo)):
                    self._syn[c] = (
                        frozenset(text.class_labels(r, verbs, "v", vcls, self.mode)),
                        frozenset(text.class_labels(r, nouns, "n", ncls, self.mode)),
                    )
        return [self._syn[c] for c in captions]
