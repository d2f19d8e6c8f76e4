"""`manage.py arena_unlock --username NAME` / `--address IP`: clear the login throttle's failures
of a username (from every client) or of an address (at every username), so they may try at once
(arena/accounts/throttle.py)."""

from django.core.management.base import BaseCommand, CommandError

from arena.accounts import throttle


class Command(BaseCommand):
    help = "Clear the failed-login counts of a username and/or a client address (the login throttle)."

    def add_arguments(self, parser):
        parser.add_argument("--username", help="the username as typed on the login page")
        parser.add_argument("--address", help="the client address (as the app sees it: behind a proxy, the one "
                                              "the proxy appended to X-Forwarded-For)")

    def handle(self, *args, username=None, address=None, **options):
        if username is None and address is None:
            raise CommandError("Name a --username, an --address, or both.")
        cleared = throttle.current().unlock(username=username, address=address)
        named = " and ".join(f"{what} {value!r}" for what, value in (("username", username), ("address", address))
                             if value is not None)
        self.stdout.write(f"Cleared {cleared} failure count{'s' if cleared != 1 else ''} of {named}.")
