"""``__consumer_offsets`` records: round trips and bytes checked against hand-computed layouts."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsets_log.errors import RecordError
from offsets_log.records import (GroupMetadata, GroupMetadataTombstone, GroupMetadataValue,
                                 MemberMetadata, OffsetCommit, OffsetCommitTombstone,
                                 decode, decode_record, group_metadata_key, group_metadata_record,
                                 offset_commit_key, offset_commit_record, tombstone)
from protocol.messages import DATA
from protocol.messages.offsets_records import RECORDS
from protocol.exceptions import DecodeError
from protocol.payloads import decode_payload, encode_payload


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", "").replace("|", ""))


def test_offset_commit_key_matches_reference_example():
    # Kafka's OffsetCommitKey v1 bytes for group "g", topic "t", partition 0.
    assert offset_commit_key("g", "t", 0) == h("0001 | 0001 67 | 0001 74 | 00000000")


def test_group_metadata_key_bytes():
    assert group_metadata_key("grp") == h("0002 | 0003 677270")


def test_offset_commit_value_v3_bytes():
    r = offset_commit_record("g", "t", 0, offset=100, leader_epoch=5, metadata="m", commit_ts=1000)
    assert r.value == h("0003 | 0000000000000064 | 00000005 | 0001 6d | 00000000000003e8")


def test_offset_commit_value_v1_when_expiry_given():
    r = offset_commit_record("g", "t", 0, 100, 5, "m", 1000, expire_ts=2000)
    # v1 has no leader epoch; it carries the expiry after the commit timestamp.
    assert r.value == h("0001 | 0000000000000064 | 0001 6d | 00000000000003e8 | 00000000000007d0")
    assert decode(r) == OffsetCommit("g", "t", 0, 100, -1, "m", 1000, 2000, None, 1)


I64 = st.integers(-2**63, 2**63 - 1)


@given(offset=I64, leader_epoch=st.integers(-2**31, 2**31 - 1), metadata=st.none() | st.text(max_size=40),
       commit_ts=I64, expire_ts=st.none() | I64)
def test_offset_commit_values_are_the_schema_codecs_bytes(offset, leader_epoch, metadata, commit_ts,
                                                          expire_ts):
    """The value packed directly is exactly what the schema's codec writes, v3 and v1."""
    version = 3 if expire_ts is None else 1
    message = RECORDS.offset_commit_value.cls(
        offset=offset, leader_epoch=leader_epoch, metadata=metadata or "", commit_timestamp=commit_ts,
        expire_timestamp=-1 if expire_ts is None else expire_ts)
    expected = encode_payload(RECORDS.offset_commit_value, version, message)
    assert offset_commit_record("g", "t", 0, offset, leader_epoch, metadata, commit_ts,
                                expire_ts).value == expected


def _through_the_codec(value: bytes):
    """What the schema's codec makes of an OffsetCommitValue: (fields) or "error"."""
    try:
        version, v = decode_payload(RECORDS.offset_commit_value, value)
    except DecodeError:
        return "error"
    return (v.offset, v.leader_epoch if version >= 3 else -1, v.metadata, v.commit_timestamp,
            None if v.expire_timestamp == -1 else v.expire_timestamp, version)


def _as_read(value: bytes):
    try:
        c = decode_record(offset_commit_key("g", "t", 0), value)
    except RecordError:
        return "error"
    return c.offset, c.leader_epoch, c.metadata, c.commit_ts, c.expire_ts, c.value_version


def _valued(version: int, offset, leader_epoch, metadata, commit_ts, expire_ts) -> bytes:
    return encode_payload(RECORDS.offset_commit_value, version, RECORDS.offset_commit_value.cls(
        offset=offset, leader_epoch=leader_epoch, metadata=metadata, commit_timestamp=commit_ts,
        expire_timestamp=expire_ts))


@given(version=st.integers(0, 3), offset=I64, leader_epoch=st.integers(-2**31, 2**31 - 1),
       metadata=st.text(max_size=20), commit_ts=I64, expire_ts=I64,
       cut=st.integers(-40, 0), extra=st.binary(max_size=6), noise=st.binary(max_size=40))
def test_offset_commit_values_read_directly_agree_with_the_schema_codec(
        version, offset, leader_epoch, metadata, commit_ts, expire_ts, cut, extra, noise):
    """Versions 0-3 are read without the codec: on well-formed values, truncated or padded
    ones, and arbitrary bytes, the reading and the codec agree, error for error."""
    valid = _valued(version, offset, leader_epoch, metadata, commit_ts, expire_ts)
    for value in (valid, valid[:len(valid) + cut], valid + extra, version.to_bytes(2, "big") + noise):
        assert _as_read(value) == _through_the_codec(value)


def test_metadata_too_long_for_a_string_is_a_record_error_not_a_short_write():
    with pytest.raises(RecordError, match="32767"):
        offset_commit_record("g", "t", 0, 1, -1, "\u00e9" * 20_000, 5)


def test_offset_commit_value_v0_v2_bytes():
    v = RECORDS.offset_commit_value.cls(offset=1, metadata="", commit_timestamp=2,
                                        expire_timestamp=3, leader_epoch=4)
    body = h("0000000000000001 | 0000 | 0000000000000002")
    assert encode_payload(RECORDS.offset_commit_value, 0, v) == h("0000") + body
    assert encode_payload(RECORDS.offset_commit_value, 2, v) == h("0002") + body


def test_offset_commit_value_v4_topic_id_is_tag_0():
    topic_id = uuid.UUID("0123456789abcdef0123456789abcdef")
    msg = RECORDS.offset_commit_value
    v = msg.cls(offset=100, leader_epoch=5, metadata="m", commit_timestamp=1000, topic_id=topic_id)
    fixed = "0004 | 0000000000000064 | 00000005 | 02 6d | 00000000000003e8"
    assert encode_payload(msg, 4, v) == h(fixed + "| 01 | 00 10" + topic_id.hex)
    # The default (zero) id is not written: an empty tagged-field section.
    assert encode_payload(msg, 4, msg.cls(offset=100, leader_epoch=5, metadata="m",
                                          commit_timestamp=1000)) == h(fixed + "| 00")
    r = decode_record(offset_commit_key("g", "t", 1), encode_payload(msg, 4, v))
    assert r.topic_id == topic_id and r.value_version == 4 and r.offset == 100


MEMBER = MemberMetadata(member_id="m1", group_instance_id=None, client_id="c", client_host="/h",
                        rebalance_timeout=300_000, session_timeout=45_000,
                        subscription=b"\x00\x01", assignment=b"")


def test_group_metadata_value_v3_bytes():
    r = group_metadata_record("g", protocol_type="consumer", generation=1, protocol="range",
                              leader="m1", current_state_ts=1000, members=[MEMBER])
    assert r.value == h(
        "0003 | 0008 636f6e73756d6572 | 00000001 | 0005 72616e6765 | 0002 6d31"
        "| 00000000000003e8 | 00000001"
        "| 0002 6d31 | ffff | 0001 63 | 0002 2f68 | 000493e0 | 0000afc8 | 00000002 0001 | 00000000")


def test_empty_group_metadata_value_bytes():
    r = group_metadata_record("g", protocol_type="", generation=0, protocol=None, leader=None)
    assert r.value == h("0003 | 0000 | 00000000 | ffff | ffff | ffffffffffffffff | 00000000")


def test_group_metadata_value_older_versions_drop_later_fields():
    msg = RECORDS.group_metadata_value
    v = GroupMetadataValue(protocol_type="", generation=2, protocol=None, leader=None,
                           current_state_timestamp=7, members=(MEMBER,))
    member_v0 = "0002 6d31 | 0001 63 | 0002 2f68 | 0000afc8 | 00000002 0001 | 00000000"
    assert encode_payload(msg, 0, v) == h(
        "0000 | 0000 | 00000002 | ffff | ffff | 00000001 |" + member_v0)
    _, back = decode_payload(msg, encode_payload(msg, 2, v))
    assert back.current_state_timestamp == 7 and back.members[0].rebalance_timeout == 300_000


@pytest.mark.parametrize("version", range(5))
def test_group_metadata_value_round_trips_every_version(version):
    msg = RECORDS.group_metadata_value
    member = MemberMetadata(member_id="m", group_instance_id="i" if version >= 3 else None,
                            client_id="c", client_host="/1.2.3.4",
                            rebalance_timeout=9 if version >= 1 else 0, session_timeout=6000,
                            subscription=b"sub", assignment=b"asg")
    v = GroupMetadataValue(protocol_type="consumer", generation=3, protocol="range", leader="m",
                           current_state_timestamp=5 if version >= 2 else -1, members=(member,))
    data = encode_payload(msg, version, v)
    assert decode_payload(msg, data) == (version, v)
    assert decode_record(group_metadata_key("g"), data) == GroupMetadata("g", v, version)


def test_typed_round_trips_and_tombstones():
    r = offset_commit_record("grp", "topic", 7, 42, 3, "meta", 123)
    assert decode(r) == OffsetCommit("grp", "topic", 7, 42, 3, "meta", 123, None, None, 3)
    assert decode(tombstone(r.key)) == OffsetCommitTombstone("grp", "topic", 7)
    g = group_metadata_record("grp", protocol_type="consumer", generation=4, protocol="range",
                              leader="m1", current_state_ts=9, members=[MEMBER])
    typed = decode(g)
    assert typed.group == "grp" and typed.value.members == (MEMBER,)
    assert decode(tombstone(g.key)) == GroupMetadataTombstone("grp")


def test_null_metadata_is_written_as_empty_string():
    r = offset_commit_record("g", "t", 0, 1, -1, None, 5)
    assert decode(r).metadata == ""


def test_key_version_0_is_also_an_offset_commit():
    key = encode_payload(RECORDS.offset_commit_key, 0,
                         RECORDS.offset_commit_key.cls(group="g", topic="t", partition=2))
    assert decode_record(key, None) == OffsetCommitTombstone("g", "t", 2)


def test_future_value_version_is_read_as_v4_or_rejected():
    data = offset_commit_record("g", "t", 0, 1, 2, "m", 3).value
    newer = h("0009") + data[2:]        # unknown future version, same non-flexible prefix
    with pytest.raises(RecordError):
        # v4 is flexible, so a v3 body read as v4 is malformed: a typed error, never a crash
        decode_record(offset_commit_key("g", "t", 0), newer)


@pytest.mark.parametrize("key", [b"", b"\x00", b"\x00\x05abc", b"\x00\x01\x00\x05g"])
def test_bad_keys_raise_record_error(key):
    with pytest.raises(RecordError):
        decode_record(key, None)


def test_bad_value_raises_record_error():
    with pytest.raises(RecordError):
        decode_record(offset_commit_key("g", "t", 0), b"\x00\x03\x00")


def test_record_schemas_stay_out_of_the_group_api_registry():
    # protocol.messages registers module-level Messages; these are log records, not payloads.
    assert not {"OffsetCommitKey", "OffsetCommitValue", "GroupMetadataKey",
                "GroupMetadataValue"} & set(DATA)
