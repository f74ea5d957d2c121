"""Page routes of the reports area."""
from django.urls import path

from frontend.views import reports

urlpatterns = [
    path("reports/", reports.report_index, name="report-index"),
    path("reports/<id:report_id>/", reports.report_detail, name="report-detail"),
]
