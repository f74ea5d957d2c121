from django.contrib import admin

from annotation.models import Caption, Clip, Dataset, Job, Run


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "source_format", "created_at"]
    search_fields = ["name"]


@admin.register(Clip)
class ClipAdmin(admin.ModelAdmin):
    list_display = ["external_id", "dataset", "video_id", "start", "end", "media"]
    list_filter = ["dataset"]
    search_fields = ["external_id", "video_id"]


@admin.register(Caption)
class CaptionAdmin(admin.ModelAdmin):
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
