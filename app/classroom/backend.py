"""Which class store this server uses, read from its environment: Redis when
ENCODER_EXPLORER_REDIS_URL is set, otherwise an SQLite file; and how long a class lasts
(ENCODER_EXPLORER_CLASS_HOURS). The back-ends import the base (app.classroom.store), never this."""

from __future__ import annotations

import os
from collections.abc import Mapping

from app.classroom.store import ClassStore, Limits

REDIS_URL_ENV = "ENCODER_EXPLORER_REDIS_URL"
SQLITE_PATH_ENV = "ENCODER_EXPLORER_CLASS_DB"
HOURS_ENV = "ENCODER_EXPLORER_CLASS_HOURS"


def limits_from_env(env: Mapping[str, str] = os.environ) -> Limits:
    text = env.get(HOURS_ENV, "").strip()
    if not text:
        return Limits()
    try:
        hours = float(text)
    except ValueError:
        raise ValueError(f"{HOURS_ENV}={text!r} is not a number of hours") from None
    if not 0 < hours <= 24 * 7:
        raise ValueError(f"{HOURS_ENV}={text!r} must be more than 0 and at most 168 hours")
    return Limits(hours=hours)


def open_store(env: Mapping[str, str] = os.environ) -> ClassStore:
    """Redis when ENCODER_EXPLORER_REDIS_URL is set, otherwise an SQLite file
    (ENCODER_EXPLORER_CLASS_DB, by default classes.sqlite3 in the temporary folder)."""
    limits = limits_from_env(env)
    url = env.get(REDIS_URL_ENV, "").strip()
    if url:  # the back-ends are imported when chosen: no Redis client where none is used
        from app.classroom.redis_store import RedisClassStore

        return RedisClassStore(url, limits)
    from app.classroom.sqlite_store import SqliteClassStore, default_path

    return SqliteClassStore(env.get(SQLITE_PATH_ENV) or default_path(), limits)
