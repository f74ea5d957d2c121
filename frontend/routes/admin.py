"""Page routes of the admin area (custom pages; plain records stay in Django admin at /admin/)."""
from django.urls import path

from frontend.views import admin_ui

urlpatterns = [
    path("admin-ui/", admin_ui.overview, name="admin-overview"),
    path("admin-ui/datasets/<id:dataset_id>/", admin_ui.dataset_detail, name="admin-dataset"),
    path("admin-ui/pools/", admin_ui.pool_list, name="admin-pools"),
    path("admin-ui/pools/<id:pool_id>/", admin_ui.pool_detail, name="admin-pool"),
    path("admin-ui/pools/<id:pool_id>/attention/", admin_ui.pool_attention, name="admin-pool-attention"),
    path("admin-ui/raters/", admin_ui.rater_list, name="admin-raters"),
    path("admin-ui/jobs/<id:job_id>/", admin_ui.job_detail, name="admin-job"),
]
