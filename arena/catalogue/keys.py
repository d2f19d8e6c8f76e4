"""Where an endpoint's key may go, one rule for the admin form and the staff API (forms.StoredKeyForm,
ModelEntry.clean): a stored key only to the origin (scheme, host, port) it was given for
(inference.destinations.same_origin), a key variable only if it is named ARENA_ENDPOINT_KEY_<NAME>
(inference.config.KEY_VARIABLE_PREFIX), an endpoint only on a host the operator allows
(ARENA_ENDPOINT_HOSTS, when set). The sentences and codes staff read about them.
"""

from __future__ import annotations

from inference import config, destinations
from inference.config import KEY_VARIABLE_PREFIX

KEY_DROPPED_CODE = "api_key_dropped"
KEY_DROPPED = ("The stored key was removed: it was given for the old base URL's host, and a stored key goes only to "
               "the host it was given for. Give the key again with the new base URL if that host should get it.")
KEY_VARIABLE_CODE = "key_variable_not_allowed"
KEY_VARIABLE_OUTSIDE = ("{name} is not an endpoint key variable: an entry may name only a variable whose name begins "
                        f"with {KEY_VARIABLE_PREFIX} (e.g. {KEY_VARIABLE_PREFIX}TEAM), set where the workers run. "
                        "Rename the variable and name the new one here.")
USERINFO_IN_URL = ("A base URL with a user name or password in it (user@host) would keep a secret in plain text: "
                   "give the host only, and the key as the entry's key.")
HOST_CODE = "endpoint_host_not_allowed"
HOST_NOT_ALLOWED = ("This app's operator allows endpoints only on these hosts (ARENA_ENDPOINT_HOSTS): {hosts}. Ask "
                    "them to add this one.")


def host_problem(base_url: str) -> str:
    """Why `base_url` is on no host ARENA_ENDPOINT_HOSTS allows, or "" (also when it is not set)."""
    allowed = destinations.parse_hosts(config.current().endpoint_hosts)
    if destinations.host_allowed(base_url, allowed):
        return ""
    assert allowed is not None, "host_allowed allows every host without a list"
    shown = ", ".join(_written(host, port) for host, port in allowed)
    return HOST_NOT_ALLOWED.format(hosts=shown or "none (the setting names no valid host)")


def _written(host: str, port: int | None) -> str:
    host = f"[{host}]" if ":" in host else host
    return host if port is None else f"{host}:{port}"
