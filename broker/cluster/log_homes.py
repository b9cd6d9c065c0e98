"""Where a coordinator's log lives (a ``__consumer_offsets`` shard's or a ``__transaction_state``
partition's): in the data dir on a single node, in its owner's folder (``<data-dir>/nodes/<id>/``)
in a cluster. Opening a log brings it home first, so a coordinator that moves takes its log
along, and a restart puts each log back where the cluster's initial placement has it."""

from __future__ import annotations

import logging
import os

from log_store.fs import RealFS
from offsets_log.log import ShardLog, locate, node_dir

from broker.cluster.topology import Topology

log = logging.getLogger("groupbroker.cluster")


def log_home(data_dir: str, topology: Topology, topic: str, partition: int) -> str:
    """The folder the log of ``topic``-``partition`` belongs in now."""
    folder = f"{topic}-{partition}"
    if topology.single:
        return os.path.join(data_dir, folder)
    return os.path.join(node_dir(data_dir, topology.leader(topic, partition)), folder)


def exists(data_dir: str, topic: str, partition: int) -> bool:
    """Whether the log has a folder anywhere in the data dir."""
    return locate(data_dir, f"{topic}-{partition}", RealFS()) is not None


def open_log(data_dir: str, topology: Topology, topic: str, partition: int, **kwargs) -> ShardLog:
    """Open (and recover) a log in its home, moving its folder there first if it lives
    elsewhere: one rename, with no fsync of the folders, because a crash that undoes it leaves
    the log whole where it was, and the next open finds it there (wherever it is)."""
    home = log_home(data_dir, topology, topic, partition)
    found = locate(data_dir, os.path.basename(home), RealFS())
    if found is not None and found != home:
        os.makedirs(os.path.dirname(home), exist_ok=True)
        os.replace(found, home)
        log.info("%s-%d: log moved from %s to %s", topic, partition, found, home)
    return ShardLog(home, **kwargs)
