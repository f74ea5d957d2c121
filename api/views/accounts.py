from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import roles
from api.permissions import IsAuthenticatedWithRole


class MeApi(APIView):
    """Any signed-in user with a role: who am I and what may I do."""

    permission_classes = [IsAuthenticatedWithRole]

    @extend_schema(responses=inline_serializer("Me", {"id": serializers.IntegerField(), "username": serializers.CharField(),
                                                      "role": serializers.CharField()}))
    def get(self, request):
        return Response({"id": request.user.pk, "username": request.user.username, "role": roles.role_of(request.user)})
