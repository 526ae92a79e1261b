"""The job runtime: what runs `@server.job` functions and what they see of their job.

It sits beside `herald.jobs` (the state machine, events, `JobService` and the `JobStore`
port) and below `herald.server`, which offers jobs as tools and tasks: the runtime knows
jobs and the store's error, never requests, connections or the `Server`.
"""

from herald.runtime.context import JobContext, JobFailure
from herald.runtime.runner import JobRunner, ShuttingDown
from herald.runtime.threads import LoopCall, Stopped, in_thread

__all__ = ["JobContext", "JobFailure", "JobRunner", "LoopCall", "ShuttingDown", "Stopped", "in_thread"]
