"""The admin's side of raters: create one, import many from CSV, pause."""
from __future__ import annotations

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
from annotation.services.accounts.raters import rater_create, rater_profile, rater_set_paused, raters_import_csv
from api.permissions import IsAdmin


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
    worker), create one (POST)."""

    permission_classes = [IsAdmin]
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
            user = rater_create(username=v["username"], password=v.get("password") or None, email=v["email"])
        except IntegrityError as exc:
            raise ValidationError({"username": "already exists"}) from exc
        return Response(rater_json(user), status=status.HTTP_201_CREATED)


class RaterImportApi(APIView):
    """Admin: create raters in bulk from a CSV `file` (header username[,email][,password]); all or none."""

    permission_classes = [IsAdmin]
    parser_classes = [MultiPartParser, FormParser]

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField(help_text="CSV with a header username[,email][,password]")

    @extend_schema(request=InputSerializer)
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        created = raters_import_csv(content=upload.read(), source_name=upload.name)
        return Response({"created": [rater_json(u) for u in created]}, status=status.HTTP_201_CREATED)


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


