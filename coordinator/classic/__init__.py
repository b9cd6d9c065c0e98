"""The classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup): its groups and
states, its rebalance machinery and its request handlers."""
