"""A business's notification texts per language (docs/notifications.md, "Languages"): the
rows stored so far are its English texts."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0007_languages"),
        ("notifications", "0003_suppressions"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="notificationtemplate",
            name="notification_template_once",
        ),
        migrations.AddField(
            model_name="notificationtemplate",
            name="language",
            field=models.CharField(
                choices=[("en", "English"), ("km", "ភាសាខ្មែរ")],
                db_default="en",
                default="en",
                max_length=5,
            ),
        ),
        migrations.AddConstraint(
            model_name="notificationtemplate",
            constraint=models.UniqueConstraint(
                fields=("business", "environment", "channel", "kind", "language"),
                name="notification_template_once",
            ),
        ),
    ]
