#!/usr/bin/env python3
"""A mutant of the Python reference adapter with one defect: close answers
ok and closes nothing, so a closed handle goes on appending and loading."""

import _reference  # noqa: F401
import adapter  # noqa: E402  (the reference)


class ClosedHandleAnswers(adapter.Adapter):
    def handle_open(self, name):
        pass  # the defect: any handle name is served, closed or not


if __name__ == "__main__":
    adapter.main(adapter_class=ClosedHandleAnswers)
