"""The relay's health seen from outside it: the heartbeat and backlog reading
(`reading`), the one judgement of it (`assess`, shared by the watchdog and the console), the
watchdog's settings, incidents and webhooks, and `Watchdog` itself. It imports no publisher
and not the relay's core: a relay that cannot import or run does not take its watchdog with
it (tests/unit/health/test_watchdog_imports.py)."""
