from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from arena.accounts.models import ApiToken


class Command(BaseCommand):
    help = "Print a new API token for USERNAME (created if needed), for `Authorization: Bearer <token>`."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--staff", action="store_true", help="Make the user staff (worker status API).")

    def handle(self, username, staff=False, **options):
        user, created = get_user_model().objects.get_or_create(username=username)
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        if staff and not user.is_staff:
            user.is_staff = True
            user.save(update_fields=["is_staff"])
        self.stdout.write(ApiToken.issue(user))
