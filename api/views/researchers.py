"""The admin's side of researchers: list, create (with their API token), remove."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import IntegrityError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import roles
from annotation.services.accounts.users import api_token_for, researcher_create, researcher_remove, researchers
from api.permissions import IsAdmin


class ResearcherSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    username = serializers.CharField()
    email = serializers.CharField()
    is_active = serializers.BooleanField()
    date_joined = serializers.DateTimeField()
    last_login = serializers.DateTimeField(allow_null=True)


class CreatedResearcherSerializer(ResearcherSerializer):
    token = serializers.SerializerMethodField(help_text="The researcher's API token, to hand over")

    def get_token(self, user) -> str:
        return api_token_for(user=user)


class ResearcherListCreateApi(APIView):
    """Admin: list researchers (GET), create one (POST; the answer carries its API token)."""

    permission_classes = [IsAdmin]
    pagination_class = None

    class InputSerializer(serializers.Serializer):
        # The account model's own rules, so a bad name is a 400 naming the field, not a failed save.
        username = serializers.CharField(max_length=150,
                                         validators=get_user_model()._meta.get_field("username").validators)
        email = serializers.EmailField(required=False, allow_blank=True, default="", max_length=254)
        password = serializers.CharField(required=False, allow_blank=True, min_length=8, max_length=128,
                                         help_text="For the web pages; without one the account uses its token only")

    @extend_schema(responses=ResearcherSerializer(many=True))
    def get(self, request):
        return Response(ResearcherSerializer(researchers(), many=True).data)

    @extend_schema(request=InputSerializer, responses={201: CreatedResearcherSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        try:
            user = researcher_create(username=v["username"], email=v["email"], password=v.get("password") or None)
        except (ValueError, IntegrityError) as exc:
            raise ValidationError({"username": f"a user named '{v['username']}' already exists"}) from exc
        return Response(CreatedResearcherSerializer(user).data, status=status.HTTP_201_CREATED)


class ResearcherDetailApi(APIView):
    """Admin: remove a researcher (DELETE). An account that is only a researcher is deleted; one
    that also rates or administers keeps that role and loses this one."""

    permission_classes = [IsAdmin]

    @extend_schema(request=None, responses=inline_serializer("ResearcherRemoved", {
        "id": serializers.IntegerField(), "username": serializers.CharField(),
        "outcome": serializers.ChoiceField(choices=["deleted", "role removed"])}))
    def delete(self, request, user_id: int):
        user = get_object_or_404(get_user_model(), pk=user_id, groups__name=roles.RESEARCHER)
        username = user.username
        outcome = researcher_remove(user=user)
        return Response({"id": user_id, "username": username, "outcome": outcome})
