#!/usr/bin/env python3
"""A mutant of the Python reference adapter with one defect: a creation
conflict (a create of an aggregate that exists) is reported as a version
conflict."""

import _reference  # noqa: F401
import adapter  # noqa: E402  (the reference)


class CreateAsVersionConflict(adapter.Store):
    def conflict(self, conn, s, e):
        refused = super().conflict(conn, s, e)
        if isinstance(refused, adapter.Refused) and refused.status == "duplicate-aggregate-id":
            return adapter.version_conflict(s)  # the defect
        return refused


if __name__ == "__main__":
    adapter.main(CreateAsVersionConflict)
