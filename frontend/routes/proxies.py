"""Page routes of the proxies area."""
from django.urls import path

from frontend.views import proxies

urlpatterns = [
    path("proxies/", proxies.overview, name="proxies"),
    path("proxies/reports/<id:report_id>/", proxies.report_detail, name="proxy-report"),
]
