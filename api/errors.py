"""Errors as clients see them: a message, and for refused files every problem with file, line, field."""
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from annotation.formats.errors import ImportRejected


def exception_handler(exc, context):
    if isinstance(exc, ImportRejected):
        return Response({"detail": "The file was refused; nothing was written.", "errors": exc.as_list(),
                         "truncated": exc.truncated}, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
