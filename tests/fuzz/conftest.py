"""Fuzzing profiles: a bounded one for `make test`, a long one for `make fuzz` (HYPOTHESIS_PROFILE=fuzz).

They are applied by the fuzz tests themselves (`FUZZ`), so the rest of the suite keeps the
default profile.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("bounded", max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
settings.register_profile("fuzz", max_examples=5000, deadline=None, suppress_health_check=list(HealthCheck))
FUZZ = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "bounded"))
