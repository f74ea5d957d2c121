"""Production shape (security settings, throttling, media access)."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("annotation", "0003_rater_opaque_ids")]

    operations = []
