"""Submissions: a run file submitted to a release and scored against the release's qrels.txt by a
job (operations.py `score_submission`), with Judged@K and its holes (top K pairs without a verdict)
counted per query. The submission row keeps its holes for the next step, an admin's acceptance into
an incremental pool (status `accepted`), which is not built yet."""
