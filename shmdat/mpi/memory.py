"""The memory a rank's rendezvous moves data through: the registration cache of user
buffers (what an RDMA read lands in) and the bounce arena (provider memory a rendezvous
send copies into, so the send completes at once and the receiver's read is a copy from
memory it maps). Only shmdat's public DAT API."""

import collections

import numpy as np

CACHE_ENTRIES = 64                  # registrations kept in the cache, idle ones dropped first
CACHE_IDLE_BYTES = 64 << 20         # idle registrations keep their buffers alive: at most this
BOUNCE_BYTES = 32 << 20             # the bounce arena, made at a rank's first rendezvous send
BOUNCE_LIMIT = BOUNCE_BYTES // 4    # larger messages are read from the sender's own buffer
_ALIGN = 64                         # arena regions start on a cache line


class RegistrationCache:
    """LMRs of user buffers, least recently used dropped first once more than
    CACHE_ENTRIES are kept or the idle ones cover more than CACHE_IDLE_BYTES (MPI
    libraries cache registrations the same way: creating one costs tens of microseconds).
    An LMR keeps its buffer alive, so a cached (address, length, privileges) cannot name
    another buffer."""

    def __init__(self, ia, pz):
        self.ia, self.pz = ia, pz
        self.entries = collections.OrderedDict()   # key -> [lmr, users]
        self.users = {}                            # id(lmr) -> key

    def get(self, view, privileges):
        """An LMR covering the byte memoryview `view`, with `privileges`; release() it after."""
        array = np.frombuffer(view, np.uint8)
        key = (array.ctypes.data, len(view), privileges)
        entry = self.entries.get(key)
        if entry is None:
            lmr = self.ia.lmr_create(self.pz, array, privileges)
            entry = self.entries[key] = [lmr, 0]
            self.users[id(lmr)] = key
            self._trim()
        else:
            self.entries.move_to_end(key)
        entry[1] += 1
        return entry[0]

    def release(self, lmr):
        self.entries[self.users[id(lmr)]][1] -= 1
        self._trim()

    def _trim(self):
        entries = self.entries
        idle_bytes = sum(key[1] for key, (_, users) in entries.items() if users == 0)
        if len(entries) <= CACHE_ENTRIES and idle_bytes <= CACHE_IDLE_BYTES:
            return
        for key in [k for k, (_, users) in entries.items() if users == 0]:   # oldest first
            if len(entries) <= CACHE_ENTRIES and idle_bytes <= CACHE_IDLE_BYTES:
                break
            lmr = entries.pop(key)[0]
            del self.users[id(lmr)]
            lmr.free()
            idle_bytes -= key[1]


class BounceArena:
    """Provider memory, made at the first alloc(), handed out as regions in arrival order
    and freed in any order (a rendezvous's FIN frees its region): a ring whose tail moves
    past the regions freed at its front."""

    def __init__(self, ia, pz, privileges):
        self.ia, self.pz, self.privileges = ia, pz, privileges
        self.lmr = self.view = None
        self.head = 0                       # where the next region starts
        self.regions = collections.deque()  # [start, freed], oldest first

    def alloc(self, nbytes):
        """The start of a free region of `nbytes` (at most BOUNCE_LIMIT), or None if the
        arena has no room now."""
        if self.lmr is None:
            self.lmr = self.ia.lmr_create(self.pz, BOUNCE_BYTES, self.privileges)
            self.view = memoryview(self.lmr.buffer)
        regions = self.regions
        if not regions:
            self.head = 0
        head, tail = self.head, regions[0][0] if regions else 0
        if regions and head == tail:        # full: the newest region ends where the oldest starts
            return None
        if head >= tail:                    # free: [head, end) and [0, tail)
            if BOUNCE_BYTES - head >= nbytes:
                start = head
            elif tail >= nbytes:
                start = 0
            else:
                return None
        elif tail - head >= nbytes:         # free: [head, tail)
            start = head
        else:
            return None
        end = start + nbytes
        self.head = end + (-end % _ALIGN)
        regions.append([start, False])
        return start

    def free(self, start):
        """The region alloc() gave at `start` is free again."""
        for region in self.regions:
            if region[0] == start:
                region[1] = True
                break
        regions = self.regions
        while regions and regions[0][1]:
            regions.popleft()
