"""Reports: parameters checked, computed from a pool's labels and stored with the versions that made them."""
