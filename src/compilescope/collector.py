"""The garbage collector's frozen objects: whether any are frozen, known without counting them.

gc.get_freeze_count() walks every frozen object: after the report command's imports are frozen (35,000
objects) one call takes 2.7 ms, a fiftieth of a small report. What this package freezes for the whole
process is remembered here instead; anything else (a caller that froze its own objects) is still counted.
"""

from __future__ import annotations

import gc

_frozen_for_process = False  # freeze_for_process() has run: what it froze stays frozen until the process ends


def freeze_for_process() -> None:
    """Freeze every object that exists now, for the rest of the process."""
    global _frozen_for_process
    gc.freeze()
    _frozen_for_process = True


def something_frozen() -> bool:
    """Whether the collector has frozen objects (whoever froze them: then theirs to unfreeze, not ours)."""
    return _frozen_for_process or gc.get_freeze_count() > 0
