#!/usr/bin/env python3
"""A mutant of the Python reference adapter with one defect: the request id
is checked by a query made before the write transaction, and the table has
no unique constraint on it (the seed's "先查询、后写入"). Two appends of one
request id at different versions both pass the check when they race."""

import _reference  # noqa: F401
import adapter  # noqa: E402  (the reference)

SCHEMA = adapter.SCHEMA.replace("    UNIQUE (context, name, tenant, id, request_id)\n", "").replace(
    "PRIMARY KEY (context, name, tenant, id, version),\n);", "PRIMARY KEY (context, name, tenant, id, version)\n);")


class CheckThenInsert(adapter.Store):
    schema = SCHEMA

    def append(self, s):
        self.validate(s)
        if self.exists(s["aggregate"], s["requestId"]):  # the defect: outside the write
            raise adapter.duplicate_request(s)
        super().append(s)


if __name__ == "__main__":
    adapter.main(CheckThenInsert)
