"""Page routes of the moments area."""
from django.urls import path

from frontend.views import moments

urlpatterns = [
    path("moments/", moments.index, name="moments"),
    path("moments/pools/<id:pool_id>/", moments.pool_detail, name="moments-pool"),
    path("moments/pools/<id:pool_id>/moment-metrics/<id:report_id>/", moments.moment_metrics, name="moment-metrics"),
    path("moments/pools/<id:pool_id>/infap/<id:report_id>/", moments.infap, name="infap"),
]
