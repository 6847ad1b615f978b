"""pyverbs.providers.shm0: shm0's own extension of the verbs API (shm0dv), in the
spirit of mlx5dv: what a program (shmdat's DAT provider) may ask of the shared-memory
device that verbs has no call for."""
