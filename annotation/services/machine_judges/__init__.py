"""Machine judges: import an automatic assessor's verdicts and measure them against people.

A machine judge (models/judges.py) is attached to a pool, judging the pool's pairs, or to a
judgment set, judging the pairs that set has verdicts on. Its verdicts live in MachineJudgment,
never in Label: the queue, resolution, agreement, exports and rater quality control read Label
only, so a machine verdict never counts as a human one.

- imports.py    importing a file of verdicts (`machine_judge_import`, all or nothing)
- agreement.py  the judge measured against people (`machine_judge_result`: kappa, calibration,
                per-query disagreement, system ranking)
- reports.py    its stored `machine_judge` report (kind declared in services/reports/kinds/machine_judge.py)
- lookup.py     which judge a request means; errors.py  MachineJudgeError
- runner/       asking a judge endpoint (a model behind an API) for verdicts; keys.py its API keys
- operations.py its background operations: an upload's import, a set's judge measured, a run
"""
