"""Offline WordNet 3.0 for the semantic proxies (Debian ``wordnet-base`` files read by NLTK).

Nothing is downloaded. The Debian packages ``wordnet-base`` (data, index and exception files in
/usr/share/wordnet) and ``wordnet-sense-index`` (``index.sense``) provide WordNet 3.0. NLTK 3.10
cannot read them in place, so :func:`ensure_wordnet_cache` lays out a private copy:

* NLTK 3.10 only opens corpus files under a directory on ``nltk.data.path`` ("path sandbox") and
  refuses symbolic links, so the files are *copied* (about 28 MB, under a second) into
  ``<cache root>/corpora/wordnet/`` and the cache root is put on ``nltk.data.path``.
* Debian ships no ``lexnames`` file; it is the fixed 45-line table of the man page
  lexnames(5WN), generated here from :data:`LEXNAMES`.
* ``WordNetCorpusReader.__init__`` maps WordNet versions through the global ``wordnet`` corpus
  (absent here); :class:`OfflineWordNetReader` skips that mapping (``map_wn`` returns None), which
  is only needed for the multilingual Open Multilingual WordNet functions we never use.

The cache root is ``$REJUDGE_NLTK_DATA`` if set, else ``~/.cache/rejudge/nltk_data``.
The source directory is ``$REJUDGE_WORDNET_DIR`` if set, else ``/usr/share/wordnet``.

The module also holds the two WordNet behaviours the proxies need in "paper" and "modern" mode:
:func:`morphy_forms` (NLTK 3.5 kept applying the suffix rules repeatedly when one round found
nothing; NLTK >= 3.8 applies them once) and :func:`synsets_for`.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Literal

Mode = Literal["paper", "modern"]

#: Lexicographer file numbers, names and syntactic categories (1 noun, 2 verb, 3 adj, 4 adv),
#: exactly as listed in lexnames(5WN) for WordNet 3.0.
LEXNAMES: tuple[tuple[str, int], ...] = (
    ("adj.all", 3), ("adj.pert", 3), ("adv.all", 4), ("noun.Tops", 1), ("noun.act", 1),
    ("noun.animal", 1), ("noun.artifact", 1), ("noun.attribute", 1), ("noun.body", 1),
    ("noun.cognition", 1), ("noun.communication", 1), ("noun.event", 1), ("noun.feeling", 1),
    ("noun.food", 1), ("noun.group", 1), ("noun.location", 1), ("noun.motive", 1),
    ("noun.object", 1), ("noun.person", 1), ("noun.phenomenon", 1), ("noun.plant", 1),
    ("noun.possession", 1), ("noun.process", 1), ("noun.quantity", 1), ("noun.relation", 1),
    ("noun.shape", 1), ("noun.state", 1), ("noun.substance", 1), ("noun.time", 1),
    ("verb.body", 2), ("verb.change", 2), ("verb.cognition", 2), ("verb.communication", 2),
    ("verb.competition", 2), ("verb.consumption", 2), ("verb.contact", 2), ("verb.creation", 2),
    ("verb.emotion", 2), ("verb.motion", 2), ("verb.perception", 2), ("verb.possession", 2),
    ("verb.social", 2), ("verb.stative", 2), ("verb.weather", 2), ("adj.ppl", 3),
)

#: Files the NLTK reader opens, minus ``lexnames`` (generated).
WORDNET_FILES: tuple[str, ...] = (
    "cntlist.rev", "index.sense", "index.adj", "index.adv", "index.noun", "index.verb",
    "data.adj", "data.adv", "data.noun", "data.verb", "adj.exc", "adv.exc", "noun.exc",
    "verb.exc",
)

DEFAULT_SOURCE_DIR = "/usr/share/wordnet"
_POS_LIST = ("n", "v", "a", "r")  # nltk.corpus.reader.wordnet.POS_LIST order

_lock = threading.Lock()


class WordNetUnavailable(RuntimeError):
    """Raised when the Debian WordNet files are missing (install wordnet-base, wordnet-sense-index)."""


def cache_root() -> Path:
    """The NLTK data root holding our WordNet copy: ``$REJUDGE_NLTK_DATA`` or ~/.cache/rejudge/nltk_data."""
    env = os.environ.get("REJUDGE_NLTK_DATA")
    root = Path(env) if env else Path.home() / ".cache" / "rejudge" / "nltk_data"
    # The sandbox compares resolved paths, so resolve symlinks in the root itself up front.
    return Path(os.path.realpath(os.path.expanduser(str(root))))


def source_dir() -> Path:
    """Where the Debian WordNet files are read from: ``$REJUDGE_WORDNET_DIR`` or /usr/share/wordnet."""
    return Path(os.environ.get("REJUDGE_WORDNET_DIR", DEFAULT_SOURCE_DIR))


def lexnames_text() -> str:
    """The ``lexnames`` file content: ``NN<TAB>name<TAB>category`` per line, 45 lines."""
    return "".join(f"{i:02d}\t{name}\t{cat}\n" for i, (name, cat) in enumerate(LEXNAMES))


def _umask() -> int:
    # Read from /proc rather than by os.umask(0) and back, which would briefly loosen the mask of
    # every other thread of the process (a worker's). Linux shows it since 4.7; else the usual one.
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def _atomic_write_bytes(dest: Path, data: bytes) -> None:
    # Write then rename, so a concurrent reader (another test worker) never sees a partial file.
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".tmp-" + dest.name)
    try:
        # mkstemp makes the file 0600: the image writes this copy as root at build time and its
        # user reads it, so give it the mode any new file gets (0644 under the usual umask).
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _atomic_copy(src: Path, dest: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".tmp-" + dest.name)
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)  # copyfile, not copy2/symlink: NLTK refuses links
        shutil.copystat(src, tmp)  # keep mtime so the freshness check below is cheap
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def ensure_wordnet_cache(root: Path | None = None, source: Path | None = None) -> Path:
    """Copy the Debian WordNet files into ``<root>/corpora/wordnet`` (if missing or stale).

    A cached file is refreshed when its size or modification time differs from the source file.
    Returns the ``corpora/wordnet`` directory. Raises :class:`WordNetUnavailable` when the source
    files are missing.
    """
    root = cache_root() if root is None else Path(os.path.realpath(root))
    source = source_dir() if source is None else Path(source)
    missing = [f for f in WORDNET_FILES if not (source / f).is_file()]
    if missing:
        raise WordNetUnavailable(
            f"WordNet files missing in {source}: {', '.join(missing)}. "
            "Install the Debian packages wordnet-base and wordnet-sense-index "
            "(apt-get install -y wordnet-base wordnet-sense-index) or set REJUDGE_WORDNET_DIR."
        )
    target = root / "corpora" / "wordnet"
    target.mkdir(parents=True, exist_ok=True)
    for name in WORDNET_FILES:
        src, dest = source / name, target / name
        s = src.stat()
        if dest.is_symlink():
            dest.unlink()
        if dest.is_file():
            d = dest.stat()
            if d.st_size == s.st_size and int(d.st_mtime) == int(s.st_mtime):
                continue
        _atomic_copy(src, dest)
    lexnames = target / "lexnames"
    wanted = lexnames_text().encode("ascii")
    if not lexnames.is_file() or lexnames.read_bytes() != wanted:
        _atomic_write_bytes(lexnames, wanted)
    return target


def _offline_reader_class():  # imported lazily: nltk import costs ~0.3 s
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class OfflineWordNetReader(WordNetCorpusReader):
        """NLTK's WordNet reader without the version mapping through the (absent) global corpus."""

        def map_wn(self, version: str = "wordnet"):  # noqa: D401 - NLTK signature
            # Only the Open Multilingual WordNet needs the 3.0 mapping; we use English only.
            return None

    return OfflineWordNetReader


@functools.lru_cache(maxsize=4)
def _load(root: str, source: str):
    import nltk

    target = ensure_wordnet_cache(Path(root), Path(source))
    # The sandbox: the reader may only open files below a root on nltk.data.path.
    if root not in nltk.data.path:
        nltk.data.path.append(root)
    reader_cls = _offline_reader_class()
    with warnings.catch_warnings():
        # "The multilingual functions are not available with this Wordnet version": expected.
        warnings.simplefilter("ignore", UserWarning)
        return reader_cls(str(target), None)


def load_wordnet(root: Path | str | None = None, source: Path | str | None = None):
    """Return a cached ``WordNetCorpusReader`` over the offline WordNet 3.0 copy (~1-2 s first time)."""
    r = cache_root() if root is None else Path(os.path.realpath(root))
    s = source_dir() if source is None else Path(source)
    with _lock:
        return _load(str(r), str(s))


def wordnet_available(source: Path | str | None = None) -> bool:
    """True when the Debian WordNet source files are present."""
    s = source_dir() if source is None else Path(source)
    return all((s / f).is_file() for f in WORDNET_FILES)


def morphy_forms(reader, form: str, pos: str, mode: Mode) -> list[str]:
    """Candidate base forms of ``form`` for ``pos`` that exist in WordNet (NLTK ``_morphy``).

    modern: NLTK 3.10's ``_morphy`` (exception list, else one round of suffix rules).
    paper: NLTK 3.5's, which in addition, when neither the form nor the one-round forms are in
    WordNet, keeps applying the suffix rules to the generated forms until some are found.
    """
    if mode == "modern":
        return reader._morphy(form, pos)
    exceptions = reader._exception_map[pos]
    substitutions = reader.MORPHOLOGICAL_SUBSTITUTIONS[pos]
    index = reader._lemma_pos_offset_map

    def apply_rules(forms: list[str]) -> list[str]:
        return [f[: -len(old)] + new for f in forms for old, new in substitutions if f.endswith(old)]

    def filter_forms(forms: list[str]) -> list[str]:
        result: list[str] = []
        seen: set[str] = set()
        for f in forms:
            if f in index and pos in index[f] and f not in seen:
                result.append(f)
                seen.add(f)
        return result

    if form in exceptions:
        return filter_forms([form] + exceptions[form])
    forms = apply_rules([form])
    results = filter_forms([form] + forms)
    if results:
        return results
    while forms:
        forms = apply_rules(forms)
        results = filter_forms(forms)
        if results:
            return results
    return []


def synsets_for(reader, lemma: str, mode: Mode, pos: str | None = None) -> list:
    """``wordnet.synsets(lemma, pos)`` with the mode's morphy; order as NLTK (n, v, a, r; file order)."""
    if mode == "modern":
        return reader.synsets(lemma, pos)
    lemma = lemma.lower()
    index = reader._lemma_pos_offset_map
    get = reader.synset_from_pos_and_offset
    return [
        get(p, offset)
        for p in ((pos,) if pos else _POS_LIST)
        for form in morphy_forms(reader, lemma, p, mode)
        for offset in index[form].get(p, [])
    ]


def lemmatize(reader, word: str, pos: str, mode: Mode) -> str:
    """``WordNetLemmatizer().lemmatize(word, pos)``: the shortest WordNet base form, else ``word``.

    Same rule in NLTK 3.5 and 3.10; only the morphy underneath differs (see :func:`morphy_forms`).
    Case is kept (WordNet's index is lower-case, so a capitalised word is usually returned as is).
    """
    lemmas = morphy_forms(reader, word, pos, mode)
    return min(lemmas, key=len) if lemmas else word


def wordnet_version_info(reader=None) -> dict:
    """Which WordNet: version string in the data files, source and cache directories."""
    info = {"source_dir": str(source_dir()), "cache_dir": str(cache_root() / "corpora" / "wordnet")}
    if reader is not None:
        info["version"] = reader.get_version()
    return info
