from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.urls import reverse

from annotation.models import Caption, Clip, Dataset, Job, JudgeEndpointChange, LabelChange, Run
from annotation.services.datasets.operations import DATASET_DELETE
from annotation.services.datasets.counts import dataset_counts_refresh
from annotation.services.deletes import DeleteRefused, delete_blockers, delete_counts, delete_start


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    """Deleting a dataset here starts the same job as the API's DELETE (services/deletes.py): set-
    based statements instead of Django's collector, which read every dependent row of a
    1,000,000-clip dataset into this process (and listed them all on the confirmation page)."""

    list_display = ["name", "source_format", "clip_count", "caption_count", "original_positive_count", "created_at"]
    readonly_fields = ["clip_count", "caption_count", "original_positive_count"]
    search_fields = ["name"]

    def get_deleted_objects(self, objs, request):
        """The confirmation page: each dataset and what depends on it, counted by the database."""
        objs = list(objs)
        protected = [f"{obj}: {blockers} refer to it" for obj in objs
                     if (blockers := delete_blockers(Dataset.objects.filter(pk=obj.pk)))]
        counts = delete_counts(Dataset.objects.filter(pk__in=[obj.pk for obj in objs]))
        return [str(obj) for obj in objs], counts, set(), protected

    def delete_model(self, request, obj):
        self._start_deletes(request, [obj])

    def delete_queryset(self, request, queryset):
        self._start_deletes(request, list(queryset))

    def _start_deletes(self, request, datasets):
        for dataset in datasets:
            try:
                job, _ = delete_start(DATASET_DELETE, target=dataset, created_by=request.user)
            except DeleteRefused as exc:
                self.message_user(request, str(exc), messages.ERROR)
                continue
            self.message_user(request, f"Deleting '{dataset}' as job {job.pk}: it is gone once the job has run.",
                              messages.INFO)

    def response_delete(self, request, obj_display, obj_id):
        # Django's own says the row was deleted; the job says when it is (the message above).
        return HttpResponseRedirect(reverse("admin:annotation_dataset_changelist"))


class KeepsDatasetCounts(admin.ModelAdmin):
    """Clips and captions edited here recount their datasets' stored counts (services/datasets.py)."""

    def save_model(self, request, obj, form, change):
        before = type(obj).objects.filter(pk=obj.pk).values_list("dataset_id", flat=True).first() if change else None
        super().save_model(request, obj, form, change)
        dataset_counts_refresh(datasets={obj.dataset_id, before} - {None})

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        dataset_counts_refresh(datasets=[obj.dataset_id])

    def delete_queryset(self, request, queryset):
        datasets = set(queryset.values_list("dataset_id", flat=True))
        super().delete_queryset(request, queryset)
        dataset_counts_refresh(datasets=datasets)


@admin.register(Clip)
class ClipAdmin(KeepsDatasetCounts):
    list_display = ["external_id", "dataset", "video_id", "start", "end", "media"]
    list_filter = ["dataset"]
    search_fields = ["external_id", "video_id"]
    # Set by prepare_media (services/media/prepare.py) with the copy it made, never by hand.
    readonly_fields = ["original_media", "media_offset"]


@admin.register(Caption)
class CaptionAdmin(KeepsDatasetCounts):
    list_display = ["external_id", "dataset", "text", "original_clip"]
    list_filter = ["dataset"]
    search_fields = ["external_id", "text"]
    raw_id_fields = ["original_clip"]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["name", "dataset", "kind", "depth", "prediction_count", "uploader", "created_at"]
    list_filter = ["dataset", "kind"]
    readonly_fields = ["checksum"]


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "status", "created_by", "created_at", "finished_at"]
    list_filter = ["status", "kind"]


@admin.register(JudgeEndpointChange)
class JudgeEndpointChangeAdmin(admin.ModelAdmin):
    """The audit trail of machine judges' base URLs and key variables: read-only, it is evidence."""

    list_display = ["changed_at", "changed_by", "endpoint_name", "field", "old_value", "new_value"]
    list_filter = ["field"]
    readonly_fields = ["endpoint", "endpoint_name", "field", "old_value", "new_value", "changed_by", "changed_at"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(LabelChange)
class LabelChangeAdmin(admin.ModelAdmin):
    """The audit trail of answers raters took back: read-only, it is evidence."""

    list_display = ["changed_at", "changed_by", "label", "old_value", "new_value"]
    list_filter = ["new_value"]
    raw_id_fields = ["label"]
    readonly_fields = ["label", "changed_by", "old_value", "new_value", "old_comment", "new_comment", "changed_at"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
