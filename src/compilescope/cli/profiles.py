"""The --profile files of a command, read, with what could not be read said on stderr (the CLI's to say: the
reader in ingest/profile.py prints nothing, and the API reads the same profiles silently)."""

from __future__ import annotations

import sys

from ..model.profile import Profile


def read_profiles(paths: list[str]) -> list[Profile]:
    """Each --profile, read; what could not be read is said once on stderr (and again in the report)."""
    from ..ingest.profile import read_profile  # here: the profile reader is for runs with one (start-up time)

    profiles = []
    for path in paths:
        profile = read_profile(path)
        for note in profile.notes:
            print(f"compilescope: {path}: {note}", file=sys.stderr)
        profiles.append(profile)
    return profiles
