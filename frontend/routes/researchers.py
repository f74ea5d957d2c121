"""Page routes of researcher accounts (admin area)."""
from django.urls import path

from frontend.views import researchers

urlpatterns = [
    path("admin-ui/researchers/", researchers.researcher_list, name="admin-researchers"),
]
