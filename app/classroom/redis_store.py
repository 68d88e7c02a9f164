"""The class store on Redis (ENCODER_EXPLORER_REDIS_URL): every replica of the app sees the same
classes. Each change is one Lua script, so it is atomic on the server: a compare-and-set of the
class's record, a bounded map put for students and answers. Keys expire with their class (plus
an hour, so that a late student reads "expired" rather than "no such class").

A call gives up after TIMEOUT_S when Redis does not answer (ClassStoreUnavailable), without a
retry that would double the wait: a teacher's page says the store is away, and a student's Send
is refused, within a second or two, and the page's next poll finds Redis back. Only a connection
that broke (a Redis restarted since it was opened) is tried once more, on a new connection; the
client reconnects by itself when Redis is back.
"""

from __future__ import annotations

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from app.classroom.store import ClassRecord, ClassStore, ClassStoreUnavailable, Limits

PREFIX = "encoder-explorer:class"
LIVE = f"{PREFIX}es"  # sorted set: code -> expiry time, for the bound on live classes
GRACE_S = 3600
TIMEOUT_S = 0.25  # seconds: a Redis beside the app answers in a few milliseconds

INSERT = """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[2]) then return 0 end
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 6))
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
return 1
"""
SWAP = """
if redis.call('HGET', KEYS[1], 'version') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
return 1
"""
BOUNDED_PUT = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0
   and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
"""


def _flat(fields: dict[str, str]) -> list[str]:
    return [item for pair in fields.items() for item in pair]


class RedisClassStore(ClassStore):
    def __init__(self, url: str, limits: Limits | None = None, clock=None) -> None:
        super().__init__(limits, clock)
        self.db = redis.Redis.from_url(
            url,
            decode_responses=True,
            socket_timeout=TIMEOUT_S,
            socket_connect_timeout=TIMEOUT_S,
            # one retry, on a broken connection only (left from before a restart), not on a
            # timeout (a paused or busy Redis): that would double the wait
            retry=Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)),
        )
        self._insert = self.db.register_script(INSERT)
        self._swap = self.db.register_script(SWAP)
        self._put = self.db.register_script(BOUNDED_PUT)

    def _ttl_ms(self, expires: float) -> int:
        return int(max(1.0, expires - self.clock() + GRACE_S) * 1000)

    def _call(self, action, *args, **kwargs):
        try:
            return action(*args, **kwargs)
        except redis.RedisError as error:
            raise ClassStoreUnavailable(f"Redis: {error}") from error

    def _insert_class(self, code: str, record: ClassRecord, now: float) -> bool:
        args = [now, self.limits.classes, code, record.expires, self._ttl_ms(record.expires)]
        keys = [f"{PREFIX}:{code}", LIVE]
        return self._call(self._insert, keys=keys, args=[*args, *_flat(record.to_fields())]) == 1

    def _load_class(self, code: str) -> ClassRecord | None:
        fields = self._call(self.db.hgetall, f"{PREFIX}:{code}")
        return ClassRecord.from_fields(fields) if fields else None

    def _swap_class(self, code: str, old: ClassRecord, new: ClassRecord) -> bool:
        args = [str(old.version), *_flat(new.to_fields())]
        return self._call(self._swap, keys=[f"{PREFIX}:{code}"], args=args) == 1

    def _bounded_put(
        self, code: str, table: str, key: str, value: str, limit: int, expires: float
    ) -> bool:
        args = [key, value, limit, self._ttl_ms(expires)]
        return self._call(self._put, keys=[f"{PREFIX}:{code}:{table}"], args=args) == 1

    def _read_map(self, code: str, table: str) -> dict[str, str]:
        return self._call(self.db.hgetall, f"{PREFIX}:{code}:{table}")
