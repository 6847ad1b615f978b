"""pyverbs.providers.mlx5: NVIDIA mlx5 direct verbs, EOPNOTSUPP on shm0."""
