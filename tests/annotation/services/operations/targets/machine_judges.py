"""Start targets of the machine-judges area's operations (see __init__.py). The import takes an
upload (multipart), so it has no JSON start endpoint here."""
from annotation.models import JudgeEndpoint, MachineJudge
from tests.factories import unique


def _set_with_a_judge(js):
    MachineJudge.objects.create(dataset=js.dataset, judgment_set=js, name=unique("judge"), checksum="z" * 64)
    return js


def _endpoint():
    return JudgeEndpoint.objects.create(name=unique("judge"), base_url="http://127.0.0.1:9", model="demo-vl")


TARGETS = {
    "import_machine_judgments": lambda pool, runs, js: (pool, {"name": "gpt"}),
    "machine_judge_set_report": lambda pool, runs, js: (_set_with_a_judge(js), {}),
    "run_machine_judge": lambda pool, runs, js: (pool, {"endpoint_id": _endpoint().pk}),
}
ENDPOINTS = {
    "machine_judge_set_report": (lambda pool, runs, js: f"/api/v1/judgment-sets/{js.pk}/machine-judge-report/", {},
                                 lambda pool, runs, js: {}),
    "run_machine_judge": (lambda pool, runs, js: f"/api/v1/pools/{pool.pk}/machine-judges/run/",
                          {"endpoint_id": "endpoint"}, lambda pool, runs, js: {}),
}
