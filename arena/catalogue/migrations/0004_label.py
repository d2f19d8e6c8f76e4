from django.db import migrations, models

from arena.catalogue import labels


def fill_labels(apps, schema_editor):
    """Every entry gets its derived label (the rule in arena/catalogue/labels.py, unique by slug),
    in creation order so the first entry of a pair keeps the plain label."""
    entries = apps.get_model("catalogue", "ModelEntry").objects.order_by("created_at", "pk")
    taken: set[str] = set()
    for entry in entries:
        draft_name = entry.draft.name if entry.draft_id else ""
        derived = labels.derive(entry.name, entry.engine, entry.kind, entry.precision, entry.gguf_file, draft_name)
        entry.label = labels.unique(derived, entry.slug, taken)
        taken.add(entry.label.casefold())
        entry.save(update_fields=["label"])


class Migration(migrations.Migration):

    dependencies = [
        ("catalogue", "0003_aliases"),
    ]

    operations = [
        migrations.AddField(
            model_name="modelentry",
            name="label",
            field=models.CharField(
                blank=True, max_length=60,
                help_text="A short name that tells this entry apart from the others in charts and tables, e.g. "
                "\"SmolLM2 135M · llama.cpp Q4_1 · spec\". Left empty, it is derived from the name and how the "
                "entry is served. No two entries share one.",
            ),
        ),
        migrations.RunPython(fill_labels, migrations.RunPython.noop),
    ]
