# Base models stay out of chat draws unless staff let them in (arena/battles/draw.py).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('catalogue', '0006_worker_cpus_gpus'),
    ]

    operations = [
        migrations.AlterField(
            model_name='modelentry',
            name='base',
            field=models.BooleanField(default=False, help_text='A pretrained (not instruction-tuned) model: it gets the prompt as plain text to continue, never a chat template, so it continues a question (often by repeating it) rather than answering it. Base models stay out of anonymous battles unless "in chat draws" is set.', verbose_name='base model'),
        ),
        migrations.AddField(
            model_name='modelentry',
            name='in_chat_draws',
            field=models.BooleanField(default=False, help_text='Base models only: let this base model be drawn into anonymous battles, whose prompts are chat. Off: it plays only where someone picks it (a comparison, a tournament, a suite run).', verbose_name='in chat draws'),
        ),
    ]
