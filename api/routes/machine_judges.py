"""Routes of machine judges, included under /api/v1/."""
from django.urls import path

from api.views import machine_judges

urlpatterns = [
    path("pools/<id:pool_id>/machine-judges/", machine_judges.PoolMachineJudgeImportApi.as_view(),
         name="pool-machine-judge-import"),
    path("judgment-sets/<id:judgment_set_id>/machine-judges/", machine_judges.JudgmentSetMachineJudgeImportApi.as_view(),
         name="judgment-set-machine-judge-import"),
    path("judgment-sets/<id:judgment_set_id>/machine-judge-report/",
         machine_judges.JudgmentSetMachineJudgeReportApi.as_view(), name="judgment-set-machine-judge-report"),
    path("machine-judges/", machine_judges.MachineJudgeListApi.as_view(), name="machine-judge-list"),
    path("machine-judges/<id:judge_id>/", machine_judges.MachineJudgeDetailApi.as_view(), name="machine-judge-detail"),
]
