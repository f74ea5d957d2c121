"""Judging strategies, stopping rules and inclusion probabilities in the live queue (issue 15).

The pure choices (orders, stopping rules, designs) are annotation/analysis/judging; this package
keeps their results in the queue columns, inside the label transaction (order.py), and holds the
pool's plan, its recomputation and an admin's resume (plan.py)."""
from annotation.services.judging.order import HOOK_COLUMNS_SQL, JUDGING_HOOKED_SQL, pair_judged, pool_is_hooked, query_lock
from annotation.services.judging.plan import (JUDGING_SETTINGS, active_judge_check, RECOMPUTE_IN_A_JOB_ABOVE, JudgingError, judging_settings_check,
                                              judging_settings_of, judging_settings_update, pool_judging_refresh,
                                              pool_resume, queries_ensure, query_resume)

__all__ = ["HOOK_COLUMNS_SQL", "active_judge_check", "JUDGING_HOOKED_SQL", "JUDGING_SETTINGS", "RECOMPUTE_IN_A_JOB_ABOVE", "JudgingError", "judging_settings_check", "judging_settings_of",
           "judging_settings_update", "pair_judged", "pool_is_hooked", "pool_judging_refresh", "pool_resume",
           "queries_ensure", "query_lock", "query_resume"]
