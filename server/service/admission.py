"""When an export job may start: at most `jobs` at once, and within a memory budget.

A job is admitted when fewer than `jobs` jobs hold a slot and its memory estimate fits in the
budget beside the estimates of the jobs whose processes are still alive; a job that fits nowhere
still starts when no other job holds memory (a budget smaller than one job must not stop the run).
Jobs are admitted in the order they asked. The slot is given back when the job's result arrives;
the memory when its process has exited (a child writes its report after sending the result, and
keeps its memory until then).
"""

from __future__ import annotations

import asyncio
import collections
import itertools


class Ticket:
    """One admitted job's slot and memory; each is given back once (later calls do nothing)."""

    def __init__(self, admission: Admission, memory_mb: float) -> None:
        self._admission = admission
        self.memory_mb = memory_mb
        self._holds_slot = True
        self._holds_memory = True

    def release_slot(self) -> None:
        if self._holds_slot:
            self._holds_slot = False
            self._admission._give_back(slot=True, memory_mb=0.0)

    def release_memory(self) -> None:
        if self._holds_memory:
            self._holds_memory = False
            self._admission._give_back(slot=False, memory_mb=self.memory_mb)


class Admission:
    def __init__(self, jobs: int, budget_mb: float | None = None) -> None:
        """`budget_mb`: None for no memory limit."""
        self.jobs = max(1, jobs)
        self.budget_mb = budget_mb
        self.running = 0  # jobs holding a slot
        self.reserved_mb = 0.0  # memory estimates of jobs whose processes are alive
        self.holders = 0  # jobs holding memory
        self.peak_running = 0  # the most jobs that held a slot at once
        self._waiting: collections.OrderedDict[int, tuple[float, asyncio.Future]] = collections.OrderedDict()
        self._ids = itertools.count()

    def _fits(self, memory_mb: float) -> bool:
        if self.running >= self.jobs:
            return False
        return self.budget_mb is None or self.holders == 0 or self.reserved_mb + memory_mb <= self.budget_mb

    async def admit(self, memory_mb: float) -> Ticket:
        """Wait for a slot and room for `memory_mb`; first come, first served."""
        if not self._waiting and self._fits(memory_mb):
            return self._take(memory_mb)
        ticket_id = next(self._ids)
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._waiting[ticket_id] = (memory_mb, future)
        try:
            await future
        except asyncio.CancelledError:
            self._waiting.pop(ticket_id, None)
            if future.done() and not future.cancelled():  # admitted just as it was cancelled
                ticket = future.result()
                ticket.release_slot()
                ticket.release_memory()
            raise
        return future.result()

    def _take(self, memory_mb: float) -> Ticket:
        self.running += 1
        self.holders += 1
        self.reserved_mb += memory_mb
        self.peak_running = max(self.peak_running, self.running)
        return Ticket(self, memory_mb)

    def _give_back(self, *, slot: bool, memory_mb: float) -> None:
        if slot:
            self.running -= 1
        else:
            self.holders -= 1
            self.reserved_mb -= memory_mb
        while self._waiting:
            ticket_id, (wanted, future) = next(iter(self._waiting.items()))
            if future.done():  # cancelled while waiting
                self._waiting.pop(ticket_id)
                continue
            if not self._fits(wanted):
                return
            self._waiting.pop(ticket_id)
            future.set_result(self._take(wanted))
