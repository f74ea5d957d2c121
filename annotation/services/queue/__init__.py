"""The rater's queue: leases handed out, labels taken and resolved, answers changed."""
