"""Releases: versioned, immutable archives of a corrected benchmark (annotation/services/releases).
Read by admins and researchers (and anyone but raters when REJUDGE_RELEASES_PUBLIC is on); made by
admins, as a job."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.generics import ListAPIView, RetrieveAPIView
from rest_framework.views import APIView

from annotation import roles
from annotation.models import Pool, Release
from annotation.models.reports import JudgmentSet
from annotation.selectors.releases import release_list
from annotation.services.exports import EXPORTS
from annotation.services.jobs.releases import release_start
from annotation.services.releases.create import ReleaseError
from api.downloads import stored_file_download
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

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=80)
        pools = serializers.ListField(child=serializers.IntegerField(min_value=1), required=False, default=list,
                                      max_length=50)
        judgment_sets = serializers.ListField(child=serializers.IntegerField(min_value=1), required=False,
                                              default=list, max_length=50)
        title = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")
        licence = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
        authors = serializers.ListField(child=serializers.CharField(max_length=200), required=False, default=list,
                                        max_length=100)
        allow_unresolved = serializers.BooleanField(
            required=False, default=False,
            help_text="Make the release although a pool has unresolved pairs (they are scored as not relevant, and "
                      "the release says so); without it such a pool is refused with its counts.")

    def get_queryset(self):
        return roles.releases_readable_by(self.request.user,
                                          release_list(name=self.request.query_params.get("name") or None))

    @extend_schema(request=InputSerializer, responses={202: JobOutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        pools = {p.pk: p for p in Pool.objects.filter(pk__in=v["pools"]).select_related("dataset")}
        sets = {s.pk: s for s in JudgmentSet.objects.filter(pk__in=v["judgment_sets"]).select_related("dataset")}
        missing = [f"pool {i}" for i in v["pools"] if i not in pools] + [
            f"judgment set {i}" for i in v["judgment_sets"] if i not in sets]
        if missing:
            raise ValidationError({"detail": f"no {', '.join(missing)}"})
        try:
            job = release_start(pools=[pools[i] for i in v["pools"]], judgment_sets=[sets[i] for i in v["judgment_sets"]],
                                name=v["name"], title=v["title"], licence=v["licence"], authors=v["authors"],
                                allow_unresolved=v["allow_unresolved"], created_by=request.user)
        except ReleaseError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
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
