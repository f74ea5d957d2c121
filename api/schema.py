"""OpenAPI generation adapted to the one-endpoint-per-class style.

Each view nests its own small `InputSerializer`; by default they would all become one component
called "Input". Here a nested serializer is named after its view (DatasetImportApi.InputSerializer
-> DatasetImportInput). Views that take or return free-form JSON are documented as objects
instead of being left out of the schema. Uploaded files are documented as binary, so clients (and
the schema fuzz test) send files rather than strings.
"""
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from rest_framework import serializers


class RejudgeAutoSchema(AutoSchema):
    def _get_serializer_name(self, serializer, direction, bypass_extensions=False) -> str:
        name = super()._get_serializer_name(serializer, direction, bypass_extensions)
        cls = serializer.child.__class__ if isinstance(serializer, serializers.ListSerializer) else serializer.__class__
        outer, _, inner = cls.__qualname__.rpartition(".")
        if outer and "<locals>" not in outer and inner.endswith("Serializer"):
            return outer.removesuffix("Api") + inner.removesuffix("Serializer")
        return name

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        # Input serializers are only ever read from requests; a file in a request is its bytes
        # (drf-spectacular says "uri" unless every component is split into request/response).
        if isinstance(field, serializers.FileField) and direction == "request":
            return {"type": "string", "format": "binary"} | ({"description": str(field.help_text)} if field.help_text else {})
        return super()._map_serializer_field(field, direction, bypass_extensions)

    def _get_serializer(self):
        view = self.view
        if not any(hasattr(view, attr) for attr in ("get_serializer", "get_serializer_class", "serializer_class")):
            return None
        return super()._get_serializer()

    def get_request_serializer(self):
        serializer = super().get_request_serializer()
        if serializer is None and self.method in ("POST", "PUT", "PATCH"):
            input_cls = getattr(self.view, "InputSerializer", None)
            return input_cls() if input_cls else OpenApiTypes.OBJECT
        return serializer

    def get_response_serializers(self):
        serializer = super().get_response_serializers()
        return OpenApiTypes.OBJECT if serializer is None else serializer
