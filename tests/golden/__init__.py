"""Golden outcomes: the per-seed results of small reference campaigns, pinned in
outcomes.json so that a change to the search's draws fails loudly (`make golden`)."""
