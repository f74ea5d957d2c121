"""Errors as clients see them: a message, and for refused files every problem with file, line, field."""
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler, set_rollback

from annotation.formats.errors import ImportRejected


def exception_handler(exc, context):
    if isinstance(exc, ImportRejected):
        set_rollback()
        return Response({"detail": "The file was refused; nothing was written.", "errors": exc.as_list(),
                         "truncated": exc.truncated}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, DjangoValidationError):
        # A model's full_clean() refusing a value is the client's error: a 400 naming the field,
        # not the 500 DRF's handler (which knows only its own ValidationError) would leave it as.
        body = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        set_rollback()
        return Response(body, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, OverflowError):
        # A number the client sent that the database (SQLite: 64-bit integers) or a date cannot
        # hold, which no check before the query caught: the client's error, not a 500. The bounded
        # path converter, query_int and the JSON parser name the field for the known ways in.
        set_rollback()
        return Response({"detail": "A number in the request is out of range."}, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
