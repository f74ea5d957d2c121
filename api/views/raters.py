"""The admin's side of raters: create one, import many from CSV, pause, reset a password. A rater
made without a password gets a one-use invitation link instead; its URL is in the answer, once."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ObjectDoesNotExist
from django.db import IntegrityError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.generics import ListAPIView
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import roles
from annotation.services.accounts.invitations import INVITATION_LIFETIME, invitation_path
from annotation.services.accounts.raters import (rater_create_or_invite, rater_password_reset, rater_profile,
                                                 rater_set_paused, raters_import)
from api.permissions import IsAdmin
from config.throttling import InvitationIssueThrottle


def invitation_url(request, token: str) -> str:
    """The link a rater opens: on the site's public address when one is set (behind a proxy the
    request's host may be an internal name), else on the host the admin called."""
    path = invitation_path(token)
    return f"{settings.REJUDGE_PUBLIC_URL}{path}" if settings.REJUDGE_PUBLIC_URL else request.build_absolute_uri(path)


def invitation_json(request, token: str | None) -> dict:
    if token is None:
        return {"invitation_url": None}
    return {"invitation_url": invitation_url(request, token), "invitation_expires_in_days": INVITATION_LIFETIME.days}


def rater_json(user) -> dict:
    try:
        profile = user.rater_profile  # the list's query brings it along (select_related)
    except ObjectDoesNotExist:  # a rater made in Django admin has none until first use
        profile = rater_profile(user=user)
    return {"id": user.pk, "username": user.username, "email": user.email, "paused": profile.paused,
            "pseudonym": profile.pseudonym, "is_active": user.is_active}


class RaterOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    email = serializers.CharField()
    paused = serializers.BooleanField()
    pseudonym = serializers.IntegerField()
    is_active = serializers.BooleanField()

    def to_representation(self, instance):
        return rater_json(instance)


class RaterListCreateApi(ListAPIView):
    """Admin: list raters (GET, paginated in user-name order: crowd studies add a rater per
    worker), create one (POST; without a password the answer's invitation_url is the rater's
    one-use link to set their own, shown this once)."""

    permission_classes = [IsAdmin]
    throttle_classes = [*ListAPIView.throttle_classes, InvitationIssueThrottle]
    serializer_class = RaterOutputSerializer

    class InputSerializer(serializers.Serializer):
        # The account model's own rules (at most 150 characters; letters, digits and @.+-_), so a
        # bad name is a 400 naming the field rather than a failed save.
        username = serializers.CharField(max_length=150,
                                         validators=get_user_model()._meta.get_field("username").validators)
        password = serializers.CharField(required=False, allow_blank=True, min_length=8, max_length=128)
        email = serializers.EmailField(required=False, allow_blank=True, default="", max_length=254)

    def get_queryset(self):
        return (get_user_model().objects.filter(groups__name=roles.RATER).select_related("rater_profile")
                .order_by("username", "pk"))

    @extend_schema(request=InputSerializer)
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        if get_user_model().objects.filter(username=v["username"]).exists():
            raise ValidationError({"username": f"a user named '{v['username']}' already exists"})
        try:
            new = rater_create_or_invite(username=v["username"], password=v.get("password") or None, email=v["email"],
                                         created_by=request.user)
        except IntegrityError as exc:
            raise ValidationError({"username": "already exists"}) from exc
        return Response({**rater_json(new.user), **invitation_json(request, new.invitation_token)},
                        status=status.HTTP_201_CREATED)


class RaterImportApi(APIView):
    """Admin: create raters in bulk from a CSV `file` (header username[,email][,password]); all or
    none. Each row without a password gets an invitation link: `invitations` lists username and
    url (this answer is the only place the links appear)."""

    permission_classes = [IsAdmin]
    parser_classes = [MultiPartParser, FormParser]

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField(help_text="CSV with a header username[,email][,password]")

    @extend_schema(request=InputSerializer)
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        created = raters_import(content=upload.read(), source_name=upload.name, created_by=request.user)
        return Response({"created": [rater_json(new.user) for new in created],
                         "invitations": [{"username": new.user.username, "url": invitation_url(request, new.invitation_token)}
                                         for new in created if new.invitation_token]},
                        status=status.HTTP_201_CREATED)


class RaterDetailApi(APIView):
    """Admin: pause or resume a rater (PATCH {"paused": true})."""

    permission_classes = [IsAdmin]

    class InputSerializer(serializers.Serializer):
        paused = serializers.BooleanField()

    @extend_schema(request=InputSerializer)
    def patch(self, request, user_id: int):
        user = get_object_or_404(get_user_model(), pk=user_id, groups__name=roles.RATER)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        rater_set_paused(user=user, paused=data.validated_data["paused"])
        return Response(rater_json(user))




class RaterPasswordResetApi(APIView):
    """Admin: a new invitation link for a rater (POST), to set a new password; their earlier unused
    links stop working, their current password works until they set the new one. The answer's
    invitation_url is shown this once."""

    permission_classes = [IsAdmin]
    throttle_classes = [*APIView.throttle_classes, InvitationIssueThrottle]

    @extend_schema(request=None)
    def post(self, request, user_id: int):
        user = get_object_or_404(get_user_model(), pk=user_id, groups__name=roles.RATER)
        try:
            token = rater_password_reset(user=user, created_by=request.user)
        except ValueError as exc:  # a disabled account: a link could not be used
            raise ValidationError({"detail": str(exc)}) from exc
        return Response({**rater_json(user), **invitation_json(request, token)}, status=status.HTTP_201_CREATED)
