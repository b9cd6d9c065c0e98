"""Where a coordinator shard's log lives: in the data dir on a single node, in its owner's
folder (``<data-dir>/nodes/<id>/``) in a cluster. Opening a shard's log brings it home first,
so a coordinator that moves takes its log along, and a restart puts each log back where the
cluster's initial placement has it."""

from __future__ import annotations

import logging
import os

from offsets_log.fs import RealFS
from offsets_log.log import ShardLog, locate_shard, node_dir, shard_dir

from broker.cluster.topology import Topology

log = logging.getLogger("groupbroker.cluster")


def shard_home(data_dir: str, topology: Topology, shard: int) -> str:
    """The folder a shard's log belongs in now."""
    if topology.single:
        return shard_dir(data_dir, shard)
    return shard_dir(node_dir(data_dir, topology.coordinator(shard)), shard)


def open_shard_log(data_dir: str, topology: Topology, shard: int, **kwargs) -> ShardLog:
    """Open (and recover) a shard's log in its home, moving its folder there first if it lives
    elsewhere: one rename, with no fsync of the folders, because a crash that undoes it leaves
    the log whole where it was, and the next open finds it there (wherever it is)."""
    home = shard_home(data_dir, topology, shard)
    found = locate_shard(data_dir, shard, RealFS())
    if found is not None and found != home:
        os.makedirs(os.path.dirname(home), exist_ok=True)
        os.replace(found, home)
        log.info("shard %d: log moved from %s to %s", shard, found, home)
    return ShardLog(home, **kwargs)
