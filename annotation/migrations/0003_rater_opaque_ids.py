"""Every vote through a lease; opaque ids for raters; per-dataset counts."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("annotation", "0002_job_recovery")]

    operations = []
