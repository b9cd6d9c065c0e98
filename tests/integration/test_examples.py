"""The rebalance-error recipes in examples/ are tests too: each runs as a script against its own
groupbroker and must exit 0 having printed the error it reproduces, the generations (or member
epochs) involved and the broker's log line for the answer; online_upgrade.py, a migration
rather than an error, prints the group type before and after and what each member owned. A
recipe that cannot reproduce its failure must exit non-zero without a RESULT line (checked
against a broker where the failure cannot happen)."""

import re
import subprocess
import sys
import time

import pytest

from tests.support.processes import REPO, import_client

EXAMPLES = REPO / "examples"


def run_example(name: str, *args: str, timeout: float = 60.0):
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(EXAMPLES / name), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)
    return done, time.monotonic() - started


def reproduced(name: str, *args: str, limit: float = 15) -> str:
    """Run a recipe; it must exit 0 within about 10 s (15 s for a loaded machine; ``limit``
    for the longer ones); its stdout."""
    done, took = run_example(name, *args, timeout=max(60.0, 2 * limit))
    assert done.returncode == 0, f"{name} exited {done.returncode}:\n{done.stdout}\n{done.stderr[-3000:]}"
    assert took < limit, f"{name} took {took:.1f}s"
    assert "NOT REPRODUCED" not in done.stdout
    return done.stdout


def found(pattern: str, text: str) -> re.Match:
    match = re.search(pattern, text, re.MULTILINE)
    assert match, f"no line matching {pattern!r} in:\n{text}"
    return match


def test_illegal_generation():
    out = reproduced("illegal_generation.py")
    gens = found(r"^RESULT: ILLEGAL_GENERATION reproduced: A committed with generation (\d+); "
                 r"the group is in generation (\d+)$", out)
    old, new = int(gens.group(1)), int(gens.group(2))
    assert new == old + 1
    found(r"committed with generation %d: CommitFailedError\(IllegalGenerationError\(\)\)" % old, out)
    found(r"broker\| group \S+: OffsetCommit v\d+ from member worker-a-\S+ \(generation %d\) "
          r"answered ILLEGAL_GENERATION$" % old, out)


def test_rebalance_in_progress():
    out = reproduced("rebalance_in_progress.py")
    gens = found(r"^RESULT: REBALANCE_IN_PROGRESS reproduced: A's heartbeat in generation (\d+) was "
                 r"refused; A rejoined and the group is in generation (\d+)$", out)
    old, new = int(gens.group(1)), int(gens.group(2))
    assert new > old
    found(r"broker\| group \S+: Heartbeat v\d+ from member A-\S+ \(generation %d\) "
          r"answered REBALANCE_IN_PROGRESS$" % old, out)
    found(r"A rejoined \(same member id: True\) and is in generation %d .*B is in generation %d$"
          % (new, new), out)


def test_unknown_member_id():
    out = reproduced("unknown_member_id.py")
    gens = found(r"^RESULT: UNKNOWN_MEMBER_ID reproduced: A's member id from generation (\d+) was "
                 r"unknown after its session expired; B alone formed generation (\d+); A came back "
                 r"as a new member in generation (\d+)$", out)
    first, alone, back = (int(g) for g in gens.groups())
    assert first < alone < back
    member = found(r"A \(member (\S+)\) and B share generation %d" % first, out).group(1)
    found(r"HeartbeatResponse\(.*error_code=25\)", out)
    found(r"broker\| group \S+: removed member %s \(session timeout expired\)$" % re.escape(member), out)
    found(r"broker\| group \S+: \w+ v\d+ from member %s \(generation %d\) answered UNKNOWN_MEMBER_ID$"
          % (re.escape(member), first), out)


def test_fenced_instance_id():
    import_client("confluent_kafka")
    out = reproduced("fenced_instance_id.py")
    gens = found(r"^RESULT: FENCED_INSTANCE_ID reproduced: C1 held worker-1 in generation (\d+); "
                 r"C2 took it over in generation (\d+) \(no rebalance\)", out)
    assert gens.group(1) == gens.group(2)
    found(r"C1.poll\(\) returned KafkaError\{code=_FATAL,.*Static consumer fenced", out)
    found(r"broker\| group \S+: Heartbeat v\d+ from member worker-1-\S+ \(generation %s\) "
          r"answered FENCED_INSTANCE_ID$" % gens.group(1), out)


def test_producer_fenced():
    import_client("confluent_kafka")
    out = reproduced("producer_fenced.py")
    found(r"^RESULT: PRODUCER_FENCED reproduced: .* readers see only \[b'from the new incarnation'\]$", out)
    found(r"P1.commit_transaction\(\) raised _FENCED \(fatal=True\)", out)
    found(r"broker\| transactional id \S+: InitProducerId fences producer \d+ at epoch 1; its open "
          r"transaction is aborted", out)


def test_producer_fenced_in_transaction_version_2():
    out = reproduced("producer_fenced_v2.py")
    found(r"^RESULT: INVALID_PRODUCER_EPOCH reproduced: P2's InitProducerId aborted P1's transaction at epoch 1 "
          r"and took epoch 2; .* readers see only \[b'from the new incarnation'\]$", out)
    found(r"P1's next record \(epoch 0\): INVALID_PRODUCER_EPOCH$", out)
    found(r"P1's abort \(epoch 0\): PRODUCER_FENCED$", out)
    found(r"broker\| transactional id \S+: InitProducerId fences producer \d+ at epoch 1", out)


def test_epoch_exhausted():
    out = reproduced("epoch_exhausted.py")
    rotated = found(r"^RESULT: EPOCH_EXHAUSTED reproduced: producer (\d+) reached epoch 32766; its next commit "
                    r"answered producer (\d+) at epoch 0", out)
    assert rotated.group(1) != rotated.group(2)
    found(r"EndTxn v5 answered producer %s, epoch 1$" % rotated.group(2), out)
    found(r"broker\| transactional id \S+: producer %s's epochs are exhausted; its transaction ends at epoch 32767 "
          r"and producer id %s takes over at epoch 0" % (rotated.group(1), rotated.group(2)), out)


def test_member_id_required():
    out = reproduced("member_id_required.py")
    found(r"Received JoinGroup response: .*error_code=79", out)
    found(r"broker\| group kip394-client-\S+: JoinGroup v\d+ from a new member "
          r"answered MEMBER_ID_REQUIRED$", out)
    member = found(r"JoinGroup\(member_id=''\) -> error 79 \(MEMBER_ID_REQUIRED\), generation -1, "
                   r"member_id '(raw-\S+)'$", out).group(1)
    found(r"JoinGroup\(member_id='%s'\) -> error 0 \(NONE\), generation 1, leader '%s'$"
          % (member, member), out)
    found(r"^RESULT: MEMBER_ID_REQUIRED reproduced: the first JoinGroup got generation -1 and a "
          r"member id; the retry with that id joined generation 1$", out)


def test_inconsistent_group_protocol():
    out = reproduced("inconsistent_group_protocol.py")
    gen = found(r"^RESULT: INCONSISTENT_GROUP_PROTOCOL reproduced: B's JoinGroup was refused; the "
                r"group stays in generation (\d+) with A alone$", out).group(1)
    found(r"A \(assignors: range\) is in generation %s " % gen, out)
    found(r"poll\(\) raised InconsistentGroupProtocolError", out)
    found(r"broker\| group \S+: JoinGroup v\d+ from a new member "
          r"answered INCONSISTENT_GROUP_PROTOCOL$", out)


# --- KIP-848 consumer groups ------------------------------------------------------------------

def test_fenced_member_epoch():
    out = reproduced("fenced_member_epoch.py")
    gens = found(r"^RESULT: FENCED_MEMBER_EPOCH reproduced: A's heartbeat with epoch (\d+) at epoch (\d+) "
                 r"\(ahead\) and its delayed one with epoch (\d+) at epoch (\d+) claiming a revoked "
                 r"partition were fenced; A2 missed its 1000 ms rebalance timeout and was removed "
                 r"\(UNKNOWN_MEMBER_ID\)$", out)
    ahead, at, stale, later = (int(g) for g in gens.groups())
    assert (ahead, at) == (3, 2) and (stale, later) == (2, 3)    # a group starts at epoch 1 (Kafka 4.3)
    # Kafka's messages (GroupMetadataManager.throwIfConsumerGroupMemberEpochIsInvalid)
    found(r"A: ConsumerGroupHeartbeat\(epoch=3, owned=\[0, 1\]\) -> error 110 \(FENCED_MEMBER_EPOCH\): "
          r"'The consumer group member has a greater member epoch \(3\) than the one known by the "
          r"group coordinator \(2\)\. The member must abandon all its partitions and rejoin\.'$", out)
    found(r"A: ConsumerGroupHeartbeat\(epoch=2, owned=\[0, 1\]\) -> error 110 \(FENCED_MEMBER_EPOCH\): "
          r"'The consumer group member has a smaller member epoch \(2\) than the one known by the "
          r"group coordinator \(3\)\.", out)
    # the previous epoch with a subset of the assignment is taken: once when A revokes, once in 1c
    forgiven = re.findall(r"A: ConsumerGroupHeartbeat\(epoch=2, owned=\[0\]\) -> OK, epoch 3, "
                          r"assignment unchanged$", out, re.MULTILINE)
    assert len(forgiven) == 2, out
    # the missed rebalance timeout removes the member: UNKNOWN_MEMBER_ID, as in Kafka
    member = found(r"A2, \d+\.\d s after it was asked to revoke: ConsumerGroupHeartbeat\(epoch=2, "
                   r"owned=\[0, 1\]\) -> error 25 \(UNKNOWN_MEMBER_ID\): 'Member (A2-\w+) is not a member "
                   r"of group kip848-timeout-\w+\.'$", out).group(1)
    found(r"broker\| group kip848-timeout-\w+: member %s fenced: it did not revoke its partitions "
          r"within its rebalance timeout$" % member, out)
    found(r"B2: ConsumerGroupHeartbeat\(epoch=2, owned=\[\]\) -> OK, epoch 4, assignment \[0, 1\]$", out)


def test_stale_member_epoch():
    out = reproduced("stale_member_epoch.py")
    gens = found(r"^RESULT: STALE_MEMBER_EPOCH reproduced: A committed partition 1, which it had given up, "
                 r"with member epoch (\d+); A was at epoch (\d+)$", out)
    old, new = int(gens.group(1)), int(gens.group(2))
    assert (old, new) == (2, 3)
    found(r"A: OffsetCommit v9\(member_epoch=%d, \{0: 10, 1: 10\}\) -> p0: NONE, p1: NONE$" % old, out)
    # KIP-1251: the older epoch still commits the partition A has held since then
    found(r"A: OffsetCommit v9\(member_epoch=%d, \{0: 20\}\) -> p0: NONE$" % old, out)
    found(r"A: OffsetCommit v9\(member_epoch=%d, \{1: 20\}\) -> p1: STALE_MEMBER_EPOCH$" % old, out)
    found(r"A: OffsetCommit v9\(member_epoch=%d, \{0: 30\}\) -> p0: NONE$" % new, out)
    found(r"broker\| group kip848-commit-\w+: OffsetCommit v9 from member A-\w+ \(generation %d\) "
          r"answered STALE_MEMBER_EPOCH$" % old, out)


def test_unreleased_instance_id():
    import_client("confluent_kafka")
    out = reproduced("unreleased_instance_id.py")
    found(r"^RESULT: UNRELEASED_INSTANCE_ID reproduced: C1 held worker-1 with partitions \[0, 1\]; "
          r"C2's join with the same instance id was refused and C2 is dead \(fatal error\); "
          r"C1 kept \[0, 1\]$", out)
    found(r"C2.poll\(\) returned KafkaError\{code=_FATAL,.*The instance ID is still used by another "
          r"member in the consumer group", out)
    first = found(r"C1 \(group.instance.id=worker-1, member (\S+)\) holds", out).group(1)
    found(r"broker\| group static848-\w+: static member \S+ cannot join: instance worker-1 is held "
          r"by member %s$" % re.escape(first), out)
    third = found(r"C3 \(member (\S+)\) holds \[0, 1\]$", out).group(1)
    found(r"broker\| group static848-\w+: static member \(instance worker-1\) rejoins as %s, "
          r"replacing %s$" % (re.escape(third), re.escape(first)), out)


def test_online_upgrade():
    import_client("confluent_kafka")
    out = reproduced("online_upgrade.py", limit=45)
    found(r"^RESULT: online upgrade reproduced: group type classic -> consumer when C1 joined; after "
          r"the rolling upgrade consumer with members \['C1', 'C2', 'C3'\]; 1200 records consumed "
          r"\(\d+ twice\), no partition ever owned by two members$", out)
    found(r"1\. two kafka-python members: ListGroups v5 says type 'classic', state Stable; owners by "
          r"their callbacks: K\d \(classic\) \[\d, \d, \d\], K\d \(classic\) \[\d, \d, \d\]; "
          r"300/300 records consumed$", out)
    owners = found(r"2\. confluent-kafka C1 \(group.protocol=consumer\) joined: ListGroups v5 says type "
                   r"'consumer', state Stable; owners by their callbacks: (.*); 600/600 records consumed$",
                   out).group(1)
    assert sorted(re.findall(r"(K1|K2|C1) \((classic|consumer)\) \[\d, \d\]", owners)) == \
        [("C1", "consumer"), ("K1", "classic"), ("K2", "classic")], owners
    found(r"K2 closed, C3 joined: ListGroups v5 says type 'consumer', .*: "
          r"(C\d \(consumer\) \[\d, \d\](, )?){3}; 1200/1200 records consumed$", out)
    found(r"broker\| group upgrade-\w+: the classic group \(generation \d+, 2 members\) becomes a "
          r"consumer group$", out)


def test_coordinator_failover():
    out = reproduced("coordinator_failover.py", limit=25)
    m = found(r"^RESULT: NOT_COORDINATOR reproduced: B's parked JoinGroup in generation (\d+)'s rebalance was "
              r"answered NOT_COORDINATOR; the group completed the rebalance on node (\d) in generation (\d+) "
              r"with its committed offsets$", out)
    old, node, new = int(m.group(1)), m.group(2), int(m.group(3))
    assert new == old + 1
    found(r"B: kafka.coordinator WARNING: Marking the coordinator dead .*NotCoordinatorError", out)
    found(r"B: kafka.coordinator INFO: Discovered coordinator coordinator-%s " % node, out)
    found(r"A and B are Stable in generation %d .* on node %s .*committed offset of partition 0 back: 7$"
          % (new, node), out)
    found(r"broker\| group \S+: JoinGroup v\d+ from member B-\S+ answered NOT_COORDINATOR$", out)
    found(r"broker\| shard \d+: loaded after a coordinator move in [\d.]+ ms \(.*/nodes/%s/__consumer_offsets-\d+\)$" % node, out)


def test_leader_change():
    out = reproduced("leader_change.py", limit=25)
    m = found(r"^RESULT: (FENCED_LEADER_EPOCH|NOT_LEADER_OR_FOLLOWER) reproduced: a Fetch to node (\d) after the "
              r"move was refused; the consumer found node (\d), checked its position there and read offsets "
              r"0-39 exactly once$", out)
    old, new = m.group(2), m.group(3)
    assert old != new
    found(r"broker\| OffsetForLeaderEpoch to node %s answered NONE$" % new, out)
    found(r"broker\| Fetch to node %s answered NONE$" % new, out)
    found(r"client\| kafka.consumer.fetcher DEBUG: Validating offsets", out)


def test_lost_read_acl():
    out = reproduced("lost_read_acl.py")
    group = found(r"^RESULT: GROUP_AUTHORIZATION_FAILED reproduced: User:worker lost READ on group (\S+) mid-run "
                  r"and its next group request was refused$", out).group(1)
    found(r"client\| worker's next group request failed: GroupAuthorizationFailedError\('%s'\)" % group, out)
    found(r"broker\| Principal = User:worker is Denied operation = READ from host = 127.0.0.1 on resource = "
          r"Group:LITERAL:%s for request = \w+ with resourceRefCount = 1 based on rule DefaultDeny$" % group, out)


def test_acl_recipe_needs_its_own_broker(broker):
    done, _ = run_example("lost_read_acl.py", "--bootstrap-server", broker.bootstrap)
    assert done.returncode == 1 and "RESULT:" not in done.stdout


def test_cluster_recipe_needs_its_own_cluster(broker):
    done, _ = run_example("leader_change.py", "--bootstrap-server", broker.bootstrap)
    assert done.returncode == 1 and "RESULT:" not in done.stdout
    found(r"^NOT REPRODUCED: this recipe moves a cluster's nodes: run it without --bootstrap-server$", done.stdout)


def test_recipe_against_an_existing_broker(broker):
    """--bootstrap-server: no broker of its own (so no broker log), the error seen by the client."""
    out = reproduced("member_id_required.py", "--bootstrap-server", broker.bootstrap)
    found(r"^broker: %s \(external\)$" % re.escape(broker.bootstrap), out)
    assert "broker|" not in out
    found(r"JoinGroup\(member_id=''\) -> error 79 \(MEMBER_ID_REQUIRED\)", out)


@pytest.fixture
def full_broker(start_broker):
    """A broker whose groups hold one member: a second member is refused GROUP_MAX_SIZE_REACHED,
    which Kafka checks before the protocols."""
    return start_broker({"group.initial.rebalance.delay.ms": 0, "group.max.size": 1})


def test_recipe_that_does_not_reproduce_exits_non_zero(full_broker):
    done, _ = run_example("inconsistent_group_protocol.py", "--bootstrap-server", full_broker.bootstrap)
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    assert "RESULT:" not in done.stdout
    found(r"^NOT REPRODUCED: B's poll\(\) raised GroupMaxSizeReachedError", done.stdout)


# --- share groups (KIP-932), with confluent-kafka's ShareConsumer ---------------------------------------

def test_share_poison_message():
    out = reproduced("share_poison_message.py", limit=20)
    found(r"^RESULT: POISON MESSAGE ARCHIVED reproduced: r2 was delivered 3 times \(delivery counts 1, 2, 3\) "
          r"and then never again; the other 4 records were accepted$", out)


def test_share_crashed_consumer():
    out = reproduced("share_crashed_consumer.py", limit=20)
    after = found(r"^RESULT: REDELIVERY AFTER LOCK EXPIRY reproduced: B got A's (\d+) records with delivery "
                  r"count 2, ([\d.]+) s after A took them \(lock duration 2 s\)$", out)
    assert int(after.group(1)) > 0 and float(after.group(2)) >= 1.9


def test_share_two_consumers():
    out = reproduced("share_two_consumers.py", limit=20)
    shares = found(r"^RESULT: ONE PARTITION, TWO CONSUMERS reproduced: A received (\d+) and B (\d+) of "
                   r"partition 0's 200 records, none twice$", out)
    assert int(shares.group(1)) > 0 and int(shares.group(2)) > 0


# --- streams groups (KIP-1071), Kafka Streams instances played over raw heartbeats -----------------

def test_streams_rebalance_timeout():
    out = reproduced("streams_rebalance_timeout.py", limit=20)
    found(r"^RESULT: A STALLED STREAMS INSTANCE REMOVED reproduced: A held 4 tasks, was asked to give 2 to B, and kept "
          r"them past its 1000 ms rebalance timeout: removed from the group \(UNKNOWN_MEMBER_ID\); B waited .* and "
          r"then took all four \(epoch \d+\)$", out)
    found(r"broker\| group wordcount-\w+: member A-\w+ fenced from the streams group \(it did not revoke its tasks "
          r"within its rebalance timeout of 1000 ms\)$", out)


def test_streams_scale_out():
    out = reproduced("streams_scale_out.py", limit=20)
    kept = found(r"^RESULT: TASKS SPREAD WITH STANDBYS reproduced: A kept (\d) of its 6 tasks .*; B and C took the "
                 r"other (\d); each counting task 1_x has its standby on another instance \(3 standbys\)$", out)
    assert int(kept.group(1)) == 2 and int(kept.group(2)) == 4
