"""The origin rule of a stored key (inference/destinations.py): the same scheme, host and port however
they are written keeps it; anything else, or what is no http(s) URL, drops it."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inference.config import is_key_variable
from inference.destinations import has_userinfo, host_allowed, origin, parse_hosts, same_origin


@pytest.mark.parametrize(("before", "after"), [
    ("http://a.example/v1", "http://a.example/other/v1/"),  # a change of path only
    ("http://a.example/v1", "http://a.example:80/v1"),
    ("https://a.example/v1", "https://A.EXAMPLE:443/v1"),
    ("http://a.example/v1", "http://a.example./v1"),  # the fully qualified name
    ("http://[::1]:8000/v1", "http://[0:0::1]:8000/v1"),
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1?x=1"),
])
def test_the_same_origin_written_another_way_keeps_the_key(before, after):
    assert same_origin(before, after)


@pytest.mark.parametrize(("before", "after"), [
    ("http://a.example/v1", "https://a.example/v1"),  # another scheme
    ("http://a.example/v1", "http://a.example:8080/v1"),  # another port
    ("http://a.example/v1", "http://b.example/v1"),
    ("http://a.example/v1", "http://a.example.b.example/v1"),
    ("http://a.example/v1", "http://a.example@b.example/v1"),  # userinfo: the host is b.example
    ("http://a.example/v1", "http://a.example\\@b.example/v1"),
    ("http://a.example/v1", "http://b.example#@a.example/v1"),
    ("http://127.0.0.1:8000/v1", "http://localhost:8000/v1"),  # another name is another host
    ("http://[::1]:8000/v1", "http://127.0.0.1:8000/v1"),
    ("http://a.example/v1", "ftp://a.example/v1"),
    ("http://a.example/v1", ""),
    ("", "http://a.example/v1"),  # no saved base URL: nothing to keep the key for
    ("not a url", "not a url"),
])
def test_another_origin_or_no_url_drops_the_key(before, after):
    assert not same_origin(before, after)


def test_userinfo_is_found_where_the_client_would_send_it():
    assert has_userinfo("http://user:pw@a.example/v1") and has_userinfo("http://a.example\\@b.example/v1")
    assert not has_userinfo("http://a.example/v1") and not has_userinfo("http://b.example#@a.example/v1")


LABELS = st.text("abcdefghijklmnopqrstuvwxyz0123456789-", max_size=8).map(lambda rest: "h" + rest)
HOSTS = st.lists(LABELS, min_size=1, max_size=3).map(".".join)
PATHS = st.lists(st.text("abcdefghijklmnopqrstuvwxyz0123456789", max_size=6), max_size=3).map(
    lambda parts: "".join(f"/{part}" for part in parts))
# The machine is shared: generation may be slow, which says nothing of the rule.
RELAXED = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)


@RELAXED
@given(HOSTS, st.sampled_from(["http", "https"]), PATHS, PATHS, st.booleans(), st.booleans())
def test_an_origin_is_its_scheme_host_and_port_whatever_the_path_case_or_default_port(host, scheme, path, other,
                                                                                     upper, port):
    written = host.upper() if upper else host
    default = {"http": ":80", "https": ":443"}[scheme] if port else ""
    assert origin(f"{scheme}://{written}{default}{other}") == origin(f"{scheme}://{host}{path}") == (
        scheme, host, {"http": 80, "https": 443}[scheme])


@RELAXED
@given(HOSTS, HOSTS)
def test_two_hosts_share_an_origin_only_when_they_are_one(first, second):
    assert same_origin(f"http://{first}/v1", f"http://{second}/v1") == (first == second)


@RELAXED
@given(st.text(max_size=30))
def test_a_key_variable_is_the_prefix_and_a_name(suffix):
    name = "ARENA_ENDPOINT_KEY_" + suffix
    assert is_key_variable(name) == (0 < len(suffix) <= 100 and all(c.isascii() and (c.isalnum() or c == "_")
                                                                     for c in suffix))
    assert not is_key_variable(suffix) or suffix.startswith("ARENA_ENDPOINT_KEY_")


def test_the_endpoint_hosts_allow_list():
    hosts = parse_hosts(" API.example.com. , gpu-node-1:8000, [0:0::1]:8080, 10.0.0.7:80, bad/host, user@h ")
    assert hosts == (("api.example.com", None), ("gpu-node-1", 8000), ("::1", 8080), ("10.0.0.7", 80))
    assert host_allowed("https://api.example.com/v1", hosts) and host_allowed("http://api.example.com:9/v1", hosts)
    assert host_allowed("http://gpu-node-1:8000/v1", hosts) and not host_allowed("http://gpu-node-1:8001/v1", hosts)
    assert host_allowed("http://[::1]:8080/v1", hosts) and not host_allowed("http://[::1]:8081/v1", hosts)
    assert host_allowed("http://10.0.0.7/v1", hosts) and not host_allowed("https://10.0.0.7/v1", hosts)
    assert not host_allowed("http://api.example.com@evil.example/v1", hosts)
    assert not host_allowed("http://evil.example/v1", hosts) and not host_allowed("not a url", hosts)
    assert parse_hosts("") is None and parse_hosts("  ") is None
    assert host_allowed("http://anywhere.example/v1", None)  # no list: every host
    assert parse_hosts("bad/host") == () and not host_allowed("http://bad/v1", ())  # nothing valid: nothing
