from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0014_merge_judgerun'),
    ]

    operations = [
        migrations.AddField(
            model_name='pool',
            name='judging_active_scale',
            field=models.JSONField(blank=True, help_text="'active': [c0, c1], pi = min(1, c0 + c1 a) (drawn with the design).", null=True),
        ),
    ]
