"""Routes of judgment sets, included under /api/v1/."""
from django.urls import path

from api.views import judgment_sets

urlpatterns = [
    path("datasets/<id:dataset_id>/judgments/", judgment_sets.JudgmentSetListApi.as_view(), name="judgment-set-list"),
    path("datasets/<id:dataset_id>/judgments/import/", judgment_sets.JudgmentsImportApi.as_view(),
         name="judgments-import"),
    path("judgment-sets/<id:judgment_set_id>/", judgment_sets.JudgmentSetDetailApi.as_view(), name="judgment-set-detail"),
    path("judgment-sets/<id:judgment_set_id>/download/", judgment_sets.JudgmentSetDownloadApi.as_view(),
         name="judgment-set-download"),
    path("judgment-sets/<id:judgment_set_id>/evaluate/", judgment_sets.JudgmentSetEvaluateApi.as_view(),
         name="judgment-set-evaluate"),
    path("judgment-sets/<id:judgment_set_id>/agreement/", judgment_sets.JudgmentSetAgreementApi.as_view(),
         name="judgment-set-agreement"),
    path("pools/<id:pool_id>/judgment-sets/", judgment_sets.JudgmentSetFromPoolApi.as_view(),
         name="pool-judgment-set-create"),
]
