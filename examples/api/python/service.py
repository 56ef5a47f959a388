#!/usr/bin/env python3
"""An order service in Python (standard library only) for the api suite.

It implements the kit's default endpoint description, contract reject-409
(docs/api.md):

    POST /orders            Idempotency-Key: K, X-Tenant: T, body {"item": .., "qty": ..}
                            201 the order; a repeated K under T: 409 problem+json
    GET  /orders/{id}       the order K under T, or 404 problem+json
    GET  /orders?requestId= every order carrying K under T, a JSON array

Two variants (--variant, or the ORDERS_VARIANT environment variable):

    correct            the database's primary key (tenant, key) decides: the
                       INSERT is the check, inside the database's atomic write
    check-then-insert  SELECT for the key, then INSERT into a table without
                       the key constraint: two requests racing with one key
                       both pass the SELECT (the defect the api suite's
                       API-2.1 catches)

The database is --db, else $TCK_DATA_DIR/orders.db (the kit sets it to a
directory of its own that survives the restarts it makes), else memory.

    tck run --suite api --target 'api/http=cmd:python3 examples/api/python/service.py --port {port}'
"""

import argparse
import datetime
import json
import os
import sqlite3
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

SCHEMA = {
    "correct": """CREATE TABLE IF NOT EXISTS orders (
        tenant TEXT NOT NULL, key TEXT NOT NULL, payload TEXT NOT NULL, response BLOB NOT NULL,
        PRIMARY KEY (tenant, key))""",
    "check-then-insert": """CREATE TABLE IF NOT EXISTS orders_unkeyed (
        tenant TEXT NOT NULL, key TEXT NOT NULL, payload TEXT NOT NULL, response BLOB NOT NULL)""",
}
TABLE = {"correct": "orders", "check-then-insert": "orders_unkeyed"}


class Store:
    """One sqlite3 connection per thread on one database file."""

    def __init__(self, path, variant):
        self.variant = variant
        self.table = TABLE[variant]
        self.local = threading.local()
        self.memory = path is None
        # A shared in-memory database lives as long as one connection does.
        self.path = "file:orders?mode=memory&cache=shared" if self.memory else path
        self.keep = self.conn()
        self.keep.execute(SCHEMA[variant])
        if not self.memory:
            self.keep.execute("PRAGMA journal_mode=WAL")

    def conn(self):
        c = getattr(self.local, "conn", None)
        if c is None:
            c = sqlite3.connect(self.path, timeout=10, isolation_level=None, uri=self.memory, check_same_thread=False)
            self.local.conn = c
        return c

    def orders(self, tenant, key):
        rows = self.conn().execute(
            f"SELECT payload, response FROM {self.table} WHERE tenant = ? AND key = ? ORDER BY rowid", (tenant, key))
        return rows.fetchall()

    def create(self, tenant, key, payload, response):
        """True when this request created the order, False for a repeat."""
        c = self.conn()
        if self.variant == "check-then-insert":
            if self.orders(tenant, key):
                return False
            c.execute(f"INSERT INTO {self.table} VALUES (?, ?, ?, ?)", (tenant, key, payload, response))
            return True
        try:
            c.execute("INSERT INTO orders VALUES (?, ?, ?, ?)", (tenant, key, payload, response))
            return True
        except sqlite3.IntegrityError:
            return False


class Server(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: the kit runs its rules at
    # once, and a burst past the backlog is reset before any answer.
    request_queue_size = 128
    daemon_threads = True


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the kit's bursts reuse connections
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall
    store = None

    def log_message(self, fmt, *args):  # quiet: the kit keeps stderr for errors
        pass

    def send(self, status, body, ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def problem(self, status, title, key, tenant, detail=""):
        body = json.dumps({"type": "about:blank", "title": title, "status": status, "detail": detail,
                           "requestId": key, "tenant": tenant}, sort_keys=True).encode()
        self.send(status, body, "application/problem+json")

    def tenant(self):
        return self.headers.get("X-Tenant") or "default"

    def do_POST(self):
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        key, tenant = self.headers.get("Idempotency-Key", ""), self.tenant()
        if url.path != "/orders":
            return self.problem(404, "no such endpoint", key, tenant)
        if not key:
            return self.problem(400, "missing Idempotency-Key", key, tenant)
        try:
            body = json.loads(raw)
            assert isinstance(body, dict)
        except (ValueError, AssertionError):
            return self.problem(400, "the body must be a JSON object", key, tenant)
        payload = json.dumps(body, sort_keys=True, separators=(",", ":"))
        order = dict(body)
        order.update({"id": key, "tenant": tenant,
                      "createdAt": datetime.datetime.now(datetime.timezone.utc).isoformat()})
        response = json.dumps(order, sort_keys=True, separators=(",", ":")).encode()
        if self.store.create(tenant, key, payload, response):
            return self.send(201, response)
        self.problem(409, "duplicate request id", key, tenant,
                     "an order with this Idempotency-Key exists; it is unchanged")

    def do_GET(self):
        url = urlsplit(self.path)
        tenant = self.tenant()
        if url.path.startswith("/orders/"):
            key = unquote(url.path[len("/orders/"):])
            rows = self.store.orders(tenant, key)
            if not rows:
                return self.problem(404, "no such order", key, tenant)
            return self.send(200, rows[0][1])
        if url.path == "/orders":
            key = parse_qs(url.query).get("requestId", [""])[0]
            if not key:
                return self.problem(400, "list needs ?requestId=", key, tenant)
            items = [json.loads(r[1]) for r in self.store.orders(tenant, key)]
            return self.send(200, json.dumps(items, sort_keys=True).encode())
        self.problem(404, "no such endpoint", "", tenant)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8080")))
    ap.add_argument("--variant", choices=sorted(SCHEMA), default=os.environ.get("ORDERS_VARIANT", "correct"))
    ap.add_argument("--db", default=None)
    args = ap.parse_args()
    path = args.db
    if path is None and os.environ.get("TCK_DATA_DIR"):
        path = os.path.join(os.environ["TCK_DATA_DIR"], "orders.db")
    if path is None:
        print("service.py: no --db and no TCK_DATA_DIR: orders are kept in memory and lost on restart", file=sys.stderr)
    Handler.store = Store(path, args.variant)
    server = Server(("127.0.0.1", args.port), Handler)
    print(f"service.py: {args.variant} on 127.0.0.1:{args.port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
