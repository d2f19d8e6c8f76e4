"""The suite run models, moved here from the suites app: their tables keep their names
(Meta.db_table), so this only takes them into this app's state; no table changes."""

import django.db.models.deletion
import django.utils.timezone
import uuid
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('catalogue', '0003_aliases'),
        ('generations', '0005_alter_generation_origin'),
        ('suites', '0002_suite_runs'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='SuiteRun',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('format', models.CharField(choices=[('round_robin', 'Round robin: every pair on every prompt'), ('knockout', 'Knockout: a bracket per prompt')], default='round_robin', max_length=12)),
                        ('judge_template', models.TextField(blank=True, help_text="The judge's prompt (arena.suite_runs.judge).")),
                        ('params', models.JSONField(blank=True, default=dict, help_text="Shared sampling parameters, over each contestant's defaults.")),
                        ('state', models.CharField(choices=[('running', 'Running'), ('done', 'Done'), ('cancelled', 'Cancelled')], db_index=True, default='running', max_length=10)),
                        ('seed', models.PositiveIntegerField(default=0, help_text="A knockout's coin for tied pairs.")),
                        ('done', models.PositiveIntegerField(default=0)),
                        ('total', models.PositiveIntegerField(default=0)),
                        ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                        ('stepped_at', models.DateTimeField(default=django.utils.timezone.now, help_text='When the runner last took a step.')),
                        ('chain', models.CharField(blank=True, help_text="The token of the runner's current chain of steps.", max_length=16)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('judge', models.ForeignKey(blank=True, help_text='Empty: people judge the pairs.', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='suite_runs_judged', to='catalogue.modelentry')),
                        ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='suite_runs', to=settings.AUTH_USER_MODEL)),
                        ('suite', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='runs', to='suites.suite')),
                    ],
                    options={
                        'db_table': 'suites_suiterun',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.CreateModel(
                    name='SuiteJudgement',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('order', models.CharField(max_length=12)),
                        ('attempts', models.PositiveSmallIntegerField(default=1)),
                        ('generation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='generations.generation')),
                        ('left', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='catalogue.modelentry')),
                        ('prompt', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='suites.suiteprompt')),
                        ('right', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='catalogue.modelentry')),
                        ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='judgements', to='suite_runs.suiterun')),
                    ],
                    options={
                        'db_table': 'suites_suitejudgement',
                        'constraints': [models.UniqueConstraint(fields=('run', 'prompt', 'left', 'right', 'order'), name='suite_judgement_once')],
                    },
                ),
                migrations.CreateModel(
                    name='SuiteContestant',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('position', models.PositiveSmallIntegerField()),
                        ('model', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='suite_entries', to='catalogue.modelentry')),
                        ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='entrants', to='suite_runs.suiterun')),
                    ],
                    options={
                        'db_table': 'suites_suitecontestant',
                        'ordering': ['run', 'position'],
                        'constraints': [models.UniqueConstraint(fields=('run', 'model'), name='suite_contestant_once'), models.UniqueConstraint(fields=('run', 'position'), name='suite_contestant_position')],
                    },
                ),
                migrations.CreateModel(
                    name='SuiteAnswer',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('attempts', models.PositiveSmallIntegerField(default=1)),
                        ('contestant', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='catalogue.modelentry')),
                        ('generation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='generations.generation')),
                        ('prompt', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='suites.suiteprompt')),
                        ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='answers', to='suite_runs.suiterun')),
                    ],
                    options={
                        'db_table': 'suites_suiteanswer',
                        'constraints': [models.UniqueConstraint(fields=('run', 'prompt', 'contestant'), name='suite_answer_once')],
                    },
                ),
            ],
        ),
    ]
