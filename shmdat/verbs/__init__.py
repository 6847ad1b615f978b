"""shmdat.verbs: the shared-memory hardware as an RDMA device with rdma-core's
pyverbs API, module for module (device, pd, mr, cq, qp, srq, wr, addr, cmid,
pyverbs_error, libibverbs_enums, librdmacm_enums).

`python -m shmdat.verbs app.py` (or `shmdat run-verbs app.py`) runs a pyverbs
program unchanged: `import pyverbs...` resolves to this package there and in
the processes it starts.
"""
