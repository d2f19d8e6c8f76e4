"""Share links keep only a sha256 digest of their token (and its first characters): existing
links are hashed in place, so every link already handed out keeps working."""

import hashlib

from django.db import migrations, models


def hash_tokens(apps, schema_editor):
    ShareLink = apps.get_model("history", "ShareLink")
    for link in ShareLink.objects.all().only("id", "token").iterator():
        ShareLink.objects.filter(id=link.id).update(
            digest=hashlib.sha256(link.token.encode("utf-8", "surrogatepass")).hexdigest(), hint=link.token[:6])


class Migration(migrations.Migration):

    dependencies = [
        ('history', '0003_sharelink_suite_run'),
    ]

    operations = [
        migrations.AddField(
            model_name='sharelink',
            name='digest',
            field=models.CharField(editable=False, help_text="sha256 of the link's token.", max_length=64, null=True),
        ),
        migrations.AddField(
            model_name='sharelink',
            name='hint',
            field=models.CharField(default='', editable=False, help_text="The token's first characters, to tell links apart.", max_length=6),
        ),
        migrations.RunPython(hash_tokens, migrations.RunPython.noop),
        migrations.RemoveField(
            model_name='sharelink',
            name='token',
        ),
        migrations.AlterField(
            model_name='sharelink',
            name='digest',
            field=models.CharField(editable=False, help_text="sha256 of the link's token.", max_length=64, unique=True),
        ),
    ]
