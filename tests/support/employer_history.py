"""Ann's employer over time: Acme, then Bluebird, then Cyberdyne; Bluebird is learned last.

The same story drives the REST and the MCP tests of reads at a point in time.
"""

ACME = ("Ann works at Acme", "2019-01-01T00:00:00+00:00")
CYBERDYNE = ("Ann works at Cyberdyne", "2023-01-01T00:00:00+00:00")
# The correction that arrives late: between Acme and Cyberdyne she worked at Bluebird.
BLUEBIRD = ("Ann works at Bluebird", "2021-06-01T00:00:00+00:00")
STORE_ORDER = (ACME, CYBERDYNE, BLUEBIRD)

# (as_of, the employer held then): before any record, then inside each period.
HELD = [
    ("2018-06-01T00:00:00+00:00", None),
    ("2020-01-01T00:00:00+00:00", "Ann works at Acme"),
    ("2022-01-01T00:00:00+00:00", "Ann works at Bluebird"),
    ("2024-01-01T00:00:00+00:00", "Ann works at Cyberdyne"),
    ("2099-01-01T00:00:00+00:00", "Ann works at Cyberdyne"),
]
# Before Bluebird was learned, Acme was believed to hold until Cyberdyne started.
BELIEVED_BEFORE_CORRECTION = [
    ("2022-01-01T00:00:00+00:00", "Ann works at Acme"),
    ("2024-01-01T00:00:00+00:00", "Ann works at Cyberdyne"),
]
