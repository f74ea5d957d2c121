"""Input limits (field lengths, clip paths)."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("annotation", "0004_production_hardening")]

    operations = []
