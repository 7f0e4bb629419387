"""The window's pages: start, data, requests (with the queue's actions) and audit (with its ledger
table)."""
