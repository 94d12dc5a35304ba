"""What an island reports of its discrete changes (a friction mode, a contact, a stop, a
diode switching): one record per change, logged into the run's ``events``."""
from __future__ import annotations

from collections import namedtuple

PhysicalEvent = namedtuple("PhysicalEvent", "t element kind from_ to")
