"""A producer epoch exhausted mid-run: transaction version 2 hands over a new producer id.

Under transaction version 2 (KIP-890) every commit and abort bumps the producer's epoch, a
16-bit number: a long-lived transactional.id runs out of epochs after 32,766 transactions. The
coordinator then gives the producer a new producer id at epoch 0 in the EndTxn answer, and the
producer goes on with it, nothing lost. The ``exhaust-epoch`` fault (groupbroker's, not Kafka's)
jumps the epoch to the last one at the next end, so the hand-over happens in seconds.
"""

from recipe import NotReproduced, RawTransactions, client, make_topic, read_committed, result, run, unique


def recipe(broker) -> None:
    topic, tid = unique("ledger"), unique("ledger-writer")
    make_topic(broker.bootstrap, topic, partitions=1)
    p = RawTransactions(broker.bootstrap, tid, "writer")
    p.init()
    steps = [(p.producer_id, p.epoch)]
    client(f"writer: producer {p.producer_id}, epoch {p.epoch}")
    for n in range(4):
        if n == 1:
            client(broker.faults.exhaust_epoch(transactional_id=tid))
        if p.send(topic, b"transaction %d" % n) != 0:
            raise NotReproduced(f"transaction {n}'s record was refused")
        before = (p.producer_id, p.epoch)
        if p.end(commit=True) != 0:
            raise NotReproduced(f"transaction {n}'s commit failed")
        steps.append((p.producer_id, p.epoch))
        client(f"transaction {n} committed at producer {before[0]} epoch {before[1]}: EndTxn v5 answered "
               f"producer {p.producer_id}, epoch {p.epoch}")
    rotated = [s for s in steps if s[0] != steps[0][0]]
    if not rotated or rotated[0][1] != 0:
        raise NotReproduced(f"no new producer id was handed over: {steps}")
    seen = read_committed(broker.bootstrap, topic, expect=4)
    client(f"a read_committed reader sees {seen}")
    if len(seen) != 4:
        raise NotReproduced(f"read_committed saw {seen}")
    for line in broker.log(rf"transactional id {tid}"):
        print(f"  broker| {line}", flush=True)
    result("EPOCH_EXHAUSTED",
           f"producer {steps[0][0]} reached epoch 32766; its next commit answered producer "
           f"{rotated[0][0]} at epoch 0, and the writer went on: all 4 transactions are committed",
           "transaction version 2 bumps the epoch at every end; the last epoch's end writes its markers "
           "at 32767 under the old producer id, then the coordinator completes it under a new one.",
           "nothing to do with a Kafka 4 client: it takes the new producer id from the EndTxn answer "
           "(a client that ignores it must call initTransactions() again).")
    p.close()


if __name__ == "__main__":
    run(recipe, __doc__.splitlines()[0], faults=True)
