"""The fault-injection control surface of a running broker.

One set of operations, reached three ways: in-process (``await broker.control.execute(...)``
inside the broker's trio loop), from another thread (:class:`broker.testing.embedded.EmbeddedBroker`,
what the pytest plugin uses), and out of process through the admin endpoint
(:mod:`broker.faults.endpoint`, ``groupbroker faults ...``). Every operation is logged and can be
undone (``clear``, ``shard_available``); none writes anything to the offsets log that the
coordinator would not write for the real cause.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging

from coordinator import interventions
from coordinator.routing import shard_for
from protocol.errors import ErrorCode

from security.acls import AclFilter, Operation, PatternType, Permission, ResourceType

from broker.cluster.moves import ClusterMoves
from broker.cluster.topology import TXN_TOPIC, TopologyError
from broker.faults.rules import FaultError, error_code

log = logging.getLogger("groupbroker.faults")

#: Unavailability modes of a shard, as Kafka shows them while loading and after moving away.
UNAVAILABLE = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR)


class BrokerControl:
    """Operations by name, with JSON-friendly arguments and results, on the parts they change:
    the fault rules, the coordinator shards (``runners``), the transaction coordinator, the
    cluster's placement (``cluster``), and the ACLs (``acls``: the connection's ACL APIs)."""

    def __init__(self, faults, runners: list, transactions, topology, txn_partitions: int,
                 cluster: ClusterMoves, acls, share=None):
        self.faults, self.runners, self.transactions = faults, runners, transactions
        self.share = share                    # the share-partitions' runtime (broker/data/share_fetch.py)
        self.topology, self.txn_partitions, self.cluster, self.acls = topology, txn_partitions, cluster, acls

    async def execute(self, op: str, **args):
        """Run one operation; a bad one raises FaultError or InterventionError."""
        method = getattr(self, f"op_{op.replace('-', '_')}", None)
        if method is None:
            raise FaultError(f"unknown operation {op!r}; known: {', '.join(operations())}")
        try:
            return await method(**args)
        except TypeError as e:
            raise FaultError(f"{op}: {e}") from None
        except TopologyError as e:
            raise FaultError(f"{op}: {e}") from None

    # --- request faults ----------------------------------------------------------------------
    async def op_fail(self, api, error, count: int | None = 1, group: str | None = None,
                      client_id: str | None = None) -> str:
        """Answer the next COUNT requests of API with ERROR."""
        return self.faults.add(api, error=error, count=count, group=group, client_id=client_id).describe()

    async def op_delay(self, api, ms: int, count: int | None = 1, group: str | None = None,
                       client_id: str | None = None) -> str:
        """Hold the next COUNT requests of API for MS milliseconds before answering."""
        return self.faults.add(api, delay_ms=int(ms), count=count, group=group,
                               client_id=client_id).describe()

    async def op_drop(self, api, count: int | None = 1, group: str | None = None,
                      client_id: str | None = None) -> str:
        """Close the connection instead of answering the next COUNT requests of API."""
        return self.faults.add(api, drop=True, count=count, group=group, client_id=client_id).describe()

    async def op_fail_authentication(self, principal: str | None = None, client_id: str | None = None,
                                     count: int | None = 1) -> str:
        """Fail the next COUNT authentications of PRINCIPAL (e.g. User:alice) or CLIENT_ID as
        wrong credentials would (SASL_AUTHENTICATION_FAILED; a client certificate's connection
        is closed after its handshake)."""
        return self.faults.fail_authentication(principal, client_id, count).describe()

    async def op_revoke_acls(self, principal: str, resource_type: str | None = None, name: str | None = None,
                             operation: str | None = None) -> str:
        """Remove PRINCIPAL's ALLOW ACLs (those on RESOURCE_TYPE, e.g. group, and NAME, for
        OPERATION, e.g. READ, if given), as DeleteAcls would: its next request is checked
        without them."""
        authorizer = self.acls.authorizer
        if authorizer is None:
            raise FaultError("revoke-acls: the broker enforces no ACLs (authorizer.class.name is not set)")
        try:
            wanted = AclFilter(ResourceType[resource_type.upper()] if resource_type else ResourceType.ANY, name,
                               PatternType.ANY, principal, None,
                               Operation[operation.upper()] if operation else Operation.ANY, Permission.ALLOW)
        except KeyError as e:
            raise FaultError(f"revoke-acls: unknown {e}") from None
        revoked = sorted(acl for acl in authorizer.acls if wanted.matches(acl))
        await self.acls.remove_acls(revoked)
        log.warning("fault injection: revoked %d ACL(s) of %s", len(revoked), principal)
        return f"revoked {len(revoked)} ACL(s) of {principal}"

    async def op_rules(self) -> list[str]:
        """The fault rules still armed."""
        return [rule.describe() for rule in [*self.faults.rules, *self.faults.authentication]]

    async def op_clear(self) -> str:
        """Remove every request-fault rule, release held revocations, make every shard
        available again and (in a cluster) start every node and put every coordinator and
        leader back where it started."""
        cleared = self.faults.clear()
        restored = [r.shard.shard_id for r in self.runners if r.unavailable is not None]
        for shard in restored:
            self._set_unavailable(shard, None)
        released = []
        for runner in self.runners:
            released += sorted(runner.lasting_faults.held)
            runner.lasting_faults.held.clear()
        held = f"; revocations released: {released}" if released else ""
        if self.transactions.markers_held:
            self.transactions.hold_markers(False)
            held += "; transaction markers released"
        if not self.topology.single:
            held += "; " + await self.cluster.reset()
        return f"cleared {cleared} rule(s){held}; shards made available: {restored or 'none'}"

    # --- coordinator faults ------------------------------------------------------------------
    async def op_force_rebalance(self, group: str) -> str:
        """Start a rebalance of GROUP, as a membership change would (a consumer, share or
        streams group's group epoch is bumped)."""
        return await self._runner(group).intervene(interventions.force_rebalance, group)

    async def op_expire_member(self, group: str, member: str) -> str:
        """End MEMBER's session now, as a missed session timeout would (any group type)."""
        return await self._runner(group).intervene(interventions.expire_member, group, member)

    async def op_expire_locks(self, group: str) -> str:
        """Let every acquisition lock of share group GROUP run out now: its records go back to
        their partitions (archived at the delivery limit), as when the lock duration passes."""
        return f"share group {group}: {self.share.expire_locks(group)} lock(s) expired"

    async def op_hold_locks(self, group: str, hold: bool = True) -> str:
        """Keep share group GROUP's acquisition locks from running out (a stuck consumer's
        records stay locked) until released with hold=false; then the overdue ones expire."""
        self.share.hold_locks(group, hold)
        return f"share group {group}: locks {'held' if hold else 'released'}"

    async def op_fence_instance(self, group: str, instance: str) -> str:
        """Fence the static member with group.instance.id INSTANCE: a new incarnation takes
        it and the old member gets FENCED_INSTANCE_ID (either group type)."""
        return await self._runner(group).intervene(interventions.fence_instance, group, instance)

    async def op_fence_member(self, group: str, member: str) -> str:
        """Fence MEMBER as a missed rebalance timeout does: it is removed, its next heartbeat is
        answered FENCED_MEMBER_EPOCH and it rejoins (consumer and streams groups)."""
        runner = self._runner(group)
        fenced = await runner.intervene(interventions.fence_member, group, member)
        runner.lasting_faults.fenced[(group, member)] = fenced.epoch
        return fenced.outcome

    async def op_hold_revocations(self, group: str) -> str:
        """Hold GROUP's revocations: a member that must give up partitions stays revoking
        whatever it reports, so their new owners wait and its rebalance timeout can fence it
        (consumer and streams groups; undone by release-revocations or clear)."""
        return await self._hold_revocations(group, True)

    async def op_release_revocations(self, group: str) -> str:
        """Let GROUP's members complete their revocations again (undoes hold-revocations)."""
        return await self._hold_revocations(group, False)

    async def _hold_revocations(self, group: str, hold: bool) -> str:
        runner = self._runner(group)
        outcome = await runner.intervene(interventions.hold_revocations, group, hold)
        (runner.lasting_faults.held.add if hold else runner.lasting_faults.held.discard)(group)
        return outcome

    async def op_shard_unavailable(self, group: str | None = None, shard: int | None = None,
                                   error="COORDINATOR_LOAD_IN_PROGRESS") -> str:
        """Make the coordinator of GROUP (or SHARD) answer ERROR: COORDINATOR_LOAD_IN_PROGRESS
        (loading) or NOT_COORDINATOR (moved away) to every group request."""
        code = error_code(error)
        if code not in UNAVAILABLE:
            raise FaultError(f"a shard is unavailable with one of {[e.name for e in UNAVAILABLE]}")
        return self._set_unavailable(self._shard(group, shard), code)

    async def op_shard_available(self, group: str | None = None, shard: int | None = None) -> str:
        """Bring the coordinator of GROUP (or SHARD) back (members get fresh sessions)."""
        return self._set_unavailable(self._shard(group, shard), None)

    # --- cluster changes ------------------------------------------------------------------------
    async def op_move_coordinator(self, node: int, group: str | None = None, shard: int | None = None,
                                  transactional_id: str | None = None) -> str:
        """Move the coordinator of GROUP (or SHARD, or TRANSACTIONAL_ID) to NODE: the old node
        answers NOT_COORDINATOR, the new one COORDINATOR_LOAD_IN_PROGRESS until it has replayed
        the log, then serves it (a group with every member's session started afresh)."""
        if transactional_id is not None:
            if group is not None or shard is not None:
                raise FaultError("name a group, a shard or a transactional id, not several")
            partition = shard_for(transactional_id, self.txn_partitions)
            return self.cluster.move_coordinator(partition, int(node), TXN_TOPIC)
        return self.cluster.move_coordinator(self._shard(group, shard), int(node))

    async def op_move_leader(self, topic: str, partition: int, node: int) -> str:
        """Make NODE the leader of TOPIC-PARTITION (its leader epoch is bumped): Produce and
        Fetch elsewhere get NOT_LEADER_OR_FOLLOWER with the new leader."""
        return self.cluster.move_leader(topic, int(partition), int(node))

    async def op_stop_node(self, node: int) -> str:
        """Stop NODE: its listeners close, its connections drop, and its coordinators and
        leaderships move to the next running replicas."""
        return self.cluster.stop_node(int(node))

    async def op_start_node(self, node: int) -> str:
        """Start NODE again on its port (what it led stays where it moved)."""
        return await self.cluster.start_node(int(node))

    # --- transaction faults -------------------------------------------------------------------
    async def op_abort_transaction(self, transactional_id: str) -> str:
        """Abort TRANSACTIONAL_ID's open transaction as its timeout would: the producer's epoch
        is bumped, so it is fenced (PRODUCER_FENCED / INVALID_PRODUCER_EPOCH) at its next request."""
        return await self.transactions.abort(transactional_id)

    async def op_fence_transactional_id(self, transactional_id: str) -> str:
        """Fence TRANSACTIONAL_ID's producer as a new incarnation's InitProducerId does: the
        epoch is bumped (an open transaction is aborted) and the old producer gets PRODUCER_FENCED."""
        return await self.transactions.fence(transactional_id)

    async def op_exhaust_epoch(self, transactional_id: str) -> str:
        """Exhaust TRANSACTIONAL_ID's producer epoch (transaction version 2): its next EndTxn v5
        answers epoch 32766, and the one after a new producer id at epoch 0."""
        done = await self.transactions.exhaust_epoch(transactional_id)
        log.warning("fault injection: %s", done)
        return done

    async def op_hold_markers(self, on: bool = True) -> str:
        """Hold (or release) the markers of ending transactions: EndTxn is answered, the
        transaction stays PrepareCommit/PrepareAbort and its id answers CONCURRENT_TRANSACTIONS."""
        self.transactions.hold_markers(bool(on))
        log.warning("fault injection: transaction markers %s", "held" if on else "released")
        return f"transaction markers {'held' if on else 'released'}"

    # --- recording ---------------------------------------------------------------------------
    async def op_record(self, on: bool = True) -> str:
        """Start (or stop) recording the requests the broker answers."""
        self.faults.recording = bool(on)
        log.warning("fault injection: request recording %s", "on" if on else "off")
        return f"recording {'on' if on else 'off'}"

    async def op_recorded(self, clear: bool = False) -> list[dict]:
        """The recorded requests, oldest first (CLEAR: forget them after reading)."""
        recorded = [dataclasses.asdict(r) for r in self.faults.recorded]
        if clear:
            self.faults.recorded.clear()
        return recorded

    # --- helpers -----------------------------------------------------------------------------
    def _shard(self, group: str | None, shard: int | None) -> int:
        if (group is None) == (shard is None):
            raise FaultError("name exactly one of a group or a shard")
        n = len(self.runners)
        if group is not None:
            return shard_for(group, n)
        if not 0 <= int(shard) < n:
            raise FaultError(f"shard {shard} does not exist (0-{n - 1})")
        return int(shard)

    def _runner(self, group: str):
        return self.runners[self._shard(group, None)]

    def _set_unavailable(self, shard: int, error: ErrorCode | None) -> str:
        self.runners[shard].set_unavailable(error)
        state = "available" if error is None else f"unavailable ({error.name})"
        log.warning("fault injection: coordinator shard %d is %s", shard, state)
        return f"shard {shard} is {state}"


def operations() -> dict[str, str]:
    """Operation name -> its help: the first paragraph of its docstring, on one line."""
    return {name[3:].replace("_", "-"):
            " ".join((getattr(BrokerControl, name).__doc__ or "").split("\n\n")[0].split())
            for name in dir(BrokerControl) if name.startswith("op_")}


def parameters(op: str) -> inspect.Signature:
    """The parameters of an operation (without ``self``), for command lines and usage lines."""
    method = getattr(BrokerControl, f"op_{op.replace('-', '_')}", None)
    if method is None:
        raise FaultError(f"unknown operation {op!r}; known: {', '.join(operations())}")
    signature = inspect.signature(method)
    return signature.replace(parameters=list(signature.parameters.values())[1:])


class ControlProxy:
    """Calls :class:`BrokerControl` operations by attribute: ``proxy.expire_member(group, member)``.

    ``call(op, arguments)`` carries each call to a broker (another thread, another process).
    """

    def __init__(self, call):
        self._call = call

    def __getattr__(self, name: str):
        method = getattr(BrokerControl, f"op_{name}", None)
        if method is None:
            raise AttributeError(f"no fault-injection operation {name!r}")
        signature = inspect.signature(method)

        def operation(*args, **kwargs):
            arguments = signature.bind(None, *args, **kwargs).arguments
            arguments.pop("self")
            return self._call(name, arguments)

        operation.__doc__ = method.__doc__
        return operation
