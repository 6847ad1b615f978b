"""The shared-memory hardware: segments, rings, doorbells, registration tables
and liveness. It knows bytes, cells, indexes, keys and processes, and no DAT or
verbs names; its errors are those of hw/errors.py, which the API layers
translate at their boundary.
"""
