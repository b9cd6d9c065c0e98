"""KIP-848 server-side assignors, ``uniform`` and ``range``, reproducing Apache Kafka's own."""

from coordinator.consumer.assignors.range import RangeAssignor
from coordinator.consumer.assignors.spec import (Assignor, GroupAssignment, MemberSpec,
                                                 PartitionAssignorError, TopicSpec)
from coordinator.consumer.assignors.uniform import UniformAssignor

#: The assignors a consumer group may name, by name (Kafka's group.consumer.assignors default).
ASSIGNORS: dict[str, Assignor] = {"uniform": UniformAssignor(), "range": RangeAssignor()}

__all__ = ["ASSIGNORS", "Assignor", "GroupAssignment", "MemberSpec", "PartitionAssignorError",
           "RangeAssignor", "TopicSpec", "UniformAssignor"]
