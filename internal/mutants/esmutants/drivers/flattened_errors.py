#!/usr/bin/env python3
"""A mutant of the Python reference adapter with one defect: every conflict
is answered with the generic status "error" (its message still says which),
as an adapter that catches every exception into one error type does."""

import _reference  # noqa: F401
import adapter  # noqa: E402  (the reference)

CONFLICTS = ("duplicate-request-id", "version-conflict", "duplicate-aggregate-id")


class FlattenedErrors(adapter.Adapter):
    def reply(self, rid, status, **fields):
        if status in CONFLICTS:  # the defect
            return super().reply(rid, "error", message=f"{status}: {fields.get('message', '')}")
        return super().reply(rid, status, **fields)


if __name__ == "__main__":
    adapter.main(adapter_class=FlattenedErrors)
