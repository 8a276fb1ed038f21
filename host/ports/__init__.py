"""What plugins and the host agree on: the principal and its guards, the graph store and embedder ports, the import line format."""
