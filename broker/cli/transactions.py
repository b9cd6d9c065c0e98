"""``groupbroker transactions``: kafka-transactions.sh's ``list`` and ``describe``, over the wire.

``groupbroker transactions --bootstrap-server H:P list [--duration-filter MS]`` and
``... describe --transactional-id ID`` print Kafka's tables (its columns, each padded to its
widest value and followed by a tab) and its error lines, so scripts written for Kafka's tool
run unchanged. A blocking socket client, like ``groupbroker groups``: no trio.
"""

from __future__ import annotations

import sys
import time

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import REQUESTS

from kafka_client.admin import Cluster, Connection, GroupsError, metadata, parse_address

LIST_HEADERS = ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
DESCRIBE_HEADERS = ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                    "TopicPartitions"]


def add_parser(commands) -> None:
    parser = commands.add_parser("transactions", help="list and describe transactions, with "
                                 "kafka-transactions.sh's options")
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    actions = parser.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="list transactions")
    listing.add_argument("--duration-filter", type=int, default=None,
                         help="only transactions running longer than this (ms); < 0: all")
    describe = actions.add_parser("describe", help="describe the state of an active transactional-id")
    describe.add_argument("--transactional-id", required=True)


def table(headers: list[str], rows: list[list[str]]) -> str:
    """Kafka's ToolsUtils.prettyPrintTable: columns padded to their widest cell, each + a tab."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    return "".join("".join(cell.ljust(w) + "\t" for cell, w in zip(row, widths)) + "\n"
                   for row in [headers, *rows])


def run(args) -> int:
    try:
        cluster = Cluster(Connection(*parse_address(args.bootstrap_server)))
    except GroupsError as e:
        sys.stderr.write(f"{e}\n")
        return 1
    try:
        if args.action == "list":
            return _list(cluster, args.duration_filter)
        return _describe(cluster, args.transactional_id)
    except GroupsError as e:
        sys.stderr.write(f"{e}\n")
        return 1
    finally:
        cluster.close()


def _fail(message: str, cause: str) -> int:
    """TransactionsCommand.printErrorAndExit: one line on stderr, exit 1."""
    sys.stderr.write(f"{message}: {cause}. Enable debug logging for additional detail.\n")
    return 1


def _list(cluster: Cluster, duration_filter: int | None) -> int:
    """Admin.listTransactions asks every broker of the cluster."""
    cls = REQUESTS[ApiKey.LIST_TRANSACTIONS].cls
    metadata(cluster, [])
    rows = []
    for node_id in sorted(cluster.brokers):
        def build(v):
            if v >= 1 and duration_filter is not None:
                return cls(state_filters=(), producer_id_filters=(), duration_filter=duration_filter)
            return cls(state_filters=(), producer_id_filters=())
        answer = cluster.node(node_id).call(ApiKey.LIST_TRANSACTIONS, build)
        if answer.error_code != ErrorCode.NONE:
            return _fail("Failed to list transactions", ErrorCode(answer.error_code).name)
        rows += [[s.transactional_id, str(node_id), str(s.producer_id), s.transaction_state]
                 for s in answer.transaction_states]
    sys.stdout.write(table(LIST_HEADERS, rows))
    return 0


def _describe(cluster: Cluster, transactional_id: str) -> int:
    find = REQUESTS[ApiKey.FIND_COORDINATOR].cls

    def locate(v):
        if v >= 4:
            return find(key_type=1, coordinator_keys=(transactional_id,))
        return find(key=transactional_id, key_type=1)
    answer = cluster.bootstrap.call(ApiKey.FIND_COORDINATOR, locate)
    entry = answer.coordinators[0] if cluster.bootstrap.version(ApiKey.FIND_COORDINATOR) >= 4 else answer
    failed = f"Failed to describe transaction state of transactional-id `{transactional_id}`"
    if entry.error_code != ErrorCode.NONE:
        return _fail(failed, ErrorCode(entry.error_code).name)
    describe = REQUESTS[ApiKey.DESCRIBE_TRANSACTIONS].cls
    state = cluster.connection(entry.host, entry.port).call(
        ApiKey.DESCRIBE_TRANSACTIONS, lambda v: describe(transactional_ids=(transactional_id,))
    ).transaction_states[0]
    if state.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
        return _fail(failed, f"DescribeTransactions request for transactionalId `{transactional_id}` "
                             "failed because the ID could not be found")
    if state.error_code != ErrorCode.NONE:
        return _fail(failed, ErrorCode(state.error_code).name)
    started = state.transaction_start_time_ms
    start, duration = ("None", "None") if started == -1 else \
        (str(started), str(int(time.time() * 1000) - started))
    partitions = ",".join(f"{t.topic}-{p}" for t in state.topics for p in t.partitions)
    sys.stdout.write(table(DESCRIBE_HEADERS, [[
        str(entry.node_id), transactional_id, str(state.producer_id), str(state.producer_epoch),
        state.transaction_state, str(state.transaction_timeout_ms), start, duration, partitions]]))
    return 0
