"""Routes of pools, the rater queue, labels and raters."""
from django.urls import path

from api.views import pools, queue, raters

urlpatterns = [
    # rater: the judging page's calls first (Django tries the patterns in order)
    path("pools/<id:pool_id>/next/", queue.NextPairApi.as_view(), name="pool-next"),
    path("labels/", queue.LabelSubmitApi.as_view(), name="label-submit"),
    path("leases/<str:lease_id>/heartbeat/", queue.LeaseHeartbeatApi.as_view(), name="lease-heartbeat"),
    path("my/pools/", queue.MyPoolsApi.as_view(), name="my-pools"),
    path("my/labels/", queue.MyLabelsApi.as_view(), name="my-labels"),
    path("my/recent-answers/", queue.MyRecentAnswersApi.as_view(), name="my-recent-answers"),
    path("my/answers/<str:item_id>/change/", queue.MyAnswerChangeApi.as_view(), name="my-answer-change"),
    path("pools/<id:pool_id>/my-progress/", queue.MyProgressApi.as_view(), name="pool-my-progress"),
    path("leases/<str:lease_id>/release/", queue.LeaseReleaseApi.as_view(), name="lease-release"),
    # admin (and researchers reading pools)
    path("pools/", pools.PoolListApi.as_view(), name="pool-list"),
    path("pools/build/", pools.PoolBuildApi.as_view(), name="pool-build"),
    path("pools/<id:pool_id>/", pools.PoolDetailApi.as_view(), name="pool-detail"),
    path("pools/<id:pool_id>/stats/", pools.PoolStatsApi.as_view(), name="pool-stats"),
    path("pools/<id:pool_id>/live/", pools.PoolLiveApi.as_view(), name="pool-live"),
    path("pools/<id:pool_id>/runs/", pools.PoolAddRunApi.as_view(), name="pool-add-run"),
    path("pools/<id:pool_id>/members/", pools.PoolMembersApi.as_view(), name="pool-members"),
    path("pools/<id:pool_id>/members/<id:user_id>/", pools.PoolMemberApi.as_view(), name="pool-member"),
    path("pools/<id:pool_id>/members/<id:user_id>/reset-training/", pools.PoolMemberResetTrainingApi.as_view(), name="pool-member-reset"),
    path("pools/<id:pool_id>/known-pairs/", pools.KnownPairsApi.as_view(), name="pool-known-pairs"),
    path("pools/<id:pool_id>/attention/", pools.PairsNeedingAdminApi.as_view(), name="pool-attention"),
    path("pairs/<id:pair_id>/adjudicate/", pools.PairAdjudicateApi.as_view(), name="pair-adjudicate"),
    path("pairs/<id:pair_id>/requeue/", pools.PairRequeueApi.as_view(), name="pair-requeue"),
    path("raters/", raters.RaterListCreateApi.as_view(), name="rater-list"),
    path("raters/import/", raters.RaterImportApi.as_view(), name="rater-import"),
    path("raters/<id:user_id>/", raters.RaterDetailApi.as_view(), name="rater-detail"),
    path("raters/<id:user_id>/password-reset/", raters.RaterPasswordResetApi.as_view(), name="rater-password-reset"),
]
