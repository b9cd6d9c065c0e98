"""INVALID_PRODUCER_EPOCH, then PRODUCER_FENCED: a zombie producer fenced by transaction version 2.

Kafka 4 clusters run transaction version 2 (KIP-890): every commit and abort bumps the producer's
epoch, and a producer adds partitions by producing to them. P1 (transactional.id=orders-1)
opens a transaction with one record, then stalls. P2 starts with the same transactional.id: its
InitProducerId finds P1's transaction open, so the coordinator aborts it at the next epoch (the
markers carry that epoch) and tells P2 to retry; the retry bumps the epoch again. When P1 wakes
up, its next record is refused INVALID_PRODUCER_EPOCH by the partition (the Java client's
InvalidProducerEpochException, "attempted to produce with an old epoch": abortable), and its
abort is refused PRODUCER_FENCED by the coordinator (ProducerFencedException: fatal).
"""

from recipe import NotReproduced, RawTransactions, client, make_topic, read_committed, result, run, unique

NAMES = {0: "NONE", 47: "INVALID_PRODUCER_EPOCH", 90: "PRODUCER_FENCED"}


def recipe(broker) -> None:
    topic, tid = unique("orders"), unique("orders-1")
    make_topic(broker.bootstrap, topic, partitions=1)
    p1 = RawTransactions(broker.bootstrap, tid, "P1")
    p1.init()
    first_epoch = p1.epoch
    if p1.send(topic, b"from the zombie") != 0:
        raise NotReproduced("P1 could not produce")
    client(f"P1 (producer {p1.producer_id}, epoch {first_epoch}) has a transaction open with one record "
           f"(Produce v12 added the partition), then stalls")
    p2 = RawTransactions(broker.bootstrap, tid, "P2")
    p2.init()
    client(f"P2 started with the same transactional.id: producer {p2.producer_id}, epoch {p2.epoch}")
    p2.send(topic, b"from the new incarnation")
    p2.end(commit=True)
    client(f"P2 committed; EndTxn v5 moved it to epoch {p2.epoch}")
    produced = p1.send(topic, b"the zombie wakes up")
    client(f"P1's next record (epoch {first_epoch}): {NAMES.get(produced, produced)}")
    aborted = p1.end(commit=False)
    client(f"P1's abort (epoch {first_epoch}): {NAMES.get(aborted, aborted)}")
    if (produced, aborted) != (47, 90):
        raise NotReproduced(f"P1 was answered {produced} then {aborted}")
    seen = read_committed(broker.bootstrap, topic, expect=1)
    client(f"a read_committed reader sees {seen}")
    for line in broker.log(rf"transactional id {tid}"):
        print(f"  broker| {line}", flush=True)
    result("INVALID_PRODUCER_EPOCH",
           f"P2's InitProducerId aborted P1's transaction at epoch {first_epoch + 1} and took epoch "
           f"{first_epoch + 2}; P1's record was refused INVALID_PRODUCER_EPOCH and its abort "
           f"PRODUCER_FENCED; readers see only {seen}",
           "under transaction version 2 the epoch moves at every transaction's end, and the partitions "
           "themselves refuse an older epoch: a zombie learns it is fenced from its first write "
           "(abortable in the Java client), then from the coordinator (fatal).",
           "on InvalidProducerEpochException abort the transaction; on ProducerFencedException close "
           "the producer and stop its work: its replacement owns the transactional.id now.")
    p1.close()
    p2.close()


if __name__ == "__main__":
    run(recipe, __doc__.splitlines()[0])
