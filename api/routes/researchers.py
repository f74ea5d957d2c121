"""Routes of researcher accounts (admin only)."""
from django.urls import path

from api.views import researchers

urlpatterns = [
    path("researchers/", researchers.ResearcherListCreateApi.as_view(), name="researcher-list"),
    path("researchers/<id:user_id>/", researchers.ResearcherDetailApi.as_view(), name="researcher-detail"),
]
