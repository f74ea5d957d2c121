"""Routes of judging simulation reports, included under /api/v1/."""
from django.urls import path

from api.views import judging_reports

urlpatterns = [
    path("pools/<id:pool_id>/judging-simulation/", judging_reports.PoolJudgingSimulationApi.as_view(),
         name="pool-judging-simulation"),
    path("judgment-sets/<id:judgment_set_id>/judging-simulation/",
         judging_reports.JudgmentSetJudgingSimulationApi.as_view(), name="judgment-set-judging-simulation"),
    path("reports/<id:report_id>/file/", judging_reports.ReportFileApi.as_view(), name="report-file"),
]
