"""The admin's side of pools: build, add runs, members, known pairs, adjudication, progress."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.generics import ListAPIView
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.analysis.judging.settings import JUDGING_PARAMS
from annotation.models import Dataset, Pool, PooledPair, PoolMembership, Run
from annotation.selectors.dashboard import pool_live
from annotation.selectors.pools import pairs_needing_admin, pool_list, pool_progress, pool_throughput
from annotation.services.queue.labels import LabelRefused, pair_adjudicate, pair_requeue
from annotation.services.submissions.accept import submission_pool_provenance
from annotation.services.pools.operations import (POOL_BUILD, POOL_DELETE, judging_reorder_start,
                                                 pool_add_run_start, pool_build_start)
from annotation.services.pools.known_pairs import known_pairs_for_build
from annotation.services.pools.settings_checks import pool_settings_warnings
from annotation.services.judging import (JUDGING_SETTINGS, RECOMPUTE_IN_A_JOB_ABOVE, JudgingError, judging_settings_of,
                                         judging_settings_update)
from annotation.services.pools.build import PoolError, known_pairs_add, known_pairs_import_csv, pool_settings_update
from annotation.services.accounts.raters import membership_revoke, memberships_grant, training_reset
from api.operations import declared_serializer, given, param_field, refused
from api.params import query_int
from api.parsers import JSONParser
from api.permissions import IsAdmin, IsAdminOrResearcherReadOnly
from api.views.deletes import delete_accepted, delete_schema
from api.views.jobs import job_accepted_response


#: A pool's judging strategy and stopping rules (services/judging), as fields that the build form
#: takes flat and PATCH pools/{id}/ takes under `judging`. Declared once (analysis/judging/settings.py):
#: null switches a rule off where the declaration allows it (a budget, a stopping rule) and is refused
#: for the rest.
JudgingSettingsFields = type("JudgingSettingsFields", (serializers.Serializer,), {
    name: param_field(name, spec, allow_null=spec.nullable) for name, spec in JUDGING_PARAMS.items()})


class JudgingSettingsSerializer(JudgingSettingsFields):
    """The judging settings PATCH pools/{id}/ takes: unknown names are refused, not ignored."""

    def to_internal_value(self, data):
        unknown = set(data) - set(self.fields) if isinstance(data, dict) else set()
        if unknown:
            raise ValidationError({name: "is not a judging setting" for name in sorted(unknown)})
        return super().to_internal_value(data)


class PoolOutputSerializer(serializers.ModelSerializer):
    dataset_name = serializers.CharField(source="dataset.name", read_only=True)
    run_ids = serializers.SerializerMethodField()
    judging = serializers.SerializerMethodField()
    submission = serializers.SerializerMethodField(help_text="where the pool came from when it judges a submission's "
                                                             "holes (services/submissions/accept.py); null otherwise")

    class Meta:
        model = Pool
        fields = ["id", "dataset", "dataset_name", "name", "depth", "include_original_positives", "redundancy", "seed",
                  "gold_rate", "training_pass_mark", "lease_seconds", "broken_reports_limit", "run_ids", "created_at",
                  "judging", "submission"]

    def get_submission(self, pool) -> dict | None:
        return submission_pool_provenance(pool)

    def get_run_ids(self, pool) -> list[int]:
        return list(pool.runs.values_list("pk", flat=True))

    def get_judging(self, pool) -> dict:
        return judging_settings_of(pool)


@extend_schema_view(get=extend_schema(parameters=[OpenApiParameter("dataset", int, description="only this dataset's pools")]))
class PoolListApi(ListAPIView):
    """Admins and researchers: pools, optionally ?dataset=<id>."""

    permission_classes = [IsAdminOrResearcherReadOnly]
    serializer_class = PoolOutputSerializer

    def get_queryset(self):
        return pool_list(dataset_id=query_int(self.request, "dataset"))


class PoolBuildApi(APIView):
    """Admin: build a pool from runs' top-k pairs (a background job; 202 + status URL). JSON, or
    multipart when it brings a known-pairs CSV: training and gold pairs come from
    `known_pairs_from` (another pool of the dataset) or `known_pairs_file` (header
    caption,clip,answer,role[,explanation]), checked before the job starts."""

    permission_classes = [IsAdmin]
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    # The build's declared parameters (services/pools/operations.py), the judging settings flat,
    # the dataset and where known pairs come from.
    InputSerializer = declared_serializer(
        "PoolBuildInputSerializer", POOL_BUILD.params, rename={"run_ids": "runs"}, exclude=("judging",),
        base=JudgingSettingsFields, extra={
            "dataset": serializers.IntegerField(),
            "known_pairs_from": serializers.IntegerField(required=False, allow_null=True, default=None),
            "known_pairs_file": serializers.FileField(required=False, allow_null=True, default=None)})

    @extend_schema(request={"application/json": InputSerializer, "multipart/form-data": InputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = dict(data.validated_data)
        judging = {name: v.pop(name) for name in list(v) if name in JUDGING_SETTINGS}
        if judging:
            v["judging"] = judging
        dataset = get_object_or_404(Dataset, pk=v.pop("dataset"))
        name, run_ids = v.pop("name"), v.pop("run_ids")
        source, upload = v.pop("known_pairs_from"), v.pop("known_pairs_file")
        try:
            known = known_pairs_for_build(dataset=dataset, source_pool_id=source, upload=upload)
            if known:
                v["known_pairs"] = known
            job = pool_build_start(dataset=dataset, name=name, run_ids=run_ids, options=given(v),
                                   created_by=request.user)
        except PoolError as exc:
            raise refused(exc, rename={"run_ids": "runs"}) from exc
        return job_accepted_response(job, True)


class PoolDetailApi(APIView):
    """Admins and researchers: a pool with its progress (pairs by state, labels). Admins: PATCH
    lease_seconds, gold_rate, training_pass_mark or redundancy (services/pools.py
    pool_settings_update says what each change affects; `redrawn` counts the unlabelled pairs
    whose number of labels asked changed with the redundancy), or the judging strategy and
    stopping rules in `judging` (services/judging judging_settings_update: the next label uses
    them, every query's order and stop state is recomputed; `reordered` counts the pairs whose
    place changed, `stopped` the queries the new rules stopped; above 50,000 pairs the
    recomputation is a job, given as `job` and `status_url`, and those counts are null; 409 for a
    sampling design once pairs have labels)."""

    permission_classes = [IsAdminOrResearcherReadOnly]

    class SettingsSerializer(JudgingSettingsSerializer):
        # Judging settings come nested in `judging` or flat (the pool page's form sends them flat).
        judging = JudgingSettingsSerializer(required=False)
        # The same bounds as the build form.
        lease_seconds = serializers.IntegerField(min_value=10, max_value=24 * 3600, required=False)
        gold_rate = serializers.FloatField(min_value=0, max_value=1, required=False)
        training_pass_mark = serializers.FloatField(min_value=0, max_value=1, required=False)
        redundancy = serializers.FloatField(min_value=0, max_value=1, required=False)

        def to_internal_value(self, data):
            return serializers.Serializer.to_internal_value(self, data)  # unknown names: validate() says why

        def validate(self, attrs):
            unknown = set(self.initial_data) - set(self.fields)
            if unknown:
                raise ValidationError({name: "cannot be changed after the pool is built" for name in sorted(unknown)})
            if not attrs:
                raise ValidationError({"non_field_errors": "nothing to change: send lease_seconds, gold_rate, "
                                                           "training_pass_mark, redundancy or judging"})
            if "judging" in attrs and not attrs["judging"]:
                raise ValidationError({"judging": "nothing to change: name a strategy setting or stopping rule"})
            return attrs

    def get(self, request, pool_id: int):
        pool = get_object_or_404(Pool, pk=pool_id)
        return Response(PoolOutputSerializer(pool).data | {"progress": pool_progress(pool=pool)})

    @extend_schema(request=SettingsSerializer)
    def patch(self, request, pool_id: int):
        pool = get_object_or_404(Pool, pk=pool_id)
        data = self.SettingsSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        changes = dict(data.validated_data)
        judging = {**changes.pop("judging", {}), **{name: changes.pop(name) for name in list(changes)
                                                    if name in JUDGING_SETTINGS}}
        extra = {}
        if judging:
            large = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL).count() > RECOMPUTE_IN_A_JOB_ABOVE
            try:
                done = judging_settings_update(pool=pool, changes=dict(judging), recompute=not large)
            except JudgingError as exc:
                code = status.HTTP_409_CONFLICT if exc.code == "conflict" else status.HTTP_400_BAD_REQUEST
                return Response({"detail": str(exc), "code": exc.code}, status=code)
            extra = {key: done[key] for key in ("reordered", "stopped")}
            if large:
                job = judging_reorder_start(pool=pool, design=done["design"], created_by=request.user)
                extra["job"] = job.pk
                extra["status_url"] = f"/api/v1/jobs/{job.pk}/"
        result = {"redrawn": 0}
        if changes:
            try:
                result = pool_settings_update(pool=pool, changes=changes)
            except PoolError as exc:
                raise ValidationError({"detail": str(exc)}) from exc
        pool.refresh_from_db()
        return Response(PoolOutputSerializer(pool).data | {"redrawn": result["redrawn"]} | extra
                        | {"warnings": pool_settings_warnings(pool=pool)})

    @delete_schema("pool (its pairs, labels, leases, reports; its judgment sets and submissions stay)")
    def delete(self, request, pool_id: int):
        return delete_accepted(request, POOL_DELETE, get_object_or_404(Pool, pk=pool_id))


class PoolStatsApi(APIView):
    """Admin: throughput per hour and per rater over the last ?hours= (default 48)."""

    permission_classes = [IsAdmin]

    @extend_schema(parameters=[OpenApiParameter("hours", int, description="1 to 8784 (a year); default 48")])
    def get(self, request, pool_id: int):
        pool = get_object_or_404(Pool, pk=pool_id)
        return Response(pool_throughput(pool=pool, hours=query_int(request, "hours", default=48, min_value=1,
                                                                   max_value=366 * 24)))


class PoolLiveApi(APIView):
    """Admin: every figure of the pool page in one consistent snapshot, which the page polls every
    few seconds: pairs by state, production labels (pool and gold pairs) and those of the last
    hour, each member's training, labels, time per label, gold answers, active time and rate
    (labels per active hour) over the last 24 hours, labels per hour and per rater over the last
    ?hours= (the charts), and the queries table. Gaps between a rater's labels longer than
    `idle_cutoff_seconds` are breaks."""

    permission_classes = [IsAdmin]

    @extend_schema(parameters=[OpenApiParameter("hours", int, description="the charts' window: 1 to 8784; default 48")])
    def get(self, request, pool_id: int):
        hours = query_int(request, "hours", default=48, min_value=1, max_value=366 * 24)
        return Response(pool_live(pool=get_object_or_404(Pool, pk=pool_id), chart_hours=hours))


class PoolAddRunApi(APIView):
    """Admin: add a run to an existing pool; only its new pairs are queued, labels stay."""

    permission_classes = [IsAdmin]

    class InputSerializer(serializers.Serializer):
        run = serializers.IntegerField()

    @extend_schema(request=InputSerializer)
    def post(self, request, pool_id: int):
        pool = get_object_or_404(Pool, pk=pool_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        run = get_object_or_404(Run, pk=data.validated_data["run"])
        try:
            job = pool_add_run_start(pool=pool, run=run, created_by=request.user)
        except PoolError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        return job_accepted_response(job, True)


class PoolMembersApi(APIView):
    """Admin: who may rate in this pool (GET), grant access to raters by id (POST)."""

    permission_classes = [IsAdmin]

    class InputSerializer(serializers.Serializer):
        raters = serializers.ListField(child=serializers.IntegerField(), min_length=1)

    def get(self, request, pool_id: int):
        pool = get_object_or_404(Pool, pk=pool_id)
        return Response([{"rater": m.rater_id, "username": m.rater.username, "training": m.training,
                          "training_score": m.training_score} for m in pool.memberships.select_related("rater")])

    @extend_schema(request=InputSerializer)
    def post(self, request, pool_id: int):
        pool = get_object_or_404(Pool, pk=pool_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        users = list(get_user_model().objects.filter(pk__in=data.validated_data["raters"]))
        try:
            added = memberships_grant(pool=pool, users=users)
        except ValueError as exc:
            raise ValidationError({"raters": str(exc)}) from exc
        return Response({"added": added}, status=status.HTTP_201_CREATED)


class PoolMemberApi(APIView):
    """Admin: remove a rater from a pool."""

    permission_classes = [IsAdmin]

    def delete(self, request, pool_id: int, user_id: int):
        pool = get_object_or_404(Pool, pk=pool_id)
        membership_revoke(pool=pool, user=get_object_or_404(get_user_model(), pk=user_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class PoolMemberResetTrainingApi(APIView):
    """Admin: let a rater retake the pool's training queue (their training answers are removed)."""

    permission_classes = [IsAdmin]

    def post(self, request, pool_id: int, user_id: int):
        member = get_object_or_404(PoolMembership.objects.select_related("pool", "rater"), pool_id=pool_id, rater_id=user_id)
        membership = training_reset(pool=member.pool, user=member.rater)
        return Response({"rater": user_id, "training": membership.training})


class KnownPairItemSerializer(serializers.Serializer):
    caption = serializers.CharField(max_length=200)
    clip = serializers.CharField(max_length=200)
    answer = serializers.ChoiceField(choices=PooledPair.Answer.choices)
    role = serializers.ChoiceField(choices=["gold", "training"], default="gold")
    explanation = serializers.CharField(required=False, allow_blank=True, default="")


class KnownPairsApi(APIView):
    """Admin: add gold or training pairs with their answers, as JSON `items` or a CSV `file` with
    header caption,clip,answer,role[,explanation]."""

    permission_classes = [IsAdmin]
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    class InputSerializer(serializers.Serializer):
        # The body must be an object (a bare list was a 500); each item's errors name the item.
        items = KnownPairItemSerializer(many=True, required=False)
        file = serializers.FileField(required=False)

    @extend_schema(request={"application/json": InputSerializer, "multipart/form-data": InputSerializer})
    def post(self, request, pool_id: int):
        pool = get_object_or_404(Pool, pk=pool_id)
        if "file" in request.FILES:
            upload = request.FILES["file"]
            added = known_pairs_import_csv(pool=pool, content=upload.read(), source_name=upload.name)
            return Response({"added": added}, status=status.HTTP_201_CREATED)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            added = known_pairs_add(pool=pool, items=data.validated_data.get("items", []))
        except PoolError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        return Response({"added": added}, status=status.HTTP_201_CREATED)


class AdminPairSerializer(serializers.ModelSerializer):
    caption = serializers.CharField(source="caption.text")
    caption_id = serializers.CharField(source="caption.external_id")
    clip_id = serializers.CharField(source="clip.external_id")
    clip_url = serializers.CharField(source="clip.playback_url")
    labels = serializers.SerializerMethodField()

    class Meta:
        model = PooledPair
        fields = ["id", "caption_id", "caption", "clip_id", "clip_url", "state", "vote_count", "required_labels",
                  "broken_reports", "resolved_label", "labels"]

    def get_labels(self, pair) -> list[dict]:
        return [{"rater": label.rater.username, "value": label.value, "comment": label.comment,
                 "counted": label.counted, "created_at": label.created_at} for label in pair.labels.all()]


@extend_schema_view(get=extend_schema(parameters=[OpenApiParameter(
    "state", str, enum=[PooledPair.State.ADJUDICATION, PooledPair.State.SET_ASIDE, PooledPair.State.DISAGREEMENT])]))
class PairsNeedingAdminApi(ListAPIView):
    """Admin: the adjudication queue (?state=adjudication, default), set-aside or disputed pairs,
    with every rater's label and comment."""

    permission_classes = [IsAdmin]
    serializer_class = AdminPairSerializer

    def get_queryset(self):
        pool = get_object_or_404(Pool, pk=self.kwargs["pool_id"])
        state = self.request.query_params.get("state", PooledPair.State.ADJUDICATION)
        if state not in (PooledPair.State.ADJUDICATION, PooledPair.State.SET_ASIDE, PooledPair.State.DISAGREEMENT):
            raise ValidationError({"state": "one of adjudication, set_aside, disagreement"})
        return pairs_needing_admin(pool=pool, state=state)


class PairAdjudicateApi(APIView):
    """Admin: decide an escalated pair."""

    permission_classes = [IsAdmin]

    class InputSerializer(serializers.Serializer):
        label = serializers.ChoiceField(choices=PooledPair.Answer.choices)
        note = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(request=InputSerializer)
    def post(self, request, pair_id: int):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            pair = pair_adjudicate(pair_id=pair_id, admin=request.user, label=data.validated_data["label"],
                                   note=data.validated_data["note"])
        except PooledPair.DoesNotExist as exc:
            raise ValidationError({"detail": "no such pool pair"}) from exc
        return Response({"id": pair.pk, "state": pair.state, "resolved_label": pair.resolved_label})


class PairRequeueApi(APIView):
    """Admin: put a set-aside or escalated pair back in the queue."""

    permission_classes = [IsAdmin]

    def post(self, request, pair_id: int):
        try:
            pair = pair_requeue(pair_id=pair_id)
        except PooledPair.DoesNotExist as exc:
            raise ValidationError({"detail": "no such pool pair"}) from exc
        except LabelRefused as exc:
            return Response({"detail": str(exc)}, status=409)
        return Response({"id": pair.pk, "state": pair.state})


