"""The DAT (uDAPL 1.2) provider: IA, PZ, LMR, RMR, EVD, CNO, EP, PSP/RSP/CR, SRQ.

`shmdat` re-exports its public names; the objects are reached through
`shmdat.ia_open` and the handles it returns.
"""
