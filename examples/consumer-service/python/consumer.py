#!/usr/bin/env python3
"""The reference consumer service in Python, standard library only.

It implements the same contract as the Go reference (docs/consumer-service.md)
to show the contract is language-neutral: it reads the kit's NATS JetStream
durable pull consumer over a minimal NATS client of its own (NATS's text
protocol: CONNECT, SUB, PUB, MSG/HMSG, PING/PONG), or with ONCEPROOF_BROKER=redis
the kit's Redis stream and consumer group over a minimal RESP client (XAUTOCLAIM,
XREADGROUP, XACK), or with ONCEPROOF_BROKER=kafka the kit's one-partition topic
with kafka-python (python3-kafka; manual commits after the effects), keeps its state in its own
SQLite database (sqlite3), and writes to the kit's HTTP sinks (urllib).

Per delivery of event (message m, version v), in this order:
  1. one SQLite transaction commits the projection row and the
     processed-event row together;
  2. the index write carries v as an external version (409: the index holds
     v or newer already, which is fine);
  3. the notification is claimed (a row (m, v) with its claimer and when); a
     claim that is ours, or whose claimer's lease ran out, is settled by
     asking the notifier what it sent for (m, v) before sending; a fresh
     claim of another replica's means "in progress": nak;
  4. ack last; any failure before is a nak, and the broker redelivers.

The kit starts it with its configuration in ONCEPROOF_* variables and kills
it with SIGKILL at will; nothing but the database survives a kill.
"""

import json
import os
import signal
import socket
import sqlite3
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def log(*a):
    print(*a, flush=True)


def need(name):
    v = os.environ.get(name)
    if not v:
        sys.exit(f"{name} is not set (see docs/consumer-service.md)")
    return v


def go_duration(s):
    """Parses the Go durations the kit writes ("2s", "1.5s", "500ms", "1m0s")."""
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    total, num, i = 0.0, "", 0
    while i < len(s):
        if s[i].isdigit() or s[i] == ".":
            num += s[i]
            i += 1
            continue
        for u in ("ns", "us", "µs", "ms", "s", "m", "h"):
            if s.startswith(u, i):
                total += float(num) * units[u]
                num, i = "", i + len(u)
                break
        else:
            raise ValueError(f"not a duration: {s!r}")
    return total


class NATS:
    """Just enough NATS for a JetStream pull consumer."""

    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port or 4222), timeout=10)
        self.buf = b""
        self.inbox = "_INBOX.py%d%d" % (os.getpid(), int(time.time() * 1000))
        self.n = 0
        info = self._line()
        if not info.startswith(b"INFO "):
            raise RuntimeError(f"not a NATS server: {info!r}")
        opts = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True,
                "name": "consumer-service (python) " + os.environ.get("ONCEPROOF_WORKER", "")}
        self._send(b"CONNECT " + json.dumps(opts).encode() + b"\r\nPING\r\n")
        while True:
            op = self._line()
            if op == b"PONG":
                break
            if op.startswith(b"-ERR"):
                raise RuntimeError(op.decode())
        self._send(f"SUB {self.inbox}.* 1\r\n".encode())

    def _send(self, b):
        self.sock.sendall(b)

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _take(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def publish(self, subject, payload=b"", reply=None):
        r = f" {reply}" if reply else ""
        self._send(f"PUB {subject}{r} {len(payload)}\r\n".encode() + payload + b"\r\n")

    def next(self, stream, consumer, wait):
        """One pull request of one message; returns (payload, ack subject) or None."""
        self.n += 1
        reply = f"{self.inbox}.{self.n}"
        req = json.dumps({"batch": 1, "expires": int(wait * 1e9)}).encode()
        self.publish(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}", req, reply)
        self.sock.settimeout(wait + 5)
        while True:
            line = self._line()
            if line == b"PING":
                self._send(b"PONG\r\n")
                continue
            if line.startswith(b"-ERR"):
                raise RuntimeError(line.decode())
            f = line.split()
            if not f or f[0] not in (b"MSG", b"HMSG"):
                continue  # INFO, +OK, PONG
            if f[0] == b"MSG":
                size = int(f[-1])
                hdr = b""
                data = self._take(size)
            else:
                hsize, size = int(f[-2]), int(f[-1])
                raw = self._take(size)
                hdr, data = raw[:hsize], raw[hsize:]
            subject = f[1].decode()
            reply_to = f[3].decode() if len(f) == (5 if f[0] == b"MSG" else 6) else ""
            # A message comes on the stream's own subject, its ack subject as
            # the reply; a status (404 no messages, 408 request timeout, 409)
            # comes on the pull's reply subject and ends that pull.
            if reply_to.startswith("$JS.ACK."):
                return data, reply_to
            if subject == reply and hdr.startswith(b"NATS/1.0 4"):
                return None

    def ack(self, subject):
        self.publish(subject, b"+ACK")

    def nak(self, subject, delay):
        self.publish(subject, b"-NAK " + json.dumps({"delay": int(delay * 1e9)}).encode())

    def term(self, subject):
        self.publish(subject, b"+TERM")


class Redis:
    """Just enough RESP2 for a Redis Streams consumer group (ONCEPROOF_BROKER=redis).

    Redis redelivers nothing by itself: each read first claims an entry of
    the group idle longer than the ack wait (XAUTOCLAIM), whoever held it,
    then reads a new one (XREADGROUP >). The ack is XACK; Redis has no nak
    (a failed entry stays pending until it is claimed again after the ack
    wait) and no terminate (an unreadable entry is acked).
    """

    def __init__(self, url, key, group, name, idle):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port or 6379), timeout=10)
        self.buf = b""
        self.key, self.group, self.name, self.idle_ms = key, group, name, int(idle * 1000)
        if u.password is not None:
            user = urllib.parse.unquote(u.username or "default")
            self.call("AUTH", user, urllib.parse.unquote(u.password))
        db = (u.path or "/").strip("/")
        if db and db != "0":
            self.call("SELECT", db)
        self.call("CLIENT", "SETNAME", "consumer-service-python-" + (name or "x"))

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise RuntimeError(f"not a RESP2 reply: {line!r}")

    def call(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            b = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(b), b)
        self.sock.sendall(out)
        return self._reply()

    def next(self, wait):
        """One entry: (payload, headers, entry id) or None."""
        self.sock.settimeout(wait + 5)
        r = self.call("XAUTOCLAIM", self.key, self.group, self.name, self.idle_ms, "0-0", "COUNT", 1)
        entries = r[1] if r else []
        if not entries:
            r = self.call("XREADGROUP", "GROUP", self.group, self.name, "COUNT", 1, "BLOCK", int(wait * 1000),
                          "STREAMS", self.key, ">")
            entries = r[0][1] if r else []
        for entry in entries:
            eid, fields = entry[0], entry[1]
            if fields is None:
                continue  # deleted from the stream while pending
            f = {fields[i].decode(): fields[i + 1] for i in range(0, len(fields), 2)}
            headers = {k[2:]: v.decode() for k, v in f.items() if k.startswith("h:")}
            return f.get("payload", b""), headers, eid.decode()
        return None

    def ack(self, eid):
        if self.call("XACK", self.key, self.group, eid) != 1:
            raise RuntimeError(f"XACK {eid}: the entry was no longer pending")

    def nak(self, eid, delay):
        pass  # no nak: it is claimed again after the ack wait

    def term(self, eid):
        self.call("XACK", self.key, self.group, eid)


class HTTPStatus(Exception):
    pass


class Busy(Exception):
    """A claim held by another live replica; wait is its lease's remainder."""

    def __init__(self, msg, wait):
        super().__init__(msg)
        self.wait = wait


def call(method, url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class Kafka:
    """A Kafka consumer of one partition (ONCEPROOF_BROKER=kafka) with kafka-python
    (Debian's python3-kafka 2.0.2): partition 0 of ONCEPROOF_TOPIC assigned, no
    group membership (one replica), offsets committed under ONCEPROOF_GROUP only
    after the effects. After a restart it reads on from the group's committed
    offset: that is Kafka's redelivery. api_version is set, so the client does
    not probe the broker's version (kfake answers ApiVersions; the probe is slow)."""

    def __init__(self, brokers, topic, group):
        try:
            import kafka  # noqa: F401
        except ImportError:
            # A python3 that is not Debian's (pyenv, a venv) does not see the
            # package apt installed; kafka-python is pure Python, so its
            # directory serves any 3.x of the same kind.
            sys.path.append("/usr/lib/python3/dist-packages")
        from kafka import KafkaConsumer, TopicPartition
        from kafka.structs import OffsetAndMetadata
        self.OffsetAndMetadata = OffsetAndMetadata
        self.c = KafkaConsumer(bootstrap_servers=brokers.split(","), group_id=group, enable_auto_commit=False,
                               auto_offset_reset="earliest", api_version=(2, 5, 0), max_poll_records=1,
                               client_id="onceproof-reference-service")
        self.tp = TopicPartition(topic, 0)
        self.c.assign([self.tp])

    def next(self, timeout):
        got = self.c.poll(timeout_ms=int(timeout * 1000), max_records=1)
        for recs in got.values():
            for r in recs:
                return r.value, r.offset
        return None

    def ack(self, offset):
        self.c.commit({self.tp: self.OffsetAndMetadata(offset + 1, "")})

    def term(self, offset):
        self.ack(offset)

    def nak(self, offset, delay):
        time.sleep(delay)
        self.c.seek(self.tp, offset)


class Service:
    def __init__(self):
        self.worker = os.environ.get("ONCEPROOF_WORKER", "")
        self.owner = f"{self.worker}/{os.getpid()}"
        self.kafka = os.environ.get("ONCEPROOF_BROKER") == "kafka"
        self.stream = need("ONCEPROOF_TOPIC") if self.kafka else need("ONCEPROOF_STREAM")
        self.redis = os.environ.get("ONCEPROOF_BROKER") == "redis"
        self.consumer = need("ONCEPROOF_GROUP") if self.redis or self.kafka else need("ONCEPROOF_CONSUMER")
        self.index = need("ONCEPROOF_INDEX_URL")
        self.notify_url = need("ONCEPROOF_NOTIFY_URL")
        self.lease = go_duration(need("ONCEPROOF_ACK_WAIT"))
        path = os.path.join(need("ONCEPROOF_DATA_DIR"), "service.db")
        self.db = sqlite3.connect(path, timeout=10, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        for q in (
            "CREATE TABLE IF NOT EXISTS projection (message_id TEXT PRIMARY KEY, version INTEGER NOT NULL, body TEXT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS processed (event_id TEXT PRIMARY KEY, at TEXT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS notification (message_id TEXT NOT NULL, version INTEGER NOT NULL, state TEXT NOT NULL,"
            " owner TEXT NOT NULL, claimed_ns INTEGER NOT NULL, PRIMARY KEY (message_id, version))",
        ):
            self.db.execute(q)
        if self.kafka:
            self.broker = Kafka(need("ONCEPROOF_KAFKA_BROKERS"), self.stream, self.consumer)
        elif self.redis:
            self.broker = Redis(need("ONCEPROOF_REDIS_URL"), self.stream, self.consumer,
                                self.worker or f"svc-{os.getpid()}", self.lease)
        else:
            self.broker = NATS(need("ONCEPROOF_NATS_URL"))

    def next(self):
        """(payload, ack handle, attempt) of the next delivery, or None."""
        if self.kafka:
            got = self.broker.next(0.5)
            return None if got is None else (got[0], got[1], "?")
        if self.redis:
            got = self.broker.next(0.1)
            return None if got is None else (got[0], got[2], "?")
        got = self.broker.next(self.stream, self.consumer, 2.0)
        if got is None:
            return None
        data, ack = got
        return data, ack, (ack.split(".")[-5] if len(ack.split(".")) == 9 else "?")

    def run(self):
        log(f"{self.worker}: started (pid {os.getpid()}), reading {self.stream}/{self.consumer}")
        while True:
            got = self.next()
            if got is None:
                continue
            data, ack, attempt = got
            try:
                e = json.loads(data)
                if not e.get("eventId") or not e.get("messageId") or int(e.get("version", 0)) <= 0:
                    raise ValueError("missing fields")
            except ValueError as err:
                log(f"{self.worker}: not an event ({err}); terminating it")
                self.broker.term(ack)
                continue
            log(f"{self.worker}: {e['eventId']} attempt {attempt}")
            try:
                self.handle(e, lambda: self.broker.ack(ack))
            except Busy as err:  # another replica's live claim: come back when its lease runs out
                print(f"{self.worker}: {e['eventId']}: {err}; nak", file=sys.stderr, flush=True)
                # Likely done in a moment; if its claimer died, its lease runs
                # out: back off, at most until then, well under max deliver.
                n = int(attempt) if attempt.isdigit() else 1
                self.broker.nak(ack, min(err.wait, 0.2 * n))
            except Exception as err:  # any failure before the ack: have it back
                print(f"{self.worker}: {e['eventId']}: {err}; nak", file=sys.stderr, flush=True)
                self.broker.nak(ack, 0.2)

    def handle(self, e, ack):
        """The order is the point: projection, index, notification, then the ack."""
        self.project(e)
        self.index_doc(e)
        self.notify_once(e)
        ack()
        log(f"{self.worker}: {e['eventId']} acked")

    def project(self, e):
        """The projection row and the processed-event row in one transaction."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            cur = db.execute("INSERT OR IGNORE INTO processed (event_id, at) VALUES (?, ?)", (e["eventId"], time.time()))
            if cur.rowcount == 1:
                db.execute(
                    "INSERT INTO projection (message_id, version, body) VALUES (?, ?, ?) "
                    "ON CONFLICT (message_id) DO UPDATE SET version = excluded.version, body = excluded.body "
                    "WHERE excluded.version > projection.version",
                    (e["messageId"], e["version"], e["body"]))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def index_doc(self, e):
        url = (self.index + "/docs/" + urllib.parse.quote(e["messageId"], safe="")
               + f"?version={e['version']}&version_type=external")
        status, _ = call("PUT", url, {"version": e["version"], "body": e["body"]})
        if status not in (200, 201, 409):
            raise HTTPStatus(f"PUT {url}: status {status}")

    def notify_once(self, e):
        m, v, now = e["messageId"], e["version"], time.time_ns()
        db = self.db
        cur = db.execute("INSERT OR IGNORE INTO notification (message_id, version, state, owner, claimed_ns) VALUES (?, ?, 'claimed', ?, ?)",
                         (m, v, self.owner, now))
        if cur.rowcount == 0:
            state, owner, claimed = db.execute(
                "SELECT state, owner, claimed_ns FROM notification WHERE message_id = ? AND version = ?", (m, v)).fetchone()
            if state == "sent":
                return
            if owner != self.owner:
                left = self.lease - (now - claimed) / 1e9
                if left > 0:
                    raise Busy(f"the notification of {e['eventId']} is being sent by {owner}", left + 0.05)
                cur = db.execute("UPDATE notification SET owner = ?, claimed_ns = ? WHERE message_id = ? AND version = ? AND owner = ? AND claimed_ns = ?",
                                 (self.owner, now, m, v, owner, claimed))
                if cur.rowcount == 0:
                    raise RuntimeError(f"the claim of {e['eventId']} moved on")
            # An earlier attempt may have sent it: ask the notifier.
            q = urllib.parse.urlencode({"messageId": m, "version": v})
            status, body = call("GET", self.notify_url + "/count?" + q)
            if status != 200:
                raise HTTPStatus(f"GET count: status {status}")
            if json.loads(body)["count"] > 0:
                self.mark_sent(m, v)
                return
        self.send(e)
        self.mark_sent(m, v)

    def send(self, e):
        status, _ = call("POST", self.notify_url, {"messageId": e["messageId"], "version": e["version"], "text": e["body"]})
        if status // 100 != 2:
            raise HTTPStatus(f"POST notify: status {status}")

    def mark_sent(self, m, v):
        self.db.execute("UPDATE notification SET state = 'sent' WHERE message_id = ? AND version = ?", (m, v))


def main(service=Service):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        service().run()
    except (ConnectionError, OSError) as err:
        sys.exit(f"consumer service: {err}")


if __name__ == "__main__":
    main()
