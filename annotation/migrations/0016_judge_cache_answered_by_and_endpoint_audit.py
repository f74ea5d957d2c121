"""The machine-judge verdict cache is keyed by who answered (issue 36, finding 2), and changes of a
judge's base URL or key variable are audited.

Existing JudgeCall rows keep their verdicts, requests and tokens (they are the record of what each
run spent, and MachineJudgment.source_record points at them) but get `answered_by` '' and so are
reused by no later run: which server answered them cannot be told after the fact (a judge's URL may
have changed since, which is the poisoning the new key prevents). The first run after the upgrade
asks its own server again. docs/operations.md says so."""
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0015_pool_judging_active_scale'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(model_name='judgecall', name='judgecall_unique_ok'),
        migrations.AddField(
            model_name='judgecall',
            name='answered_by',
            field=models.CharField(blank=True, default='', max_length=64),
        ),
        migrations.AddConstraint(
            model_name='judgecall',
            constraint=models.UniqueConstraint(condition=models.Q(('status', 'ok')),
                                               fields=('answered_by', 'model', 'prompt_version', 'sampling', 'caption',
                                                       'clip'),
                                               name='judgecall_unique_ok_answered_by'),
        ),
        migrations.CreateModel(
            name='JudgeEndpointChange',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('endpoint_name', models.CharField(max_length=100)),
                ('field', models.CharField(max_length=20)),
                ('old_value', models.CharField(blank=True, max_length=500)),
                ('new_value', models.CharField(blank=True, max_length=500)),
                ('changed_at', models.DateTimeField()),
                ('changed_by', models.ForeignKey(blank=True, null=True, on_delete=models.deletion.SET_NULL,
                                                 related_name='+', to=settings.AUTH_USER_MODEL)),
                ('endpoint', models.ForeignKey(blank=True, null=True, on_delete=models.deletion.SET_NULL,
                                               related_name='changes', to='annotation.judgeendpoint')),
            ],
            options={
                'ordering': ['changed_at', 'id'],
                'indexes': [models.Index(fields=['endpoint', 'changed_at'], name='judgeendpointchange_time')],
            },
        ),
    ]
