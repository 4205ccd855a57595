"""The real-model tier: the local model and a private cluster on prepared tasks."""
