import os
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "On first run, create the local admin account and print its password once."

    def handle(self, *args, **options):
        users = get_user_model().objects
        if users.filter(is_superuser=True).exists():
            return
        password = secrets.token_urlsafe(12)
        users.create_superuser("admin", email="", password=password)
        path = settings.DATA_DIR / "admin-password.txt"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(password + "\n")
        self.stdout.write(
            f"Created the admin account.\n  username: admin\n  password: {password}\n"
            f"  (shown once; also kept in {path}, readable only by you)"
        )
