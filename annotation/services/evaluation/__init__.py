"""Scoring run files against judgment files the way the official tools do (`manage.py evaluate`),
nothing stored. Nothing is re-exported here; import from the module that holds the name:

- evaluate.py     `evaluate()` and its result (`Evaluation`)
- registry.py     every judgment format, run format and measure family, by name
- conventions.py  the official tools' rules a score depends on (CONVENTIONS)
- judgments.py, fire.py, rater_grades.py, moments.py   reading judgment files
- runs.py, moments.py                                  reading run files
- measures.py, moments.py                              the measure families
- writers.py      the output layouts (WRITERS)
- errors.py       EvaluationError
- release_qrels.py  a stored release's qrels.txt (`evaluate --release`; the only module here that
                    reads the database and the storage)

Judged@K's threshold and flag live in annotation/analysis/judged.py (the leaderboard's too).
"""
