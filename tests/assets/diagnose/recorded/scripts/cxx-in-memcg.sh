#!/bin/sh
# CXX for torch's JIT build: run the compiler inside a memory cgroup of 100 MiB, so the kernel's OOM killer
# stops cc1plus as it would on a machine with too little RAM for the build.
CG=/sys/fs/cgroup/memory/envcheck-rec-cc
mkdir -p "$CG" && echo 104857600 > "$CG/memory.limit_in_bytes" && echo $$ > "$CG/cgroup.procs"
exec g++ "$@"
