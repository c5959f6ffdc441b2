"""The worlds: real state with their own ground-truth ledger (travel, shop, logistics, job shop)
and the real tau2-bench airline domain."""
