"""`envcheck fleet`: probe every node of a job through an existing engine (srun, pdsh, ssh), judge each node with
the doctor, and show what differs across nodes. The engine is an adapter that runs one command per node and returns
its output; the diff is a pure function of snapshots."""
