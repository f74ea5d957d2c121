from django.db import migrations, models
import django.db.models.deletion


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0011_merge_crowd_queue"),
    ]

    operations = [
        migrations.AlterField(
            model_name="pool",
            name="judging_strategy",
            field=models.CharField(choices=[("pool_order", "pool_order"), ("shallow_first", "shallow_first"),
                                            ("move_to_front", "move_to_front"), ("bandit", "bandit"),
                                            ("sampled", "sampled"), ("active", "active")],
                                   default="pool_order", max_length=16),
        ),
        migrations.AddField(
            model_name="pool",
            name="judging_machine_judge",
            field=models.ForeignKey(blank=True, help_text="'active': the machine judge whose uncertainty draws the sample.",
                                    null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+",
                                    to="annotation.machinejudge"),
        ),
    ]
