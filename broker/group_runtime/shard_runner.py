"""One runner per coordinator shard: the only code that touches that shard.

The runner loads the shard from its offsets log, then its trio task loops: wait for requests
or the next timer deadline, hand everything queued to the pure :class:`coordinator.shard.Shard`,
and append the records it produced. While that task sleeps with nothing queued, a request is
decided right away in the task that submits it, by the same step: one request never waits
for two task switches. A reply is released once its records are written, as Kafka
acknowledges an append; when Kafka's ``log.flush.interval.messages`` calls for an fsync, the
broker's flusher (broker/group_runtime/flusher.py) makes one fsync pass across the shards
that need one, and as in Kafka's coordinator runtime every reply is *decided* at once but
*released* only when every record written before it that must be flushed is, while the shard
goes on deciding the next requests during the fsync. Compaction runs in a worker thread.

Time given to the shard is wall-clock milliseconds anchored once at start and advanced by
trio's clock, so trio's MockClock drives every coordinator timeout in tests while stored
timestamps stay meaningful across restarts.

Nothing a request does ends the task. A step that throws is answered as Kafka's
handleOperationException answers it (UNKNOWN_SERVER_ERROR), and since its half-made changes
cannot be trusted, the shard reloads from its log (Kafka reverts to its last snapshot). A
failed write or fsync turns the shard away (NOT_COORDINATOR) until it has reopened its log and
reloaded, which it retries by itself with a growing backoff.
"""

from __future__ import annotations

import enum
import logging
import math
import time
from collections import deque
from functools import partial
from types import MappingProxyType
from typing import Callable, Mapping

import trio

from coordinator.actions import CreateTopics, Journal, Persist, Reply, RequestContext, ShareStateInit
from coordinator.result import CoordinatorResult, StepFailed
from coordinator.interventions import InterventionError
from coordinator.metadata import EMPTY_IMAGE, MetadataImage
from coordinator.recovery import load_shard
from coordinator.responses import error_response, operation_failed
from coordinator.shard import Shard
from offsets_log.compaction import compact
from offsets_log.errors import OffsetsLogError
from offsets_log.flush import FlushPolicy
from offsets_log.log import ShardLog
from protocol.api_keys import ApiKey, api_name
from protocol.errors import ErrorCode
from protocol.logtext import safe

from broker.group_runtime.flusher import Flusher
from broker.group_runtime.lasting_faults import LastingFaults

log = logging.getLogger("groupbroker.shards")
_NO_CONFIGS: Mapping = MappingProxyType({})


class Ticket:
    """One request in the shard's hands; the shard sees it as the reply token.

    ``decided`` once the shard has answered; ``released`` once that answer may be sent (its
    records written, and fsynced if the flush policy calls for it). The
    events to wait on are made only when someone has to wait (most answers are ready first).
    """
    __slots__ = ("api_key", "version", "request", "response", "decided", "released", "failed", "error",
                 "internal_topics", "_events")

    def __init__(self, api_key: int, version: int, request):
        self.api_key, self.version, self.request = api_key, version, request
        self.response = None
        self.decided = self.released = False
        self.failed = False          # the records it depended on were never written or flushed
        self.error = None            # what answered_error() found in the answer
        #: the internal topics a streams heartbeat asked for, and how long their errors last
        self.internal_topics: tuple[dict, int] | None = None
        self._events: dict[str, trio.Event] = {}

    def decide(self, response) -> None:
        if not self.decided:
            self.response = response
            self.decided = True
            if self._events:
                self._wake("decided")
            if getattr(response, "error_code", 0) or self.api_key == ApiKey.OFFSET_COMMIT:
                self.error = answered_error(self, response)
            if self.error is not None:
                _log_error(self)

    def release(self) -> None:
        self.released = True
        if self._events:
            self._wake("released")

    def settle(self, response) -> None:
        """Answer at once, with nothing to write (the shard never saw the request)."""
        self.decide(response)
        self.release()

    async def wait_decided(self) -> None:
        if not self.decided:
            await self._events.setdefault("decided", trio.Event()).wait()

    async def wait_released(self) -> bool:
        """Wait until the answer may go out; False if it must not (its write failed)."""
        if not self.released:
            await self._events.setdefault("released", trio.Event()).wait()
        return not self.failed

    def _wake(self, what: str) -> None:
        event = self._events.get(what)
        if event is not None:
            event.set()


#: The APIs whose errors are answered to a group member (and logged as such).
_MEMBER_APIS = (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP,
                ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_DELETE, ApiKey.OFFSET_FETCH,
                ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_HEARTBEAT)
#: Retrying a failed log: the first wait, and the longest (doubling between).
RETRY_MIN_S = 1.0
RETRY_MAX_S = 30.0


def answered_error(ticket: Ticket, response) -> tuple[str, str, str, int | None, ErrorCode] | None:
    """(group, API name, member id, generation sent, error) when ``response`` answers a
    group API with an error; None otherwise."""
    error = getattr(response, "error_code", 0)
    if not error and ticket.api_key == ApiKey.OFFSET_COMMIT:
        error = next((p.error_code for t in response.topics for p in t.partitions if p.error_code), 0)
    group = getattr(ticket.request, "group_id", None)
    if not error or group is None or ticket.api_key not in _MEMBER_APIS:
        return None
    request = ticket.request
    generation = getattr(request, "generation_id", getattr(request, "generation_id_or_member_epoch",
                                                           getattr(request, "member_epoch", None)))
    return (group, api_name(ticket.api_key), getattr(request, "member_id", ""), generation,
            ErrorCode(error))


def _log_error(ticket: Ticket) -> None:
    """One INFO line per group-API error answered to a member: what reproducing a
    rebalance failure needs to see (e.g. ILLEGAL_GENERATION on a late commit)."""
    group, api, member, generation, error = ticket.error
    who = f"member {safe(member)}" if member else "a new member"
    epoch = "member epoch" if api in (api_name(ApiKey.CONSUMER_GROUP_HEARTBEAT), api_name(ApiKey.SHARE_GROUP_HEARTBEAT),
                                      api_name(ApiKey.STREAMS_GROUP_HEARTBEAT)) else "generation"
    sent = "" if generation is None else f" ({epoch} {generation})"      # JoinGroup sends none
    log.info("group %s: %s v%d from %s%s answered %s", safe(group), api, ticket.version, who, sent,
             error.name)


class Lifecycle(enum.Enum):
    """Where a shard's runner is; what each answers requests with is :meth:`ShardRunner._refusal`'s."""
    LOADING = "loading"      # opening or replaying its log: COORDINATOR_LOAD_IN_PROGRESS
    SERVING = "serving"
    BROKEN = "broken"        # a step threw: requests queue until the shard task has reloaded it
    MOVING = "moving"        # its coordinator moved: the shard task reloads it in its new home
    FAILED = "failed"        # its log failed: NOT_COORDINATOR until the shard task reopens it


#: The moves a runner's lifecycle may make (a failure can happen in any state).
_TRANSITIONS = {
    Lifecycle.LOADING: {Lifecycle.SERVING, Lifecycle.MOVING, Lifecycle.FAILED},
    Lifecycle.SERVING: {Lifecycle.LOADING, Lifecycle.BROKEN, Lifecycle.MOVING, Lifecycle.FAILED},
    Lifecycle.BROKEN: {Lifecycle.LOADING, Lifecycle.MOVING, Lifecycle.FAILED},
    Lifecycle.MOVING: {Lifecycle.LOADING, Lifecycle.FAILED},
    Lifecycle.FAILED: {Lifecycle.LOADING, Lifecycle.MOVING},
}


class ShardRunner:
    def __init__(self, shard: Shard, open_log: Callable[[], ShardLog], *,
                 compact_interval_s: float = 600.0, wall_clock=time.time, journal=None,
                 flusher: Flusher | None = None, metadata: Callable[[], MetadataImage] = lambda: EMPTY_IMAGE,
                 group_configs: Callable[[], Mapping[str, Mapping[str, str]]] = lambda: _NO_CONFIGS,
                 share_state_init: Callable[[str, dict], None] = lambda group, partitions: None):
        self.shard = shard
        self.share_state_init = share_state_init     # the share-partitions' new state (data plane)
        self._open_log = open_log        # opens (and recovers) the shard's log: in a worker thread
        self.log: ShardLog | None = None
        #: the broker's, shared by every shard; a runner on its own runs one with Kafka's defaults
        self.flusher = flusher or Flusher(FlushPolicy())
        self._own_flusher = flusher is None
        self.journal = journal           # a broker.journal.recorder.BrokerJournal, or None (off)
        self.compact_interval_s = compact_interval_s
        self._wall_clock = wall_clock
        self._epoch_ms = 0.0
        self._clock = None                           # the trio run's clock, once running
        self._inbox: deque = deque()                 # (operation, ticket, peer) for the shard task
        self._wakeup: trio.Event | None = None       # set while the shard task sleeps
        self._alarm = math.inf                       # when the sleeping shard task wakes by itself
        self.state = Lifecycle.LOADING
        self._retry_s = RETRY_MIN_S                  # the wait before the next reopening
        self.unavailable: ErrorCode | None = None    # fault injection (see set_unavailable)
        self.lasting_faults = LastingFaults()         # fault injection: fenced members, held groups
        self._appended = self._flushed = -1          # log offsets: last written, last fsynced
        self._must_flush = -1                        # replies after this offset wait for its fsync
        self.last_flush = 0.0                        # trio time of the last fsync
        self._unreleased: deque[tuple[int, Ticket]] = deque()
        self._background: trio.Nursery | None = None  # where compaction runs
        self._compacted = trio.Event()               # set while no compaction runs
        self._compacted.set()
        #: the topics as the coordinator must see them (the broker's topic store's)
        self.metadata = metadata
        self._image: MetadataImage | None = None      # the one the shard was last given
        #: the dynamic group configs (group id -> name -> value, the broker's config APIs'),
        #: replaced as a whole on every change
        self.group_configs = group_configs
        self._configs: Mapping | None = None          # the ones the shard was last given

    def _enter(self, state: Lifecycle) -> None:
        if state not in _TRANSITIONS[self.state]:
            raise AssertionError(f"shard {self.shard.shard_id}: {self.state.value} -> {state.value}")
        self.state = state

    @property
    def loaded(self) -> bool:
        """Whether the shard is built from its log and answers requests."""
        return self.state in (Lifecycle.SERVING, Lifecycle.BROKEN)

    @property
    def failed(self) -> bool:
        return self.state is Lifecycle.FAILED

    @property
    def compacting(self) -> bool:
        return not self._compacted.is_set()

    def now_ms(self) -> int:
        return int(self._epoch_ms + self._clock.current_time() * 1000)

    def submit(self, api_key: int, version: int, request, *, client_id: str = "",
               client_host: str = "/127.0.0.1") -> Ticket:
        """Hand a request to the shard task without waiting; the shard decides its ticket.

        Submitting does not wait, so a connection can pass on several pipelined requests at
        once; the shard still sees them in order.
        """
        ticket = Ticket(api_key, version, request)
        refusal = self._refusal(api_key)
        if refusal is not None:
            ticket.settle(error_response(api_key, version, request, refusal))
            return ticket
        ctx = RequestContext(ticket, api_key, version, client_id, client_host)
        operation = partial(self._handle, ctx, request)
        if self._idle():
            self._run_now(operation, ticket, client_host)
        else:
            self._post(operation, ticket, client_host)
        return ticket

    def _handle(self, ctx: RequestContext, request, now: int) -> CoordinatorResult:
        faults = self.lasting_faults
        request = faults.before(self.shard, ctx.api_key, request)
        out = self.shard.handle(now, ctx, request)
        faults.after(ctx.token, ctx.api_key, request, out.actions)
        return out

    def _idle(self) -> bool:
        """The shard task sleeps with nothing queued: a request may be decided right here."""
        return self._wakeup is not None and not self._wakeup.is_set() and self.unavailable is None

    def _run_now(self, operation, ticket: Ticket, peer: str) -> None:
        """Decide a request in the caller's task while the shard task sleeps: the same step the
        shard task would take, without two task switches per request. The shard task wakes only
        if it must: to reload after a failed step, or for a timer now due before its alarm."""
        actions: list = []
        broken = not self._step(actions, operation, self.now_ms(), ticket, peer)
        self._apply(actions)
        if broken:
            self._enter(Lifecycle.BROKEN)
            self._wakeup.set()
            return
        if self.shard.armed_before(self._alarm * 1000 + self._epoch_ms):
            self._wakeup.set()

    def _refusal(self, api_key: int) -> ErrorCode | None:
        """The error a request gets without reaching the shard, if any."""
        if self.failed or self.unavailable == ErrorCode.NOT_COORDINATOR:
            return ErrorCode.NOT_COORDINATOR
        if not self.loaded or self.unavailable == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            # Kafka answers heartbeats "blindly" with NONE while the shard loads.
            return ErrorCode.NONE if api_key == ApiKey.HEARTBEAT else ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return None

    async def intervene(self, fault, *args):
        """Apply a fault from coordinator/interventions.py in the shard task; its outcome."""
        outcome: list = []
        done = trio.Event()

        def operation(now: int) -> CoordinatorResult:
            try:
                result, decided = self.shard.intervene(now, fault, *args)
                outcome.append(result)
                return decided
            except InterventionError as e:
                outcome.append(e)
                return self.shard.result()
            except Exception as e:          # also the shard task's to handle: it reloads
                outcome.append(e)
                raise
            finally:
                done.set()

        self._post(operation)
        await done.wait()
        if isinstance(outcome[0], Exception):
            raise outcome[0]
        return outcome[0]

    async def complete_transaction(self, producer_id: int, producer_epoch: int, commit: bool,
                                   coordinator_epoch: int) -> ErrorCode:
        """Write a transaction marker into this shard (Kafka's WriteTxnMarkers to a group
        coordinator); NONE once it is written, else the error to retry on."""
        refused = self._refusal(ApiKey.WRITE_TXN_MARKERS)
        if refused is not None:
            return refused
        done = trio.Event()

        def operation(now: int) -> CoordinatorResult:
            try:
                return self.shard.complete_transaction(now, producer_id, producer_epoch, commit,
                                                       coordinator_epoch)
            finally:
                done.set()

        self._post(operation)
        await done.wait()
        await trio.lowlevel.checkpoint()          # the shard task appends before it yields
        return ErrorCode.NOT_COORDINATOR if self.failed else ErrorCode.NONE

    def set_unavailable(self, error: ErrorCode | None) -> None:
        """Fault injection: answer every group request with ``error`` (COORDINATOR_LOAD_IN_PROGRESS
        or NOT_COORDINATOR) until called with None. Timers stop meanwhile; coming back is a
        reload, as when Kafka moves a coordinator back: every member gets a fresh session."""
        was = self.unavailable
        self.unavailable = error
        if was is not None and error is None:
            self._post(lambda now: self.shard.loaded(now))
        elif self._wakeup is not None:
            self._wakeup.set()

    def move(self) -> None:
        """A coordinator failover: unload the shard (parked and queued requests get
        NOT_COORDINATOR), close its log, then open it again where it now belongs (see
        broker/cluster/log_homes.py) and replay it, answering COORDINATOR_LOAD_IN_PROGRESS
        meanwhile; members get fresh sessions, as from Kafka's new coordinator."""
        if self.state is not Lifecycle.MOVING:
            self._enter(Lifecycle.MOVING)
        self._wake_loop()

    @staticmethod
    async def answer(ticket: Ticket, barriers: list | None = None):
        """Wait until the shard decides (a join may park long).

        The answer may not be sent before its ticket is released: a caller that sends it
        later passes ``barriers`` to collect the ticket; without it, this waits here, and an
        answer whose write failed becomes NOT_COORDINATOR.
        """
        await ticket.wait_decided()
        if barriers is not None:
            barriers.append(ticket)
        elif not await ticket.wait_released():
            return error_response(ticket.api_key, ticket.version, ticket.request, ErrorCode.NOT_COORDINATOR)
        return ticket.response

    async def call(self, api_key: int, version: int, request, *, client_id: str = "",
                   client_host: str = "/127.0.0.1", barriers: list | None = None):
        """Submit a request and wait for its answer (see :meth:`answer`)."""
        ticket = self.submit(api_key, version, request, client_id=client_id, client_host=client_host)
        return await self.answer(ticket, barriers)

    def forget_topics(self, topics: set[str]) -> None:
        """Deleted topics: tombstone their committed offsets in every group (Kafka does too)."""
        if self.loaded:
            self._post(lambda now: self.shard.forget_topics(topics))

    def _post(self, operation, ticket: Ticket | None = None, peer: str = "") -> None:
        """Queue work for the shard task, the only code that touches the shard; ``ticket``
        is the request it answers, if any."""
        self._inbox.append((operation, ticket, peer))
        self._wake_loop()

    def _wake_loop(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        self._clock = trio.lowlevel.current_clock()     # trio.current_time() without its lookups
        self._epoch_ms = self._wall_clock() * 1000 - trio.current_time() * 1000
        try:
            actions = await self._load(reopen=True)
        except Exception as e:       # as a failure later on: turned away, retried from a reopened log
            actions = []
            self._fail(e)
        async with trio.open_nursery() as nursery:
            self._background = nursery
            if self._own_flusher:
                nursery.start_soon(self.flusher.run, [self])
            self._apply(actions)
            task_status.started()
            await self._loop()

    async def _loop(self) -> None:
        next_compaction = trio.current_time() + self.compact_interval_s
        while True:
            if self.state is Lifecycle.FAILED:
                await self._recover()
                continue
            if self.state is Lifecycle.MOVING:
                await self._move()
                continue
            if not self._inbox:
                deadline = None if self.unavailable else self.shard.next_deadline()
                self._alarm = min(next_compaction, math.inf if deadline is None else
                                  (deadline - self._epoch_ms) / 1000)
                self._wakeup = trio.Event()
                with trio.move_on_at(self._alarm):
                    await self._wakeup.wait()
                self._wakeup = None
            now = self.now_ms()
            actions: list = []
            broken = self.state is Lifecycle.BROKEN         # a step run by _run_now threw
            while self._inbox and not broken:
                operation, ticket, peer = self._inbox.popleft()
                broken = not self._step(actions, operation, now, ticket, peer)
            if self.unavailable is None and not broken:
                broken = not self._step(actions, self.shard.tick, now, None, "")
            self._apply(actions)
            if broken and self.state in (Lifecycle.SERVING, Lifecycle.BROKEN):
                await self._reload()
                continue
            if trio.current_time() >= next_compaction:
                if not self.compacting:          # the shard answers on while it runs
                    self._background.start_soon(self._compact)
                next_compaction = trio.current_time() + self.compact_interval_s

    def _step(self, actions: list, operation, now: int, ticket: Ticket | None, peer: str) -> bool:
        """Run one operation of the shard, adding its actions; False if it threw.

        Then nothing it decided is kept: its request gets Kafka's answer to an operation that
        throws, any other answer it made becomes NOT_COORDINATOR (as when Kafka unloads a
        coordinator), and the caller reloads the shard from its log.
        """
        try:
            image = self.metadata()
            if image is not self._image:           # the topics changed since the last step
                self.shard.on_metadata(image)
                self._image = image
            configs = self.group_configs()
            if configs is not self._configs:       # a group config changed since the last step
                self.shard.on_group_configs(configs)
                self._configs = configs
            actions += operation(now).actions
            return True
        except Exception as failure:  # a bug or an unwritable record: the state is rebuilt from the log
            e = failure.__cause__ if isinstance(failure, StepFailed) else failure
            decided = failure.partial.actions if isinstance(failure, StepFailed) else []
            error = ErrorCode.UNKNOWN_SERVER_ERROR
            what = "a timer" if ticket is None else \
                f"{api_name(ticket.api_key)} v{ticket.version} from {peer}"
            log.error("shard %d: %s failed (%s: %s); %sreloading the shard from its log",
                      self.shard.shard_id, what, type(e).__name__, safe(e),
                      "" if ticket is None else f"answered {error.name}; ")
            log.debug("the failure in shard %d", self.shard.shard_id, exc_info=True)
            for action in decided:
                if isinstance(action, Reply) and action.token is not ticket:
                    action.token.settle(error_response(action.api_key, action.version,
                                                       action.token.request, ErrorCode.NOT_COORDINATOR))
            if ticket is not None:
                ticket.settle(operation_failed(ticket.api_key, ticket.version, ticket.request, error))
            return False

    async def _load(self, *, reopen: bool, sync_first: bool = False) -> list:
        """Build the shard again from its log, in worker threads: (re)opened first if ``reopen``
        (after an fsync of what replies wait for, if ``sync_first``), replayed into a fresh
        shard. Installs both and returns the actions of the load; raises what stopped it
        (nothing is installed then)."""
        if reopen and self.compacting:              # it works on the files the reopen recovers
            await self._compacted.wait()
        old, now = self.log, self.now_ms()

        def build():
            started = time.perf_counter()
            if sync_first:
                old.sync()
            shard_log = self._reopen() if reopen else old
            try:
                shard = self.shard.fresh()
                actions = load_shard(shard, shard_log, now).actions
                log.info("shard %d: loaded from its log in %.0f ms", shard.shard_id,
                         (time.perf_counter() - started) * 1000)
                return shard_log, shard, actions
            except BaseException:           # a log opened here and not kept is closed, then the failure goes on
                if shard_log is not old:
                    shard_log.close()
                raise
        shard_log, shard, actions = await trio.to_thread.run_sync(build)
        if sync_first:
            self.flushed(old, self._appended)       # what waited for that fsync may go now
        self.log, self.shard, self._image, self._configs = shard_log, shard, None, None
        self.lasting_faults.clear()                 # soft state, as the groups' own
        if reopen:
            self._opened(shard_log)
        if self.state is not Lifecycle.MOVING:      # moved again meanwhile: the loop moves on
            self._enter(Lifecycle.SERVING)
        return actions

    async def _reload(self) -> None:
        """Start again from the log: parked requests are answered NOT_COORDINATOR, requests
        arriving meanwhile COORDINATOR_LOAD_IN_PROGRESS, as while Kafka loads a coordinator."""
        self._enter(Lifecycle.LOADING)
        self._apply(self.shard.unload().actions)
        try:
            actions = await self._load(reopen=False)
        except Exception as e:       # whatever stops a load, retrying from a reopened log may cure
            self._fail(e)
            return
        self._apply(actions)
        log.info("shard %d: reloaded from its log", self.shard.shard_id)

    async def _move(self) -> None:
        """Unload, close the log, open it where it now belongs (broker/cluster/log_homes.py)
        and replay it."""
        self._enter(Lifecycle.LOADING)
        started = trio.current_time()
        self._turn_away()
        try:
            actions = await self._load(reopen=True, sync_first=bool(self._unreleased))
        except Exception as e:       # as a failed write: turned away, retried from a reopened log
            self._fail(e)
            return
        if self.state is Lifecycle.MOVING:
            return
        self._apply(actions)
        log.info("shard %d: loaded after a coordinator move in %.1f ms (%s)", self.shard.shard_id,
                 (trio.current_time() - started) * 1000, self.log.directory)

    def _turn_away(self) -> None:
        """Unload: parked requests and queued ones get NOT_COORDINATOR (as when Kafka unloads a
        coordinator); queued work that answers no request stays."""
        self._apply(self.shard.unload().actions)
        waiting, self._inbox = self._inbox, deque()
        for operation, ticket, peer in waiting:
            if ticket is None:
                self._inbox.append((operation, ticket, peer))
            else:
                ticket.settle(error_response(ticket.api_key, ticket.version, ticket.request,
                                             ErrorCode.NOT_COORDINATOR))

    async def _recover(self) -> None:
        """After a failed write: wait, reopen the log (its recovery cuts off what a failed
        write left), reload the shard; again with a longer wait until it works."""
        self._turn_away()                           # parked requests: NOT_COORDINATOR (failed)
        while True:
            await trio.sleep(self._retry_s)
            self._retry_s = min(self._retry_s * 2, RETRY_MAX_S)   # until a write works again
            if self.state is Lifecycle.MOVING:      # a move reopens it (in its new home)
                return
            self._enter(Lifecycle.LOADING)
            try:
                actions = await self._load(reopen=True)
            except Exception as e:   # a disk still failing, or anything else: try again later
                self._enter(Lifecycle.FAILED)
                log.warning("shard %d: reopening its log failed (%s); next try in %.0f s",
                            self.shard.shard_id, e, self._retry_s)
                continue
            if self.state is Lifecycle.MOVING:
                return
            self._apply(actions)
            log.warning("shard %d: log reopened and shard reloaded; serving again", self.shard.shard_id)
            return

    def _opened(self, shard_log: ShardLog) -> None:
        """No reply waits on what a log holds when it is opened: count it as flushed."""
        self._appended = self._flushed = shard_log.next_offset - 1
        self._must_flush = -1
        self.last_flush = trio.current_time()

    def _reopen(self) -> ShardLog:
        """A new ShardLog on the same files (recovery runs as at startup; the first open too)."""
        if self.log is not None:
            self.log.close()
        return self._open_log()

    def _apply(self, actions) -> None:
        """Append records; decide every reply now, release it once what came before it and
        must be flushed is."""
        for action in actions:
            if isinstance(action, Persist):
                self._append(action.records)
                continue
            if isinstance(action, Journal):
                if self.journal is not None:
                    self.journal.record(action)
                continue
            if isinstance(action, ShareStateInit):
                self.share_state_init(action.group, action.partitions)
                continue
            if isinstance(action, CreateTopics):
                action.token.internal_topics = (action.topics, action.error_ttl_ms)
                continue
            ticket = action.token
            if self.failed:
                ticket.settle(error_response(ticket.api_key, ticket.version, ticket.request,
                                             ErrorCode.NOT_COORDINATOR))
                continue
            ticket.decide(action.response)
            if ticket.error is not None and self.journal is not None:
                self.journal.error(self.shard, self.now_ms(), ticket)
            if self._must_flush <= self._flushed:
                ticket.release()
            else:
                self._unreleased.append((self._must_flush, ticket))

    def _append(self, records) -> None:
        if self.failed:
            return
        try:
            self._appended = self.log.append(records, self.now_ms())[-1]
        except OffsetsLogError as e:
            self._fail(e)
            return
        self._retry_s = RETRY_MIN_S                        # writes work: a next failure retries soon
        if self.flusher.policy.due(self._appended - self._flushed):
            self._must_flush = self._appended
            self.flusher.request(self)

    @property
    def unflushed(self) -> bool:
        return not self.failed and self.log is not None and self._appended > self._flushed

    def flushed(self, shard_log: ShardLog, result: int | OffsetsLogError) -> None:
        """The flusher's fsync of ``shard_log`` ended: release the replies it covers."""
        if shard_log is not self.log:                      # a log replaced since: forget it
            return
        if isinstance(result, OffsetsLogError):
            self._fail(result)
            return
        self._flushed = max(self._flushed, result)
        self.last_flush = trio.current_time()
        while self._unreleased and self._unreleased[0][0] <= self._flushed:
            self._unreleased.popleft()[1].release()

    def _fail(self, e: Exception) -> None:
        """A write that failed is never acknowledged: its replies turn into NOT_COORDINATOR,
        and so does every request until the log is reopened (the shard task retries)."""
        if self.failed:
            return
        self._enter(Lifecycle.FAILED)
        log.error("shard %d: offsets log failed (%s); answering NOT_COORDINATOR, reopening in "
                  "%.0f s", self.shard.shard_id, e, self._retry_s)
        while self._unreleased:
            _, ticket = self._unreleased.popleft()
            ticket.failed = True
            ticket.release()
        self._wake_loop()

    async def _compact(self) -> None:
        """Compact the sealed segments in a worker thread, beside the appends (the log's lock
        covers the swap)."""
        self._compacted = trio.Event()
        try:
            result = await trio.to_thread.run_sync(compact, self.log, self.now_ms())
            log.info("shard %d: compacted %s", self.shard.shard_id, result)
        except (OffsetsLogError, OSError) as e:       # the old segments stay; try again later
            log.error("shard %d: compaction failed: %s", self.shard.shard_id, e)
        finally:
            self._compacted.set()
