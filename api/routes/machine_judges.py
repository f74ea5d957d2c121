"""Routes of machine judges, included under /api/v1/."""
from django.urls import path

from api.views import judge_endpoints, machine_judges

urlpatterns = [
    path("pools/<id:pool_id>/machine-judges/", machine_judges.PoolMachineJudgeImportApi.as_view(),
         name="pool-machine-judge-import"),
    path("judgment-sets/<id:judgment_set_id>/machine-judges/", machine_judges.JudgmentSetMachineJudgeImportApi.as_view(),
         name="judgment-set-machine-judge-import"),
    path("judgment-sets/<id:judgment_set_id>/machine-judge-report/",
         machine_judges.JudgmentSetMachineJudgeReportApi.as_view(), name="judgment-set-machine-judge-report"),
    path("machine-judges/", machine_judges.MachineJudgeListApi.as_view(), name="machine-judge-list"),
    path("machine-judges/<id:judge_id>/", machine_judges.MachineJudgeDetailApi.as_view(), name="machine-judge-detail"),
    path("judge-endpoints/", judge_endpoints.JudgeEndpointListApi.as_view(), name="judge-endpoint-list"),
    path("judge-endpoints/<id:endpoint_id>/", judge_endpoints.JudgeEndpointDetailApi.as_view(),
         name="judge-endpoint-detail"),
    path("pools/<id:pool_id>/machine-judges/run/", judge_endpoints.PoolMachineJudgeRunApi.as_view(),
         name="pool-machine-judge-run"),
    path("judgment-sets/<id:judgment_set_id>/machine-judges/run/", judge_endpoints.JudgmentSetMachineJudgeRunApi.as_view(),
         name="judgment-set-machine-judge-run"),
]
