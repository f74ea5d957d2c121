"""The rater's side: my pools, my next pair, heartbeat, release, submit a label, my labels.

Raters only ever see their own leases and labels, and never a gold answer before answering: the
assignment of a gold pair looks exactly like any other. Every id a rater sees is opaque (a lease
token, an item id keyed by the server's secret), never a sequential pair or lease id, which would
tell pairs added after the pool (gold, training) from pool pairs; whether a label was counted is
for admins only."""
from __future__ import annotations

import math

from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import roles
from annotation.models import Label, Lease, Pool
from annotation.models.labels import DEVICE_ID_MAX
from annotation.selectors.pools import rater_pools, rater_progress
from annotation.services.queue.label_changes import answer_change, recent_answers
from annotation.services.queue.labels import LabelRefused, label_submit
from annotation.services.queue.leases import (MAX_EXCLUDED, LeaseGone, item_id_for, lease_next, lease_release, lease_renew,
                                              pair_min_watch)
from api.bounds import MAX_ANSWER_SECONDS, answer_seconds_field
from api.params import query_int
from api.permissions import IsRater


class ClipSerializer(serializers.Serializer):
    id = serializers.CharField(source="external_id")
    url = serializers.CharField(source="playback_url")
    start = serializers.FloatField(allow_null=True)
    end = serializers.FloatField(allow_null=True)
    duration = serializers.FloatField(allow_null=True)


LEASE_TOKEN_MAX = 64
COMMENT_MAX = 5000


class AssignmentSerializer(serializers.Serializer):
    lease_id = serializers.CharField(source="token", help_text="Opaque: send it with the answer, heartbeat or release.")
    item_id = serializers.SerializerMethodField(help_text="Opaque and stable: the same pair always has the same item id.")
    mode = serializers.SerializerMethodField()
    caption = serializers.SerializerMethodField()
    clip = serializers.SerializerMethodField()
    expires_at = serializers.DateTimeField()
    min_watch_seconds = serializers.SerializerMethodField(
        help_text="Seconds the clip must play before relevant / not relevant is taken (sooner: 409 too_soon).")

    def get_min_watch_seconds(self, lease) -> float:
        return pair_min_watch(lease.pair)

    def get_item_id(self, lease) -> str:
        return item_id_for("pair", lease.pair_id)

    def get_mode(self, lease) -> str:
        return "training" if lease.pair.role == "training" else "production"

    def get_caption(self, lease) -> dict:
        return {"text": lease.pair.caption.text}

    def get_clip(self, lease) -> dict:
        data = dict(ClipSerializer(lease.pair.clip).data)
        if lease.pair.start is not None:  # a moment pair: the judged span inside the video
            data["start"], data["end"] = lease.pair.start, lease.pair.end
        return data


# The two answers every judged pair costs (next, submit) are built by hand: a DRF serializer deep-
# copies its declared fields on every instantiation (a ModelSerializer also rebuilds them from the
# model), which cost more CPU than the queue's own work. The serializers above and below stay
# the declared shape (the schema, the listing of my labels); tests/api/test_queue_api.py checks
# that these functions give exactly what they would.
_DATETIME = serializers.DateTimeField()


def _float_or_none(value) -> float | None:
    return None if value is None else float(value)


def assignment_data(lease) -> dict:
    """AssignmentSerializer(lease).data."""
    pair, clip = lease.pair, lease.pair.clip
    start, end = (pair.start, pair.end) if pair.start is not None else (clip.start, clip.end)  # a moment: its span
    return {"lease_id": str(lease.token), "item_id": item_id_for("pair", lease.pair_id),
            "mode": "training" if pair.role == "training" else "production", "caption": {"text": pair.caption.text},
            "clip": {"id": str(clip.external_id), "url": str(clip.playback_url), "start": _float_or_none(start),
                     "end": _float_or_none(end), "duration": _float_or_none(clip.duration)},
            "expires_at": _DATETIME.to_representation(lease.expires_at), "min_watch_seconds": pair_min_watch(pair)}


# The two requests' inputs likewise: building a DRF serializer for them cost more CPU (its fields
# deep-copied per request) than checking them. These accept only what the InputSerializers accept
# unchanged (plain JSON of the right types: ASCII ids with no surrounding space or NUL, a finite
# number in range) and give what validated_data would; anything else, however rare, goes through the
# serializer itself, so every refusal and coercion stays DRF's. tests/api/test_queue_api.py
# checks them against the serializers on generated inputs.
def _plain_id(value, max_length: int, allow_blank: bool = False) -> bool:
    """A CharField would give `value` back as it is."""
    return (type(value) is str and value.isascii() and len(value) <= max_length and "\x00" not in value
            and value == value.strip() and (allow_blank or value != ""))


def next_input_quick(data) -> dict | None:
    """NextPairApi.InputSerializer(data=data).validated_data for the inputs it takes unchanged, else None."""
    if type(data) is not dict or not data.keys() <= {"exclude", "device"}:
        return None
    exclude, device = data.get("exclude", []), data.get("device", "")
    if (type(exclude) is not list or len(exclude) > MAX_EXCLUDED
            or not all(_plain_id(token, LEASE_TOKEN_MAX) for token in exclude)
            or not _plain_id(device, DEVICE_ID_MAX, allow_blank=True)):
        return None
    return {"exclude": list(exclude), "device": device}


_LABEL_VALUES = frozenset(Label.Value.values)


def label_input_quick(data) -> dict | None:
    """LabelSubmitApi.InputSerializer(data=data).validated_data for the inputs it takes unchanged, else None."""
    if type(data) is not dict or not data.keys() <= {"client_id", "lease_id", "value", "seconds", "comment"}:
        return None
    client_id, lease_id, value = data.get("client_id"), data.get("lease_id"), data.get("value")
    comment = data.get("comment", "")
    if not (_plain_id(client_id, 64) and _plain_id(lease_id, LEASE_TOKEN_MAX) and type(value) is str
            and value in _LABEL_VALUES and _plain_id(comment, COMMENT_MAX, allow_blank=True)):
        return None
    out = {"client_id": client_id, "lease_id": lease_id, "value": value, "comment": comment}
    if "seconds" in data:
        seconds = data["seconds"]
        if seconds is not None:
            if type(seconds) not in (int, float) or not 0 <= seconds <= MAX_ANSWER_SECONDS:  # NaN fails too
                return None
            seconds = float(seconds)
        out["seconds"] = seconds
    return out


def validated_input(serializer_class, data, quick) -> dict:
    """`quick(data)`, or the serializer's validated_data (a 400 with DRF's errors when it refuses)."""
    found = quick(data)
    if found is not None:
        return found
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class MyPoolsApi(APIView):
    """Rater: the pools I may work in."""

    permission_classes = [IsRater]

    @extend_schema(responses=inline_serializer("MyPool", {"id": serializers.IntegerField(), "name": serializers.CharField(),
                                                          "dataset": serializers.CharField(), "training": serializers.CharField()},
                                               many=True))
    def get(self, request):
        if roles.crowd_study_token(request.user) is not None:
            return Response([])  # a crowd account works through its study's pages only
        return Response([{"id": m.pool.pk, "name": m.pool.name, "dataset": m.pool.dataset.name, "training": m.training}
                         for m in rater_pools(rater=request.user)])


class NextPairApi(APIView):
    """Rater: lease my next pair in a pool. Pairs I already hold on this `device` come back first,
    except those listed in `exclude` (the ones my page already shows or preloads). Training comes
    strictly in order: while its next pair is held (even if excluded, or on another device) the
    answer is `training_pending`. A pair I gave back comes back to me only when nothing else is
    left for me."""

    permission_classes = [IsRater]

    class InputSerializer(serializers.Serializer):
        exclude = serializers.ListField(child=serializers.CharField(max_length=LEASE_TOKEN_MAX), required=False,
                                        default=list, max_length=MAX_EXCLUDED)
        device = serializers.CharField(max_length=DEVICE_ID_MAX, required=False, default="", allow_blank=True,
                                       help_text="The page's own random id, the same for every tab of one browser: "
                                                 "a device resumes only the leases it holds, so two devices of one "
                                                 "account are given different pairs.")

    @extend_schema(request=InputSerializer, responses=inline_serializer(
        "NextPair", {"assignment": AssignmentSerializer(allow_null=True), "reason": serializers.CharField(allow_null=True),
                     "idle_release_seconds": serializers.IntegerField()}))
    def post(self, request, pool_id: int):
        v = validated_input(self.InputSerializer, request.data, next_input_quick)
        assignment = lease_next(pool=pool_id, rater=request.user, device=v["device"], exclude_leases=v["exclude"])
        if assignment.reason == "not_a_member":
            raise NotFound("no such pool")  # the same for pools that exist and those that do not
        body = {"assignment": assignment_data(assignment.lease) if assignment.lease else None,
                "reason": assignment.reason, "idle_release_seconds": settings.REJUDGE["IDLE_RELEASE_SECONDS"]}
        return Response(body)


class MyProgressApi(APIView):
    """Rater: labelled today and in total, left in the pool, training state."""

    permission_classes = [IsRater]

    def get(self, request, pool_id: int):
        pool = get_object_or_404(Pool, pk=pool_id, memberships__rater=request.user)
        return Response(rater_progress(pool=pool, rater=request.user))


class LeaseHeartbeatApi(APIView):
    """Rater: keep my lease alive while the page is open. 410 when it has ended (the page then
    submits the answer anyway: a late answer is kept). Whether the pair still needs a label is
    not said: a gold pair always would, so a "no" would mark a pair as a pool pair."""

    permission_classes = [IsRater]

    def post(self, request, lease_id: str):
        try:
            lease = lease_renew(token=lease_id, rater=request.user)
        except Lease.DoesNotExist as exc:
            raise NotFound("no such lease") from exc
        except LeaseGone as gone:
            return Response({"detail": f"the lease has {gone.lease.state}", "state": gone.lease.state},
                            status=status.HTTP_410_GONE)
        return Response({"lease_id": lease.token, "expires_at": lease.expires_at})


class LeaseReleaseApi(APIView):
    """Rater: give a pair back without judging it."""

    permission_classes = [IsRater]

    def post(self, request, lease_id: str):
        try:
            lease_release(token=lease_id, rater=request.user)
        except Lease.DoesNotExist as exc:
            raise NotFound("no such lease") from exc
        return Response(status=status.HTTP_204_NO_CONTENT)


class RaterLabelSerializer(serializers.ModelSerializer):
    """A label as its rater sees it: no database ids and no `counted` (a gold or surplus answer
    would show as not counted)."""

    item_id = serializers.SerializerMethodField()

    class Meta:
        model = Label
        fields = ["client_id", "item_id", "value", "seconds", "comment", "created_at"]

    def get_item_id(self, label) -> str:
        return item_id_for("pair", label.pair_id)


def rater_label_data(label) -> dict:
    """RaterLabelSerializer(label).data."""
    return {"client_id": str(label.client_id), "item_id": item_id_for("pair", label.pair_id), "value": str(label.value),
            "seconds": _float_or_none(label.seconds), "comment": str(label.comment),
            "created_at": _DATETIME.to_representation(label.created_at)}


REFUSAL_STATUS = {"invalid": 400, "not_found": 404, "forbidden": 403, "paused": 403, "training": 403, "conflict": 409,
                  "too_soon": 409, "training_order": 409, "training_answer": 409, "used_by_report": 409, "closed": 409}


class LabelSubmitApi(APIView):
    """Rater: submit a label for the pair held under `lease_id` (the token the assignment came
    with; an answer on the rater's own lease that has since run out is still taken, counted if
    the pair still needs it). No other pair can be labelled. `client_id` is generated by the
    page; sending the same one again returns the stored label (200) instead of creating another
    (201). A training pair's answer comes back in `feedback`; nothing else about the pair is
    revealed."""

    permission_classes = [IsRater]

    class InputSerializer(serializers.Serializer):
        client_id = serializers.CharField(max_length=64)
        lease_id = serializers.CharField(max_length=LEASE_TOKEN_MAX)
        value = serializers.ChoiceField(choices=Label.Value.choices)
        seconds = answer_seconds_field()
        comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=COMMENT_MAX)

    @extend_schema(request=InputSerializer, responses={201: inline_serializer(
        "LabelSubmitted", {"label": RaterLabelSerializer(), "feedback": serializers.DictField(allow_null=True)})})
    def post(self, request):
        v = validated_input(self.InputSerializer, request.data, label_input_quick)
        try:
            result = label_submit(rater=request.user, client_id=v["client_id"], lease=v["lease_id"], value=v["value"],
                                  seconds=v.get("seconds"), comment=v["comment"])
        except LabelRefused as refused:
            body = {"detail": str(refused), "code": refused.code}
            headers = None
            if refused.seconds_left is not None:
                body["seconds_left"] = refused.seconds_left
                headers = {"Retry-After": str(max(1, math.ceil(refused.seconds_left)))}
            return Response(body, status=REFUSAL_STATUS[refused.code], headers=headers)
        body = {"label": rater_label_data(result.label), "feedback": result.feedback}
        return Response(body, status=201 if result.created else 200)


@extend_schema_view(get=extend_schema(parameters=[OpenApiParameter("pool", int, description="only this pool's labels")]))
class MyLabelsApi(ListAPIView):
    """Rater: my own labels (never anyone else's), newest first; ?pool= filters."""

    permission_classes = [IsRater]
    serializer_class = RaterLabelSerializer

    def get_queryset(self):
        labels = Label.objects.filter(rater=self.request.user).order_by("-created_at", "-id")
        pool = query_int(self.request, "pool", min_value=1)
        return labels.filter(pair__pool_id=pool) if pool else labels


class RecentAnswerSerializer(serializers.Serializer):
    """An answer as its rater sees it when reviewing: the opaque item id, never a pair or label id."""

    item_id = serializers.CharField()
    caption = serializers.CharField()
    clip = inline_serializer("RecentAnswerClip", {"url": serializers.CharField(),
                                                  "start": serializers.FloatField(allow_null=True),
                                                  "end": serializers.FloatField(allow_null=True)})
    value = serializers.CharField()
    comment = serializers.CharField()
    answered_at = serializers.DateTimeField()
    changed_at = serializers.DateTimeField(allow_null=True)
    can_change = serializers.BooleanField()
    why_not = serializers.CharField(allow_null=True, help_text="The refusal code a change would get now.")


def _refusal_response(refused: LabelRefused) -> Response:
    return Response({"detail": str(refused), "code": refused.code}, status=REFUSAL_STATUS[refused.code])


@extend_schema_view(get=extend_schema(parameters=[OpenApiParameter("pool", int, required=True)],
                                      responses=RecentAnswerSerializer(many=True)))
class MyRecentAnswersApi(APIView):
    """Rater: my last answers in a pool, newest first, each saying whether it can still be changed."""

    permission_classes = [IsRater]

    def get(self, request):
        pool = query_int(request, "pool", min_value=1)
        if not pool:
            return Response({"detail": "pool is required", "code": "invalid"}, status=400)
        try:
            answers = recent_answers(rater=request.user, pool_id=pool)
        except LabelRefused as refused:
            return _refusal_response(refused)
        return Response(RecentAnswerSerializer(answers, many=True).data)


class MyAnswerChangeApi(APIView):
    """Rater: replace my answer on the item `item_id` by any answer (relevant, not relevant,
    ambiguous with a comment, doesn't play). The label is rewritten, never duplicated, and the
    change is kept for admins. 409 with a `code` when the answer can no longer change:
    training_answer, used_by_report, closed, too_soon (a vote before the clip could be watched)."""

    permission_classes = [IsRater]

    class InputSerializer(serializers.Serializer):
        value = serializers.ChoiceField(choices=Label.Value.choices)
        comment = serializers.CharField(required=False, allow_blank=True, max_length=COMMENT_MAX)

    @extend_schema(request=InputSerializer, responses=inline_serializer(
        "AnswerChanged", {"item_id": serializers.CharField(), "value": serializers.CharField(),
                          "comment": serializers.CharField(), "changed_at": serializers.DateTimeField()}))
    def post(self, request, item_id: str):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        try:
            label, change = answer_change(rater=request.user, item_id=item_id, value=v["value"], comment=v.get("comment"))
        except LabelRefused as refused:
            return _refusal_response(refused)
        return Response({"item_id": item_id, "value": label.value, "comment": label.comment,
                         "changed_at": change.changed_at})
