from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0009_machine_judges'),
    ]

    operations = [
        migrations.AddField(
            model_name='lease',
            name='device',
            field=models.CharField(blank=True, default='', db_default='', help_text="The rater's device (its page's random id): a device resumes only its own leases.", max_length=64),
        ),
    ]
