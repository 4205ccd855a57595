"""Bus handlers of every role, registered with ``bus.handler`` on import."""
