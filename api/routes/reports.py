"""Routes of reports and exports, included under /api/v1/."""
from django.urls import path

from api.views import reports

urlpatterns = [
    path("pools/<id:pool_id>/reports/", reports.PoolReportCreateApi.as_view(), name="pool-report-create"),
    path("reports/", reports.ReportListApi.as_view(), name="report-list"),
    path("reports/<id:report_id>/", reports.ReportDetailApi.as_view(), name="report-detail"),
    path("reports/<id:report_id>/csv/", reports.ReportCsvApi.as_view(), name="report-csv"),
    path("pools/<id:pool_id>/exports/", reports.PoolExportCreateApi.as_view(), name="pool-export-create"),
    path("exports/", reports.ExportListApi.as_view(), name="export-list"),
    path("exports/<id:export_id>/download/", reports.ExportDownloadApi.as_view(), name="export-download"),
]
