"""DeleteRecords (API key 21): move partitions' log start offsets forward."""

from ..schema import F, Message

REQUEST = Message("DeleteRecordsRequest", 21, "request", "0-2", "2+", [
    F("topics", "[]DeleteRecordsTopic", fields=[
        F("name", "string"),
        F("partitions", "[]DeleteRecordsPartition", fields=[
            F("partition_index", "int32"),
            F("offset", "int64"),
        ]),
    ]),
    F("timeout_ms", "int32"),
])

RESPONSE = Message("DeleteRecordsResponse", 21, "response", "0-2", "2+", [
    F("throttle_time_ms", "int32"),
    F("topics", "[]DeleteRecordsTopicResult", fields=[
        F("name", "string"),
        F("partitions", "[]DeleteRecordsPartitionResult", fields=[
            F("partition_index", "int32"),
            F("low_watermark", "int64"),
            F("error_code", "int16"),
        ]),
    ]),
])

