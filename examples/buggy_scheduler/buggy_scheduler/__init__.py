"""An example third-party scheduler package (see README.md): best-fit with one deliberate bug."""
from buggy_scheduler.scheduler import BuggyBestFit, FixedBestFit

__all__ = ["BuggyBestFit", "FixedBestFit"]
