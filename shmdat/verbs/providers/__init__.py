"""pyverbs.providers: the vendor extensions of pyverbs (mlx5, efa). shm0 is
neither vendor's device, so each extension's objects are EOPNOTSUPP; the modules
exist, with the names rdma-core's tests import, for programs that load them
and then ask the device (its vendor_id) whether they apply."""
