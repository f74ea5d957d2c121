"""Per-dataset counts stored with the dataset, so listings cost the same at any size (filled in
here for datasets that exist already); an index on Clip.media for the /media/ access check."""
from django.db import migrations, models
from django.db.models import Count


def backfill_dataset_counts(apps, schema_editor) -> None:
    """One GROUP BY per table (not a clips x captions join), then one UPDATE per dataset."""
    Dataset = apps.get_model("annotation", "Dataset")
    Clip = apps.get_model("annotation", "Clip")
    Caption = apps.get_model("annotation", "Caption")

    def per_dataset(rows) -> dict:
        return dict(rows.values_list("dataset_id").annotate(n=Count("pk")).order_by())

    clips = per_dataset(Clip.objects.all())
    captions = per_dataset(Caption.objects.all())
    originals = per_dataset(Caption.objects.filter(original_clip__isnull=False))
    for pk in Dataset.objects.values_list("pk", flat=True):
        Dataset.objects.filter(pk=pk).update(clip_count=clips.get(pk, 0), caption_count=captions.get(pk, 0),
                                             original_positive_count=originals.get(pk, 0))


class Migration(migrations.Migration):
    dependencies = [("annotation", "0003_rater_opaque_ids")]

    operations = [
        migrations.AddIndex(model_name="clip", index=models.Index(fields=["media"], name="clip_media")),
        migrations.AddField(model_name="dataset", name="clip_count",
                            field=models.PositiveIntegerField(default=0, editable=False)),
        migrations.AddField(model_name="dataset", name="caption_count",
                            field=models.PositiveIntegerField(default=0, editable=False)),
        migrations.AddField(model_name="dataset", name="original_positive_count",
                            field=models.PositiveIntegerField(
                                default=0, editable=False,
                                help_text="Captions with the clip they were written for (the benchmark's positives).")),
        migrations.RunPython(backfill_dataset_counts, migrations.RunPython.noop),
    ]
