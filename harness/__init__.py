"""The running-application harness shared by the live tests (tests/live/) and the benchmarks
(bench/): the whole application started as `make run` starts it (app.py), and a redis-server of
a caller's own that it may kill and restart (private_redis.py), and the measurements run on it
(load.py, blind.py, soak.py: bench/ gives them command lines, tests/live runs them small). Neither tests/ nor bench/ is
imported from here; both import this. Not part of the installed application."""
