"""Releases: versioned, immutable archives of a corrected benchmark (annotation/services/releases).
Read by admins and researchers (and anyone but raters when REJUDGE_RELEASES_PUBLIC is on); made by
admins, as a job."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.generics import ListAPIView, RetrieveAPIView
from rest_framework.views import APIView

from annotation import roles
from annotation.models import Release
from annotation.selectors.releases import release_list
from annotation.services.exports.labels import EXPORTS
from annotation.services.operations.start import operation_job
from annotation.services.releases.operations import CREATE_RELEASE
from annotation.services.releases.create import ReleaseError
from api.downloads import stored_file_download
from api.operations import declared_serializer, given, refused
from api.permissions import CanReadReleases
from api.views.jobs import JobOutputSerializer, job_accepted_response
from api.views.reports import FILE_RENDERERS


class ReleaseOutputSerializer(serializers.ModelSerializer):
    slug = serializers.CharField(read_only=True)
    dataset = serializers.CharField(source="dataset.name", read_only=True)
    created_by = serializers.SerializerMethodField()
    archive_url = serializers.SerializerMethodField()
    page_url = serializers.SerializerMethodField()

    class Meta:
        model = Release
        fields = ["id", "name", "version", "slug", "title", "dataset", "dataset_id", "licence", "authors", "sources",
                  "aggregation", "counts", "files", "bytes", "sha256", "created_by", "created_at", "archive_url",
                  "page_url"]

    def get_created_by(self, release) -> str | None:
        return release.created_by.get_username() if release.created_by else None

    def _absolute(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path

    def get_archive_url(self, release) -> str:
        return self._absolute(reverse("api:release-archive", args=[release.pk]))

    def get_page_url(self, release) -> str:
        return self._absolute(reverse("frontend:release-detail", args=[release.pk]))


class ReleaseListApi(ListAPIView):
    """GET: the releases, by name then newest version first (`?name=` one name's versions).
    POST (admins): make the next version of a release from pools and judgment sets, as a job (202)."""

    permission_classes = [CanReadReleases]
    serializer_class = ReleaseOutputSerializer

    # The release's declared parameters (services/releases/operations.py), by their API names.
    RENAME = {"pool_ids": "pools", "judgment_set_ids": "judgment_sets"}
    InputSerializer = declared_serializer("ReleaseInputSerializer", CREATE_RELEASE.params, rename=RENAME)

    def get_queryset(self):
        return roles.releases_readable_by(self.request.user,
                                          release_list(name=self.request.query_params.get("name") or None))

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            job = operation_job(CREATE_RELEASE, params=given(data.validated_data), created_by=request.user)
        except ReleaseError as exc:
            raise refused(exc, rename=self.RENAME) from exc
        return job_accepted_response(job, True)


class ReleaseDetailApi(RetrieveAPIView):
    """One release: its sources, counts, files (path, bytes, sha256) and where to download it."""

    permission_classes = [CanReadReleases]
    serializer_class = ReleaseOutputSerializer
    lookup_url_kwarg = "release_id"

    def get_queryset(self):
        return roles.releases_readable_by(self.request.user, release_list())


class ReleaseArchiveApi(APIView):
    """The release's zip, streamed with Content-Length and ETag (its SHA-256); from a bucket, a
    redirect to a signed URL unless REJUDGE_STORAGE_DOWNLOADS=stream. `Range: bytes=N-` (or N-M,
    -S) answers 206 with Content-Range (416 past the end), so an interrupted download resumes;
    If-None-Match is compared weakly (a list, `*`) and answers 304."""

    permission_classes = [CanReadReleases]
    renderer_classes = FILE_RENDERERS

    @extend_schema(responses={(200, "application/zip"): bytes, (206, "application/zip"): bytes, 304: None,
                              416: None})
    def get(self, request, release_id: int):
        release = get_object_or_404(roles.releases_readable_by(request.user, Release.objects.all()), pk=release_id)
        # Conditional and range requests (If-None-Match, Range, If-Range): api/downloads.py.
        return stored_file_download(area=EXPORTS, name=release.archive, filename=f"{release.folder}.zip",
                                    content_type="application/zip",
                                    missing=f"the archive of release {release.slug} is missing",
                                    headers={"X-Content-SHA256": release.sha256}, request=request,
                                    etag=f'"{release.sha256}"', last_modified=release.created_at)
