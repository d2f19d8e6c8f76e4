from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from arena.accounts.models import ApiToken

NO_SUCH_USER = ("There is no user {username!r}. Invite a person on /accounts/invitations/ (they choose a password); "
                "for a script's own account, without a password, add --create-service-account.")


class Command(BaseCommand):
    help = ("Print a new API token for USERNAME, for `Authorization: Bearer <token>`. Refuses an unknown "
            "USERNAME unless --create-service-account (a user without a password, who cannot log in).")

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--staff", action="store_true", help="Make the user staff (worker status API).")
        parser.add_argument("--create-service-account", action="store_true",
                            help="Create USERNAME if needed, as an account without a password (tokens only).")

    def handle(self, username, staff=False, create_service_account=False, **options):
        users = get_user_model().objects
        user = users.filter(username=username).first()
        if user is None:
            if not create_service_account:
                raise CommandError(NO_SUCH_USER.format(username=username))
            user = users.create_user(username=username)  # no password given: an unusable one
            self.stderr.write(f"Created the service account {username!r} (no password: it cannot log in).")
        if staff and not user.is_staff:
            user.is_staff = True
            user.save(update_fields=["is_staff"])
        self.stdout.write(ApiToken.issue(user))
