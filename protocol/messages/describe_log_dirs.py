"""DescribeLogDirs (API key 35): the log directories and the partitions' sizes in them.

v5 (KIP-1066) says whether each log directory is cordoned; ours never are."""

from ..schema import F, Message

REQUEST = Message("DescribeLogDirsRequest", 35, "request", "1-5", "2+", [
    F("topics", "[]DescribableLogDirTopic", nullable="0+", fields=[
        F("topic", "string"),
        F("partitions", "[]int32"),
    ]),
])

RESPONSE = Message("DescribeLogDirsResponse", 35, "response", "1-5", "2+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16", "3+", ignorable=True),
    F("results", "[]DescribeLogDirsResult", fields=[
        F("error_code", "int16"),
        F("log_dir", "string"),
        F("topics", "[]DescribeLogDirsTopic", fields=[
            F("name", "string"),
            F("partitions", "[]DescribeLogDirsPartition", fields=[
                F("partition_index", "int32"),
                F("partition_size", "int64"),
                F("offset_lag", "int64"),
                F("is_future_key", "bool"),
            ]),
        ]),
        F("total_bytes", "int64", "4+", default=-1, ignorable=True),
        F("usable_bytes", "int64", "4+", default=-1, ignorable=True),
        F("is_cordoned", "bool", "5+", default=False, ignorable=True),
    ]),
])

