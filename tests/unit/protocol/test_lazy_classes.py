"""Message classes are made on first use (importing the declarations makes none), and exactly
once per struct even when threads ask for them together (shards load in worker threads)."""

import subprocess
import sys
import threading

from protocol.schema import CLASSES, F, Message


def test_importing_the_declarations_makes_no_class():
    code = ("from protocol.schema import CLASSES\nimport protocol, protocol.registry\n"
            "print(len(CLASSES))\n"
            "from protocol.messages import RESPONSES\n"
            "RESPONSES[8].cls\nprint(sorted(CLASSES))\n"
            "RESPONSES[8].cls.OffsetCommitResponseTopic.OffsetCommitResponsePartition\n"
            "print(sorted(CLASSES))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, first, nested = out.stdout.splitlines()
    assert before == "0"
    assert first == "['OffsetCommitResponse']"
    assert nested == str(sorted(["OffsetCommitResponse", "OffsetCommitResponse.OffsetCommitResponseTopic",
                                 "OffsetCommitResponse.OffsetCommitResponsePartition"]))


def declaration(name: str) -> Message:
    return Message(name, None, "data", "0-1", "1+", [
        F("items", "[]Item", fields=[F("id", "int32"), F("detail", "Detail", fields=[F("text", "string")])]),
        F("single", "Single", fields=[F("n", "int16")]),        # not nullable: defaults to Single()
        F("maybe", "Maybe", nullable="0+", fields=[F("m", "int8")]),
    ])


def test_nested_classes_are_made_when_read_and_defaults_still_hold_instances():
    msg = declaration("LazyA")
    cls = msg.cls
    assert sorted(k for k in CLASSES if k.startswith("LazyA")) == ["LazyA", "LazyA.Single"]
    assert cls().single == cls.Single() and cls().maybe is None and cls().items == ()
    item = cls.Item(id=1, detail=cls.Item.Detail(text="x"))
    assert cls.Item is msg.class_of("Item") and cls.Item.Detail is msg.class_of("Detail")
    assert msg.codec(1).decode(msg.codec(1).encode(cls(items=(item,)))) == cls(items=(item,))


def test_threads_asking_together_get_one_class_per_struct():
    msg = declaration("LazyB")
    start = threading.Barrier(16)
    seen = []

    def ask():
        start.wait()
        seen.append((msg.cls, msg.cls.Item, msg.cls.Item.Detail, msg.codec(0).message.class_of("Maybe")))

    threads = [threading.Thread(target=ask) for _ in range(16)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)                 # threads interleave within a class's making
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert len(seen) == 16 and len(set(seen)) == 1
    assert seen[0] == (CLASSES["LazyB"], CLASSES["LazyB.Item"], CLASSES["LazyB.Detail"], CLASSES["LazyB.Maybe"])
