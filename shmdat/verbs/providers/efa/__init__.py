"""pyverbs.providers.efa: Amazon EFA direct verbs, EOPNOTSUPP on shm0."""
