"""Start targets of the ranking study's operations (see __init__.py)."""
from annotation.models import RankingStudy

TARGETS = {
    "build_ranking_study": lambda pool, runs, js: (pool.dataset, {"name": "study", "proxies": ["bow"]}),
    # The report takes no parameter; a study row is all its check reads.
    "ranking_study_report": lambda pool, runs, js: (
        RankingStudy.objects.create(dataset=pool.dataset, name="study", proxies=["bow"]), {}),
}
ENDPOINTS = {
    "build_ranking_study": (lambda pool, runs, js: "/api/v1/ranking-studies/", {},
                            lambda pool, runs, js: {"dataset": pool.dataset.pk}),
}
