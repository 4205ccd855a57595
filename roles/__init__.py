"""The pure core of artoo: contracts, roles and rules, free of Django and Celery."""
