"""A downloaded release folder, read without the server: qrels for ir_measures / pytrec_eval,
labels and leaderboard as pandas DataFrames, the changes since the previous release."""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from .errors import ReleaseFormatError, require
from .verify import read_meta, verify_folder

# Columns kept as text in the CSV frames, so ids such as "0042" keep their zeros.
_TEXT_COLUMNS = {"query", "query_id", "caption", "caption_id", "clip", "clip_id", "doc", "doc_id", "item", "item_id",
                 "video", "video_id", "rater", "rater_id", "run", "run_name", "pool", "dataset", "aggregation"}


def open_release(path) -> "LocalRelease":
    """Opens a release folder (as ``Client.download`` leaves it). Reading does not re-hash the
    files; ``.verify()`` does."""
    return LocalRelease(path)


class LocalRelease:
    def __init__(self, path):
        self.path = Path(path)
        if not self.path.is_dir():
            raise ReleaseFormatError(f"{self.path}: not a folder (download a release first, or extract its zip)")
        self.meta = read_meta(self.path)
        self.name = self.meta.get("name")
        self.version = self.meta.get("version")
        self.slug = self.meta.get("slug") or f"{self.name}@v{self.version}"

    def __repr__(self) -> str:
        return f"<LocalRelease {self.slug} at {self.path}>"

    def file(self, name: str) -> Path:
        path = self.path / name
        if not path.is_file():
            raise ReleaseFormatError(f"{self.slug}: no {name} in {self.path}")
        return path

    def verify(self) -> list:
        """Re-hashes every file against SHA256SUMS and release.json (VerificationError on a mismatch)."""
        return verify_folder(self.path)

    # -- judgments -----------------------------------------------------------------------------

    def qrels(self) -> dict:
        """``{query_id: {doc_id: relevance}}`` from qrels.txt: the dict ir_measures and pytrec_eval take."""
        path = self.file("qrels.txt")
        qrels: dict = {}
        with open(path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                fields = line.split()
                if not fields:
                    continue
                if len(fields) != 4:
                    raise ReleaseFormatError(f"{path.name}, line {number}: expected 4 fields "
                                             f"'query_id 0 doc_id relevance', got {len(fields)}")
                query, _, doc, rel = fields
                try:
                    grade = int(rel)
                except ValueError:
                    raise ReleaseFormatError(f"{path.name}, line {number}, field 'relevance': "
                                             f"expected an integer, got {rel!r}") from None
                if doc in qrels.setdefault(query, {}):
                    raise ReleaseFormatError(f"{path.name}, line {number}, field 'doc_id': '{doc}' is judged twice "
                                             f"for query '{query}'")
                qrels[query][doc] = grade
        return qrels

    def qrels_frame(self):
        """qrels.txt as a DataFrame with ir_measures' columns: query_id, iteration, doc_id, relevance."""
        pd = require("pandas", "qrels_frame()")
        rows = [(q, "0", d, r) for q, docs in self.qrels().items() for d, r in docs.items()]
        return pd.DataFrame(rows, columns=["query_id", "iteration", "doc_id", "relevance"]).astype(
            {"relevance": "int64"})

    def labels_frame(self):
        """labels.csv (one row per label, raters pseudonymous) as a DataFrame."""
        return self._csv_frame("labels.csv", "labels_frame()")

    def leaderboard_frame(self):
        """The corrected leaderboard (leaderboard.csv) as a DataFrame, one row per run and measure:
        original and corrected values with their intervals, FIRE's A (B + C), ranks, Kendall's tau,
        and the run's Judged@K of the measure's cutoff (``judged_measure``, ``judged``: the share
        of its top K with a verdict in qrels.txt; empty for AP and for releases made before
        Judged@K), and ``judged_flag``: "not comparable with the leaderboard (Judged@K < 0.9)"
        where that share is below the release's threshold (empty otherwise, and in releases made
        before the flag). A measure cut at a depth says so in its name ("C@10 (runs cut at depth
        5)"); without that, each run was scored whole, as trec_eval scores its run file.

        Each row carries its run's provenance (releases made before it have no such columns):
        ``provenance`` ("pooled run" or "submitted run": a run submitted to an earlier version,
        accepted, its holes judged by people), ``provenance_at`` (when it was pooled or submitted),
        ``provenance_by`` (who, in the release's pseudonyms: rNNN for its raters, pNN for anyone else,
        "anonymous"; never a username) and ``submission`` (the submission's id)."""
        return self._csv_frame("leaderboard.csv", "leaderboard_frame()",
                               text=("measure", "judged_flag", "judged_measure", "fire", "provenance", "provenance_at",
                                     "provenance_by"))

    def _csv_frame(self, name: str, purpose: str, text: tuple[str, ...] = ()):
        pd = require("pandas", purpose)
        path = self.file(name)
        with open(path, encoding="utf-8", newline="") as fh:
            header = next(csv.reader(fh), [])
        text = {c: str for c in header if c.lower() in _TEXT_COLUMNS or c in text}
        return pd.read_csv(path, dtype=text, keep_default_na=False, na_values=[""])

    # -- documents -----------------------------------------------------------------------------

    def _json(self, name: str) -> Any:
        path = self.file(name)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ReleaseFormatError(f"{path}: not JSON ({exc})") from exc

    def changes(self) -> Any:
        """changes.json: what changed since the previous release (labels added and changed, with the
        reason)."""
        return self._json("changes.json")

    def leaderboard(self) -> Any:
        return self._json("leaderboard.json")

    def agreement(self) -> Any:
        return self._json("agreement.json")

    def fire(self) -> Any:
        return self._json("fire.json")

    def readme(self) -> str:
        return self.file("README.md").read_text(encoding="utf-8")
