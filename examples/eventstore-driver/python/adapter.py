#!/usr/bin/env python3
"""The reference event-store adapter in Python: standard library only,
sqlite3 underneath, speaking the onceproof driver protocol (version 1,
docs/eventstore-driver.md) on stdin and stdout.

    tck run --suite eventstore \
        --target 'eventstore/process=cmd:python3 examples/eventstore-driver/python/adapter.py'

Each line on stdin is one request; each line on stdout is one reply with the
request's id. Requests are handled on a pool of threads, so many are in
flight at once (the race rules need it), each thread with its own
connection. The database file is $TCK_DATA_DIR/events.db (or --db PATH):
the kit starts two of these processes over one directory, two service
instances over one database.

The three conflicts are raised by the database's own constraints inside one
write transaction, never by a check made before it:

  - PRIMARY KEY (aggregate, version): a taken version, or a second create;
  - UNIQUE (aggregate, request_id): a request id the aggregate already holds;
  - the stream row is inserted only when its predecessor exists, in the same
    statement, so no gap can be stored.

Copy it and replace the Store class with your store: the protocol part
(Adapter) stays as it is.
"""

import base64
import json
import os
import sqlite3
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

PROTOCOL = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS streams (
    context    TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    tenant     TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    request_id TEXT    NOT NULL,
    command_id TEXT    NOT NULL,
    PRIMARY KEY (context, name, tenant, id, version),
    UNIQUE (context, name, tenant, id, request_id)
);
CREATE TABLE IF NOT EXISTS events (
    context    TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    tenant     TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    seq        INTEGER NOT NULL,
    event_type TEXT    NOT NULL,
    body       BLOB    NOT NULL,
    PRIMARY KEY (context, name, tenant, id, version, seq)
);
"""

# The column lists SQLite names in "UNIQUE constraint failed: ..." for the
# two stream constraints: which one fired decides the conflict.
VERSION_KEY = "streams.context, streams.name, streams.tenant, streams.id, streams.version"
REQUEST_KEY = "streams.context, streams.name, streams.tenant, streams.id, streams.request_id"

INSERT_STREAM = """
INSERT INTO streams (context, name, tenant, id, version, request_id, command_id)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7
WHERE ?5 = 1 OR EXISTS (
    SELECT 1 FROM streams
    WHERE context = ?1 AND name = ?2 AND tenant = ?3 AND id = ?4 AND version = ?5 - 1)
"""

INSERT_EVENT = """
INSERT INTO events (context, name, tenant, id, version, seq, event_type, body)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
"""

SELECT_STREAMS = """
SELECT s.context, s.name, s.tenant, s.id, s.version, s.request_id, s.command_id, e.event_type, e.body
FROM streams s JOIN events e
  ON e.context = s.context AND e.name = s.name AND e.tenant = s.tenant AND e.id = s.id AND e.version = s.version
WHERE s.context = ? AND s.name = ? AND s.tenant = ? AND s.id = ? AND s.version BETWEEN ? AND ?
ORDER BY s.version, e.seq
"""

SELECT_REQUEST = """
SELECT EXISTS (SELECT 1 FROM streams WHERE context = ? AND name = ? AND tenant = ? AND id = ? AND request_id = ?)
"""


def log(msg):
    print(f"adapter[{os.getpid()}]: {msg}", file=sys.stderr, flush=True)


class Refused(Exception):
    """A definite answer other than ok: a protocol status and its fields."""

    def __init__(self, status, message, **fields):
        super().__init__(message)
        self.status, self.message, self.fields = status, message, fields


def key(agg):
    return (agg["context"], agg["name"], agg["tenant"], agg["id"])


def duplicate_request(s):
    return Refused("duplicate-request-id", f"request id {s['requestId']!r} already stored",
                   aggregate=s["aggregate"], version=s["version"], requestId=s["requestId"])


def version_conflict(s):
    return Refused("version-conflict", f"version {s['version']} conflicts with the stored history",
                   aggregate=s["aggregate"], version=s["version"], requestId=s["requestId"])


def duplicate_aggregate(s):
    return Refused("duplicate-aggregate-id", "the aggregate already exists",
                   aggregate=s["aggregate"], requestId=s["requestId"])


def invalid(message):
    return Refused("invalid-argument", message)


class Store:
    """The store: append, load and the authoritative request-id query over
    one SQLite file. Writes in one process queue on a lock (threads wait in
    Python, not in SQLite's busy handler); BEGIN IMMEDIATE and the busy
    timeout cover the other processes on the file."""

    schema = SCHEMA

    def __init__(self, path):
        self.path = path
        self.local = threading.local()
        self.write_lock = threading.Lock()
        conn = self.connect()
        # Inside one write transaction: the other processes create it too.
        conn.execute("BEGIN IMMEDIATE")
        for stmt in self.schema.split(";"):
            if stmt.strip():
                conn.execute(stmt)
        conn.execute("COMMIT")

    def connect(self):
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=True)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self.local.conn = conn
        return conn

    def version(self):
        return "python " + sys.version.split()[0] + ", sqlite3 " + sqlite3.sqlite_version

    def validate(self, s):
        agg = s.get("aggregate") or {}
        for f in ("context", "name", "id", "tenant"):
            if not isinstance(agg.get(f), str):
                raise invalid(f"aggregate.{f} must be a string")
        if not agg["name"] or not agg["id"]:
            raise invalid("aggregate name and id are required")
        if not isinstance(s.get("version"), int) or s["version"] < 1:
            raise invalid(f"version {s.get('version')!r} is below the initial version 1")
        if not isinstance(s.get("requestId"), str) or not s["requestId"]:
            raise invalid("request id is required")
        if not isinstance(s.get("commandId"), str):
            raise invalid("command id must be a string")
        if not s.get("events"):
            raise invalid("a stream needs at least one event")

    def append(self, s):
        self.validate(s)
        events = [(e["type"], base64.b64decode(e["body"] or "", validate=True)) for e in s["events"]]
        conn = self.connect()
        with self.write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                self.write(conn, s, events)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def write(self, conn, s, events):
        """The stream row and its events inside the caller's transaction."""
        k = key(s["aggregate"])
        try:
            cur = conn.execute(INSERT_STREAM, (*k, s["version"], s["requestId"], s["commandId"]))
        except sqlite3.IntegrityError as e:
            raise self.conflict(conn, s, e)
        if cur.rowcount == 0:
            raise version_conflict(s)  # the predecessor is absent: a gap
        for i, (typ, body) in enumerate(events):
            conn.execute(INSERT_EVENT, (*k, s["version"], i, typ, body))

    def conflict(self, conn, s, e):
        """Maps the constraint that fired to its conflict; anything else is
        raised as it is (an error, not a conflict)."""
        msg = str(e)
        cols = msg.split("constraint failed: ", 1)[-1].strip() if "constraint failed: " in msg else ""
        if cols == REQUEST_KEY:
            return duplicate_request(s)
        if cols == VERSION_KEY:
            if s["version"] != 1:
                return version_conflict(s)
            # The aggregate exists. An exact retry (its request id is there)
            # is told so; the query runs in the same write transaction.
            (dup,) = conn.execute(SELECT_REQUEST, (*key(s["aggregate"]), s["requestId"])).fetchone()
            return duplicate_request(s) if dup else duplicate_aggregate(s)
        return e

    def load(self, agg, frm, to):
        if not isinstance(frm, int) or not isinstance(to, int) or frm < 1 or to < frm:
            raise invalid(f"version range [{frm}, {to}]")
        rows = self.connect().execute(SELECT_STREAMS, (*key(agg), frm, min(to, 2**62))).fetchall()
        out = []
        for c, n, t, i, version, req, cmd, typ, body in rows:
            if not out or out[-1]["version"] != version:
                out.append({"aggregate": {"context": c, "name": n, "tenant": t, "id": i},
                            "version": version, "requestId": req, "commandId": cmd, "events": []})
            out[-1]["events"].append({"type": typ, "body": base64.b64encode(bytes(body)).decode("ascii")})
        return out

    def exists(self, agg, request_id):
        (found,) = self.connect().execute(SELECT_REQUEST, (*key(agg), request_id)).fetchone()
        return bool(found)


class Adapter:
    """The protocol: requests from stdin, handled on a thread pool, replies
    on stdout one whole line at a time."""

    def __init__(self, store):
        self.store = store
        self.out_lock = threading.Lock()
        self.handles_lock = threading.Lock()
        self.handles = {}  # handle -> open?
        self.next_handle = 0

    def reply(self, rid, status, **fields):
        line = json.dumps({"id": rid, "status": status, **fields}, separators=(",", ":"))
        with self.out_lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def handle_open(self, name):
        with self.handles_lock:
            if not self.handles.get(name):
                raise Refused("closed", f"handle {name!r} is closed or was never opened")

    def serve(self, req):
        rid = req.get("id")
        try:
            op = req.get("op")
            if op == "hello":
                return self.reply(rid, "ok", protocol=PROTOCOL, store=self.store.version(), sharedData=True,
                                  capabilities={"acceptsVersionGap": False})
            if op == "open":
                with self.handles_lock:
                    self.next_handle += 1
                    name = f"h{self.next_handle}"
                    self.handles[name] = True
                return self.reply(rid, "ok", handle=name)
            if op == "close":
                with self.handles_lock:
                    self.handles[req.get("handle")] = False
                return self.reply(rid, "ok")
            self.handle_open(req.get("handle"))
            if op == "append":
                self.store.append(req.get("stream") or {})
                return self.reply(rid, "ok")
            if op == "load":
                return self.reply(rid, "ok", streams=self.store.load(req["aggregate"], req.get("from"), req.get("to")))
            if op == "exists":
                return self.reply(rid, "ok", exists=self.store.exists(req["aggregate"], req["requestId"]))
            raise invalid(f"unknown op {op!r}")
        except Refused as r:
            self.reply(rid, r.status, message=r.message, **r.fields)
        except Exception as e:  # any other failure is an error, never a conflict
            log(f"request {rid}: {type(e).__name__}: {e}")
            self.reply(rid, "error", message=f"{type(e).__name__}: {e}")

    def run(self):
        with ThreadPoolExecutor(max_workers=8) as pool:
            for line in sys.stdin.buffer:
                if not line.strip():
                    continue
                pool.submit(self.serve, json.loads(line))
        # stdin ended: the kit is done with this process.


def main(store_class=Store, adapter_class=Adapter):
    path = None
    if "--db" in sys.argv:
        path = sys.argv[sys.argv.index("--db") + 1]
    elif os.environ.get("TCK_DATA_DIR"):
        path = os.path.join(os.environ["TCK_DATA_DIR"], "events.db")
    else:
        sys.exit("adapter: no database: give --db PATH or set TCK_DATA_DIR")
    store = store_class(path)
    log(f"serving {store.version()} over {path}")
    adapter_class(store).run()


if __name__ == "__main__":
    main()
