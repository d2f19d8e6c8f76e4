from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0001_initial'),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='apitoken',
            options={'ordering': ['-created_at', '-id']},
        ),
        migrations.AddField(
            model_name='apitoken',
            name='name',
            field=models.CharField(blank=True, default='', help_text='What its owner calls it (e.g. the script that uses it).', max_length=100),
        ),
        migrations.AddField(
            model_name='apitoken',
            name='expires_at',
            field=models.DateTimeField(blank=True, help_text='Refused from then on; empty: never expires.', null=True),
        ),
        migrations.AddField(
            model_name='apitoken',
            name='revoked_at',
            field=models.DateTimeField(blank=True, help_text='Refused from then on, for good.', null=True),
        ),
    ]
