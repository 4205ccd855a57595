"""The model endpoints: the client, its transport, retries, capabilities and
records, JSON repair, reply schemas and the offline model."""
