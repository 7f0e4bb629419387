"""The kind protocol: what every release kind's home gives the registry, the store and the front ends.

:mod:`~.base` is the protocol (:class:`~.base.ReleaseKind`: request reader, plan, wording, verify
recomputation; its mechanisms carry the privacy maps), :mod:`~.snapshot` the one frozen moment of the
ledger every plan is priced from, :mod:`~.settings` the curator's answering rules it records. The kinds
themselves live in their homes and are listed once, in :mod:`dpdesk.engine.registry`.
"""
