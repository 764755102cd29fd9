#!/bin/sh
# Open MPI's "rsh" launcher for the braid0/braid1 namespaces (plm_rsh_agent):
# mpirun calls `netns-agent.sh HOST orted ARGS...` the way it would call ssh;
# HOST is a namespace name. The command runs in that network namespace, with
# its own UTS namespace whose hostname is HOST, so Open MPI sees two nodes.
# Like ssh, the remaining words are joined and run by a shell.
host="$1"
shift
exec ip netns exec "$host" unshare --uts sh -c "hostname $host && exec $*"
