"""Storage: host buffers, allocation groups, roots, spans and identities."""
