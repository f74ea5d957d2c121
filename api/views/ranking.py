"""Five-caption ranking studies over REST.

Raters: my studies, my next task, heartbeat, release, submit an ordering. A rater sees a task's
clip and the five captions' ids and texts in a shuffled order, never which proxy chose them, their
scores or their positions. Admins: create a study (a job), list, progress, members, report (a job).
"""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Dataset, RankingLease, RankingStudy, RankingSubmission
from annotation.selectors.ranking import (rater_ranking_studies, ranking_study_list, ranking_study_progress,
                                          ranking_study_reports, ranking_task_display)
from annotation.services.proxies.matrices import ProxyError
from annotation.services.ranking.leases import (RankingLeaseGone, ranking_lease_next, ranking_lease_release,
                                                ranking_lease_renew)
from annotation.services.ranking.operations import STUDY_BUILD, ranking_report_start, ranking_study_start
from annotation.services.ranking.study import ranking_memberships_grant
from annotation.services.ranking.submissions import RankingRefused, ranking_submission_create
from api.bounds import answer_seconds_field
from api.operations import declared_serializer, given, refused
from api.params import query_int
from api.permissions import IsAdmin, IsAdminOrResearcherReadOnly, IsRater
from api.views.jobs import JobOutputSerializer, job_accepted_response
from annotation.services.queue.leases import item_id_for
from api.views.queue import LEASE_TOKEN_MAX, ClipSerializer


# The page's held and preloaded leases, answers on their way, and the tasks skipped this session.
RANKING_EXCLUDE_MAX = 50


class RankingAssignmentSerializer(serializers.Serializer):
    lease_id = serializers.CharField(source="token", help_text="Opaque: send it with the ordering, heartbeat or release.")
    item_id = serializers.SerializerMethodField(help_text="Opaque and stable: the same task always has the same item id.")
    clip = ClipSerializer(source="task.clip")
    captions = serializers.SerializerMethodField()
    expires_at = serializers.DateTimeField()

    def get_item_id(self, lease) -> str:
        return item_id_for("ranking-task", lease.task_id)

    @extend_schema_field(inline_serializer("RankingCaption", {"id": serializers.IntegerField(),
                                                              "text": serializers.CharField()}, many=True))
    def get_captions(self, lease) -> list[dict]:
        return ranking_task_display(task=lease.task, rater=lease.rater)


class MyRankingStudiesApi(APIView):
    """Rater: the ranking studies I am a member of, with how many tasks I have ordered and how
    many still need orderings that I have not given."""

    permission_classes = [IsRater]

    @extend_schema(responses=inline_serializer("MyRankingStudy", {
        "id": serializers.IntegerField(), "name": serializers.CharField(), "dataset": serializers.CharField(),
        "submitted": serializers.IntegerField(), "left": serializers.IntegerField()}, many=True))
    def get(self, request):
        return Response([{"id": s.pk, "name": s.name, "dataset": s.dataset.name, "submitted": s.submitted, "left": s.left}
                         for s in rater_ranking_studies(rater=request.user)])


class RankingNextApi(APIView):
    """Rater: lease my next task in a study. Tasks I already hold come back first, except those
    listed in `exclude` (the ones my page already shows or preloads); a task whose lease is listed
    (e.g. one I gave back with "none of these fits") is not handed to me again."""

    permission_classes = [IsRater]

    class InputSerializer(serializers.Serializer):
        exclude = serializers.ListField(child=serializers.CharField(max_length=LEASE_TOKEN_MAX), required=False,
                                        default=list, max_length=RANKING_EXCLUDE_MAX)

    @extend_schema(request=InputSerializer, responses=inline_serializer(
        "NextRankingTask", {"assignment": RankingAssignmentSerializer(allow_null=True),
                            "reason": serializers.CharField(allow_null=True)}))
    def post(self, request, study_id: int):
        study = get_object_or_404(RankingStudy, pk=study_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        assignment = ranking_lease_next(study=study, rater=request.user, exclude_leases=data.validated_data["exclude"])
        if assignment.reason == "not_a_member":
            raise NotFound("no such ranking study")  # do not reveal studies the rater has no access to
        lease = assignment.lease
        return Response({"assignment": RankingAssignmentSerializer(lease).data if lease else None,
                         "reason": assignment.reason})


class RankingLeaseHeartbeatApi(APIView):
    """Rater: keep my lease alive while the page is open. 410 when it has ended, with whether the
    task still needs an ordering (the page then submits anyway, or moves on)."""

    permission_classes = [IsRater]

    def post(self, request, lease_id: str):
        try:
            lease = ranking_lease_renew(token=lease_id, rater=request.user)
        except RankingLease.DoesNotExist as exc:
            raise NotFound("no such lease") from exc
        except RankingLeaseGone as gone:
            return Response({"detail": f"the lease has {gone.lease.state}", "state": gone.lease.state,
                             "still_needed": gone.still_needed}, status=status.HTTP_410_GONE)
        return Response({"lease_id": lease.token, "expires_at": lease.expires_at})


class RankingLeaseReleaseApi(APIView):
    """Rater: give a task back without ordering it (e.g. the clip does not play)."""

    permission_classes = [IsRater]

    def post(self, request, lease_id: str):
        try:
            ranking_lease_release(token=lease_id, rater=request.user)
        except RankingLease.DoesNotExist as exc:
            raise NotFound("no such lease") from exc
        return Response(status=status.HTTP_204_NO_CONTENT)


class RankingSubmissionApi(APIView):
    """Rater: submit my ordering of the five captions of the task held under `lease_id` (most
    relevant first); no other task can be ordered. `client_id` is generated by the page; the same
    one again returns the stored submission (200, not 201)."""

    permission_classes = [IsRater]

    class InputSerializer(serializers.Serializer):
        client_id = serializers.CharField(max_length=64)
        lease_id = serializers.CharField(max_length=LEASE_TOKEN_MAX)
        order = serializers.ListField(child=serializers.IntegerField(), min_length=1, max_length=20)
        seconds = answer_seconds_field()

    class OutputSerializer(serializers.ModelSerializer):
        item_id = serializers.SerializerMethodField()
        order = serializers.ListField(child=serializers.IntegerField())

        class Meta:
            model = RankingSubmission
            fields = ["client_id", "item_id", "order", "created_at"]

        def get_item_id(self, submission) -> str:
            return item_id_for("ranking-task", submission.task_id)

    REFUSAL_STATUS = {"invalid": 400, "not_found": 404, "forbidden": 403, "paused": 403, "conflict": 409}

    @extend_schema(request=InputSerializer, responses={201: inline_serializer(
        "RankingSubmissionCreated", {"submission": OutputSerializer()})})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        try:
            result = ranking_submission_create(rater=request.user, client_id=v["client_id"], lease=v["lease_id"],
                                               order=v["order"], seconds=v.get("seconds"))
        except RankingRefused as refusal:
            if refusal.code == "invalid":
                raise ValidationError({refusal.field: [str(refusal)]}) from refusal
            return Response({"detail": str(refusal), "code": refusal.code}, status=self.REFUSAL_STATUS[refusal.code])
        return Response({"submission": self.OutputSerializer(result.submission).data},
                        status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


# --- admin -----------------------------------------------------------------------------------

class RankingStudyOutputSerializer(serializers.ModelSerializer):
    dataset_name = serializers.CharField(source="dataset.name", read_only=True)
    # The choices as the build declares them (services/ranking/operations.py), so the schema has
    # one enum of each for the request and the answer.
    mode = serializers.ChoiceField(choices=STUDY_BUILD.params["mode"].choices, read_only=True)
    synsets = serializers.ChoiceField(choices=STUDY_BUILD.params["synsets"].choices, read_only=True)

    class Meta:
        model = RankingStudy
        fields = ["id", "dataset", "dataset_name", "name", "proxies", "n_clips", "seed", "mode", "synsets",
                  "min_fraction", "raters_per_task", "lease_seconds", "created_at"]


class RankingStudyListCreateApi(APIView):
    """Admins and researchers: the ranking studies (?dataset=<id>). Admin: POST creates one as a
    job (proxy rows of the sampled clips, five captions per clip and proxy, the tasks)."""

    permission_classes = [IsAdminOrResearcherReadOnly]

    # The build's declared parameters (services/ranking/operations.py) and the dataset.
    InputSerializer = declared_serializer("RankingStudyInputSerializer", STUDY_BUILD.params,
                                          extra={"dataset": serializers.IntegerField()})

    @extend_schema(responses=RankingStudyOutputSerializer(many=True),
                   parameters=[OpenApiParameter("dataset", int, description="only this dataset's studies")])
    def get(self, request):
        studies = ranking_study_list(dataset_id=query_int(request, "dataset", min_value=1))
        return Response(RankingStudyOutputSerializer(studies, many=True).data)

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = dict(data.validated_data)
        dataset = get_object_or_404(Dataset, pk=v.pop("dataset"))
        try:
            job = ranking_study_start(dataset=dataset, created_by=request.user, **given(v))
        except ProxyError as exc:
            raise refused(exc) from exc
        return job_accepted_response(job, True)


class RankingStudyDetailApi(APIView):
    """Admins and researchers: a study with its progress and the ids of its reports."""

    permission_classes = [IsAdminOrResearcherReadOnly]

    def get(self, request, study_id: int):
        study = get_object_or_404(RankingStudy.objects.select_related("dataset"), pk=study_id)
        return Response(RankingStudyOutputSerializer(study).data | {
            "progress": ranking_study_progress(study=study),
            "reports": list(ranking_study_reports(study=study).values_list("pk", flat=True))})


class RankingStudyMembersApi(APIView):
    """Admin: who may rank in this study (GET); add raters by id (POST)."""

    permission_classes = [IsAdmin]

    class InputSerializer(serializers.Serializer):
        raters = serializers.ListField(child=serializers.IntegerField(), min_length=1)

    def get(self, request, study_id: int):
        study = get_object_or_404(RankingStudy, pk=study_id)
        return Response([{"rater": m.rater_id, "username": m.rater.username, "added_at": m.added_at}
                         for m in study.memberships.select_related("rater").order_by("pk")])

    @extend_schema(request=InputSerializer)
    def post(self, request, study_id: int):
        study = get_object_or_404(RankingStudy, pk=study_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        ids = data.validated_data["raters"]
        users = list(get_user_model().objects.filter(pk__in=ids))
        missing = sorted(set(ids) - {u.pk for u in users})
        if missing:
            raise ValidationError({"raters": [f"no users with ids {missing}"]})
        try:
            added = ranking_memberships_grant(study=study, users=users)
        except ValueError as exc:
            raise ValidationError({"raters": [str(exc)]}) from exc
        return Response({"added": added}, status=status.HTTP_201_CREATED)


class RankingStudyReportApi(APIView):
    """Admin: compute the human-to-proxy report over the study's complete tasks (a job)."""

    permission_classes = [IsAdmin]

    @extend_schema(request=None, responses={202: JobOutputSerializer})
    def post(self, request, study_id: int):
        study = get_object_or_404(RankingStudy, pk=study_id)
        try:
            job = ranking_report_start(study=study, created_by=request.user)
        except ProxyError as exc:
            raise refused(exc) from exc
        return job_accepted_response(job, True)
