from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0017_judge_prompt_v2_default_and_concurrency_cap"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="operation",
            field=models.CharField(blank=True, default="", max_length=60),
        ),
    ]
