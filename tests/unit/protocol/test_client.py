"""The client core without I/O: requests numbered, answers matched to them in order, templates
re-stamped for load generators, versions negotiated from an ApiVersions answer."""

import pytest

from protocol.api_keys import ApiKey
from protocol.client import ClientSession
from protocol.exceptions import ProtocolError
from protocol.header import decode_request, encode_response
from protocol.messages import REQUESTS, RESPONSES

Heartbeat, HeartbeatAnswer = REQUESTS[ApiKey.HEARTBEAT].cls, RESPONSES[ApiKey.HEARTBEAT].cls
ApiVersionsAnswer = RESPONSES[ApiKey.API_VERSIONS].cls


def heartbeat(member: str = "m"):
    return Heartbeat(group_id="g", generation_id=3, member_id=member)


def answered(session: ClientSession, *frames: bytes) -> list:
    """Feed the frames a byte at a time; every (correlation id, body) that comes out."""
    got = []
    for byte in b"".join(frames):
        session.feed(bytes([byte]))
        while (answer := session.next_response()) is not None:
            got.append(answer)
    return got


def test_requests_are_numbered_and_answers_decoded_against_them_in_order():
    session = ClientSession("tester")
    first, data = session.request(ApiKey.HEARTBEAT, 4, heartbeat("a"))
    second, _ = session.request(ApiKey.HEARTBEAT, 0, heartbeat("b"))
    assert (first, second) == (1, 2) and session.in_flight == 2
    sent = decode_request(data[4:])
    assert (sent.header.api_key, sent.header.correlation_id, sent.header.client_id) == (12, 1, "tester")
    assert session.awaited == (1, ApiKey.HEARTBEAT, 4)
    got = answered(session, encode_response(ApiKey.HEARTBEAT, 4, 1, HeartbeatAnswer(error_code=27)),
                   encode_response(ApiKey.HEARTBEAT, 0, 2, HeartbeatAnswer(error_code=0)))
    assert [(c, r.error_code) for c, r in got] == [(1, 27), (2, 0)]
    assert session.in_flight == 0 and session.awaited is None


def test_an_answer_to_another_request_is_refused():
    session = ClientSession()
    session.request(ApiKey.HEARTBEAT, 4, heartbeat())
    session.feed(encode_response(ApiKey.HEARTBEAT, 4, 99, HeartbeatAnswer(error_code=0)))
    with pytest.raises(ProtocolError, match="correlation id 99, expected 1"):
        session.next_response()


def test_a_template_goes_out_again_with_fresh_correlation_ids():
    session = ClientSession("lg")
    template = session.template(ApiKey.HEARTBEAT, 4, heartbeat())
    stamped = [session.stamp(template) for _ in range(3)]
    assert [c for c, _ in stamped] == [1, 2, 3] and session.in_flight == 3
    for correlation, data in stamped:
        request = decode_request(data[4:])
        assert (request.header.correlation_id, request.body) == (correlation, heartbeat())
        assert len(data) == len(template)
    assert session.awaited == (1, ApiKey.HEARTBEAT, 4)
    got = answered(session, *(encode_response(ApiKey.HEARTBEAT, 4, c, HeartbeatAnswer(error_code=0))
                              for c, _ in stamped))
    assert [c for c, _ in got] == [1, 2, 3]


def test_negotiation_takes_the_highest_version_both_sides_speak():
    entry = ApiVersionsAnswer.ApiVersion
    session = ClientSession()
    session.negotiated(ApiVersionsAnswer(error_code=0, api_keys=(
        entry(api_key=ApiKey.HEARTBEAT, min_version=0, max_version=99),        # we stop earlier
        entry(api_key=ApiKey.JOIN_GROUP, min_version=0, max_version=2),        # the broker does
        entry(api_key=ApiKey.FETCH, min_version=99, max_version=120),          # no overlap
        entry(api_key=ApiKey.DESCRIBE_QUORUM, min_version=0, max_version=1))))   # we lack it
    assert session.versions == {ApiKey.HEARTBEAT: REQUESTS[ApiKey.HEARTBEAT].max_version,
                                ApiKey.JOIN_GROUP: 2}
    with pytest.raises(ProtocolError, match="UNSUPPORTED_VERSION"):
        session.negotiated(ApiVersionsAnswer(error_code=35, api_keys=()))
