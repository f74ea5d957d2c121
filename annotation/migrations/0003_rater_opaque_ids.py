"""Every vote through a lease: leases get an opaque token, the only handle a rater sees."""
from django.db import migrations, models

import annotation.models.labels


def fill_tokens(apps, schema_editor):
    for model_name in ("Lease", "RankingLease"):
        model = apps.get_model("annotation", model_name)
        batch = []
        for lease in model.objects.filter(token__isnull=True).only("pk").iterator(chunk_size=2000):
            lease.token = annotation.models.labels.new_lease_token()
            batch.append(lease)
            if len(batch) >= 2000:
                model.objects.bulk_update(batch, ["token"])
                batch = []
        model.objects.bulk_update(batch, ["token"])


class Migration(migrations.Migration):
    dependencies = [("annotation", "0002_job_recovery")]

    operations = [
        # Added nullable, filled one by one, then made unique: a default alone would give every
        # existing row the same token.
        migrations.AddField(model_name="lease", name="token", field=models.CharField(max_length=32, null=True)),
        migrations.AddField(model_name="rankinglease", name="token", field=models.CharField(max_length=32, null=True)),
        migrations.RunPython(fill_tokens, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="lease", name="token",
            field=models.CharField(default=annotation.models.labels.new_lease_token, editable=False, max_length=32,
                                   unique=True, help_text="Opaque id shown to the rater instead of the lease or pair id.")),
        migrations.AlterField(
            model_name="rankinglease", name="token",
            field=models.CharField(default=annotation.models.labels.new_lease_token, editable=False, max_length=32,
                                   unique=True, help_text="Opaque id shown to the rater instead of the lease id.")),
    ]
