"""Page routes of the moments area."""
from django.urls import path

from frontend.views import moments

urlpatterns = [
    path("moments/", moments.index, name="moments"),
    path("moments/pools/<int:pool_id>/", moments.pool_detail, name="moments-pool"),
    path("moments/pools/<int:pool_id>/moment-metrics/<int:report_id>/", moments.moment_metrics, name="moment-metrics"),
    path("moments/pools/<int:pool_id>/infap/<int:report_id>/", moments.infap, name="infap"),
]
