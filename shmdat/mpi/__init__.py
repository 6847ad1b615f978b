"""shmdat.mpi: mpi4py's API on shmdat's DAT API. `from shmdat.mpi import MPI` (importing
`MPI` initializes the rank); `shmdat run -n N` or `python -m shmdat.mpi -n N` launches a job."""
