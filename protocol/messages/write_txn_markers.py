"""WriteTxnMarkers (API key 27): a transaction coordinator, or Admin.abortTransaction
(``kafka-transactions abort``), asks a partition leader to write commit or abort markers.

Version 0 left with Kafka 4.0; version 2 (KIP-1228) says which transaction version the marker
belongs to, which decides how its producer epoch is checked.
"""

from ..schema import F, Message

REQUEST = Message("WriteTxnMarkersRequest", 27, "request", "1-2", "1+", [
    F("markers", "[]WritableTxnMarker", fields=[
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("transaction_result", "bool"),
        F("topics", "[]WritableTxnMarkerTopic", fields=[
            F("name", "string"),
            F("partition_indexes", "[]int32"),
        ]),
        F("coordinator_epoch", "int32"),
        F("transaction_version", "int8", "2+", ignorable=True, default=0),
    ]),
])

RESPONSE = Message("WriteTxnMarkersResponse", 27, "response", "1-2", "1+", [
    F("markers", "[]WritableTxnMarkerResult", fields=[
        F("producer_id", "int64"),
        F("topics", "[]WritableTxnMarkerTopicResult", fields=[
            F("name", "string"),
            F("partitions", "[]WritableTxnMarkerPartitionResult", fields=[
                F("partition_index", "int32"),
                F("error_code", "int16"),
            ]),
        ]),
    ]),
])
