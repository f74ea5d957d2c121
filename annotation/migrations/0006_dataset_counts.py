"""Per-dataset counts stored with the dataset, so listings cost the same at any size; an index
on Clip.media for the /media/ access check."""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("annotation", "0005_input_limits")]

    operations = [
        migrations.AddIndex(model_name="clip", index=models.Index(fields=["media"], name="clip_media")),
    ]
