"""Puts the reference adapter on the path of the mutants beside this file."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "examples", "eventstore-driver", "python"))
