"""Started by mpirun from the compiled hostfile: one rank per host line, an allreduce."""

import socket

from mpi4py import MPI

comm = MPI.COMM_WORLD
total = comm.allreduce(comm.rank + 1, op=MPI.SUM)
print(f"rank {comm.rank}/{comm.size} on {socket.gethostname()}: allreduce = {total}",
      flush=True)
assert comm.size == 2, comm.size
assert total == 3, total
