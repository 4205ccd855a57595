"""Developer tooling: set-up and launch, clusters of real processes, the local model."""
